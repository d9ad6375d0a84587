"""Flask-WTF forms for the account pages. They check shape only; the services own the rules."""
from __future__ import annotations

from flask_wtf import FlaskForm
from wtforms import EmailField, HiddenField, PasswordField, StringField
from wtforms.validators import DataRequired, Length


class RegisterForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired(), Length(max=254)],
                       render_kw={"autocomplete": "email", "required": True})
    password = PasswordField("Password", validators=[DataRequired()],
                             render_kw={"autocomplete": "new-password", "minlength": 8, "required": True})
    next = HiddenField()


class LoginForm(FlaskForm):
    email = EmailField("Email", validators=[DataRequired()],
                       render_kw={"autocomplete": "username", "required": True})
    password = PasswordField("Password", validators=[DataRequired()],
                             render_kw={"autocomplete": "current-password", "required": True})
    next = HiddenField()


class TeamForm(FlaskForm):
    name = StringField("Team name", validators=[DataRequired(), Length(max=80)],
                       render_kw={"maxlength": 80, "required": True})


class TokenForm(FlaskForm):
    name = StringField("Token name", validators=[DataRequired(), Length(max=80)],
                       render_kw={"maxlength": 80, "required": True, "placeholder": "e.g. laptop upload script"})


class ConfirmForm(FlaskForm):
    """A POST-only button: nothing but the CSRF token."""
