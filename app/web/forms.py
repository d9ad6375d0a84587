"""Flask-WTF forms for the pages. They check shape only; the services own the rules."""

from __future__ import annotations

from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import BooleanField, EmailField, HiddenField, PasswordField, SelectField, StringField, TextAreaField
from wtforms.fields.choices import SelectChoice
from wtforms.validators import AnyOf, DataRequired, Length, Optional


class RegisterForm(FlaskForm):
    email = EmailField(
        "Email", validators=[DataRequired(), Length(max=254)], render_kw={"autocomplete": "email", "required": True}
    )
    password = PasswordField(
        "Password",
        validators=[DataRequired()],
        render_kw={"autocomplete": "new-password", "minlength": 8, "required": True},
    )
    next = HiddenField()


class LoginForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired()], render_kw={"autocomplete": "username", "required": True})
    password = PasswordField(
        "Password", validators=[DataRequired()], render_kw={"autocomplete": "current-password", "required": True}
    )
    next = HiddenField()


class PasswordForm(FlaskForm):
    current_password = PasswordField(
        "Current password",
        validators=[DataRequired()],
        render_kw={"autocomplete": "current-password", "required": True},
    )
    new_password = PasswordField(
        "New password",
        validators=[DataRequired()],
        render_kw={"autocomplete": "new-password", "minlength": 8, "required": True},
    )


class TeamForm(FlaskForm):
    name = StringField(
        "Team name", validators=[DataRequired(), Length(max=80)], render_kw={"maxlength": 80, "required": True}
    )


class TokenForm(FlaskForm):
    name = StringField(
        "Token name",
        validators=[DataRequired(), Length(max=80)],
        render_kw={"maxlength": 80, "required": True, "placeholder": "e.g. laptop upload script"},
    )
    expires_in_days = SelectField(
        "Expires",
        choices=[
            SelectChoice("", "never (until revoked)"),
            SelectChoice("7", "in 7 days"),
            SelectChoice("30", "in 30 days"),
            SelectChoice("90", "in 90 days"),
            SelectChoice("365", "in a year"),
        ],
        default="",
    )


class ForgotPasswordForm(FlaskForm):
    email = EmailField(
        "Email", validators=[DataRequired(), Length(max=254)], render_kw={"autocomplete": "email", "required": True}
    )


class ResetPasswordForm(FlaskForm):
    new_password = PasswordField(
        "New password",
        validators=[DataRequired()],
        render_kw={"autocomplete": "new-password", "minlength": 8, "required": True},
    )
    revoke_tokens = BooleanField("Also revoke every API token of the account")


class NotificationsForm(FlaskForm):
    notify_reveal = BooleanField("Mail me when a blind-test board my team uploaded to is revealed")
    notify_rescore = BooleanField("Mail me when labels are corrected and a submission's score moves")
    notify_invite = BooleanField("Mail me invitations to join a team")


class ConfirmForm(FlaskForm):
    """A POST-only button: nothing but the CSRF token."""


class ShownForm(FlaskForm):
    """A member's choice to be named on the team's public page: the button sends what it offers ("yes"/"no")."""

    shown = HiddenField(validators=[AnyOf(("yes", "no"))])

    @property
    def wanted(self) -> bool:
        return self.shown.data == "yes"


class UploadForm(FlaskForm):
    team = SelectField("Team", validators=[DataRequired()])
    split = SelectField("Benchmark and split", validators=[DataRequired()])
    file = FileField("Prediction file", validators=[FileRequired("Choose a prediction file.")])
    model_name = StringField("Model name", validators=[DataRequired(), Length(max=200)])
    description = TextAreaField("Description", validators=[Optional(), Length(max=5000)])
    paper_url = StringField("Paper URL", validators=[Optional(), Length(max=2000)])
    code_url = StringField("Code URL", validators=[Optional(), Length(max=2000)])
    anonymous = BooleanField("Show the entry anonymously (without the team name)")


class PublishForm(FlaskForm):
    description = TextAreaField("Description", validators=[Optional(), Length(max=5000)])
    paper_url = StringField("Paper URL", validators=[Optional(), Length(max=2000)])
    code_url = StringField("Code URL", validators=[Optional(), Length(max=2000)])


class HideForm(FlaskForm):
    reason = StringField("Reason", validators=[DataRequired(), Length(max=2000)])
