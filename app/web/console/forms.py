"""The console's forms. They check shape only (a number is a number); the services own the rules."""

from __future__ import annotations

from datetime import UTC, datetime

from flask_wtf import FlaskForm
from flask_wtf.file import FileField, FileRequired
from wtforms import BooleanField, HiddenField, SelectField, StringField, TextAreaField
from wtforms.fields import Field
from wtforms.fields.choices import SelectChoice
from wtforms.validators import DataRequired, Length, Optional, Regexp, ValidationError
from wtforms.widgets import TextInput

from app.models import FEEDBACK_POLICIES, as_utc
from app.services.catalog import phases
from app.services.errors import ServiceError


class SignOutForm(FlaskForm):
    email = StringField("Email of the user", validators=[DataRequired(), Length(max=254)])


class QuotaField(Field):
    """A whole number, or blank / "unlimited" for no limit (None). Signs are left to the service, which
    names the field when a number is out of range."""

    widget = TextInput()

    def __init__(self, label=None, validators=None, *, allow_unlimited: bool = True, **kwargs):
        super().__init__(label, validators, **kwargs)
        self.allow_unlimited = allow_unlimited
        self.raw = ""

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else str(self.data)

    def process_formdata(self, valuelist):
        self.raw = (valuelist[0] if valuelist else "").strip()
        if not self.raw or self.raw.lower() in {"unlimited", "none"}:
            self.data = None
            if not self.allow_unlimited:
                raise ValueError("enter a whole number (this one cannot be unlimited)")
            return
        try:
            self.data = int(self.raw)
        except ValueError as exc:
            self.data = None
            raise ValueError(f"{self.raw!r} is not a whole number") from exc


class FractionField(Field):
    """A number such as 0.5, or blank for none (0). The range is the service's rule."""

    widget = TextInput()
    data: float | None

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        return "" if self.data is None else f"{self.data:g}"

    def process_formdata(self, valuelist):
        raw = (valuelist[0] if valuelist else "").strip()
        if not raw:
            self.data = 0.0
            return
        try:
            self.data = float(raw)
        except ValueError as exc:
            self.data = None
            raise ValueError(f"{raw[:40]!r} is not a number (e.g. 0.5)") from exc


class PolicyForm(FlaskForm):
    per_day = QuotaField("Per day (UTC)", render_kw={"inputmode": "numeric", "placeholder": "unlimited"})
    per_month = QuotaField("Per month", render_kw={"inputmode": "numeric", "placeholder": "unlimited"})
    total = QuotaField("In total", render_kw={"inputmode": "numeric", "placeholder": "unlimited"})
    rejected_per_day = QuotaField(
        "Rejected files per day (a separate cap)",
        allow_unlimited=False,
        render_kw={"inputmode": "numeric", "required": True},
    )
    feedback = SelectField(
        "Feedback on a hidden split",
        choices=[
            SelectChoice("full", "full: exact scores to the team"),
            SelectChoice("ladder", "ladder: a score only when it beats the team's best"),
            SelectChoice("none", "none: held until revealed"),
        ],
        validators=[DataRequired()],
    )
    is_open = BooleanField("Open to submissions")
    sealed_fraction = FractionField(
        "Sealed part: share of a hidden split's groups no feedback touches (0–0.9)",
        render_kw={"inputmode": "decimal", "placeholder": "none"},
    )

    def validate_feedback(self, field):
        if field.data not in FEEDBACK_POLICIES:
            raise ValidationError(f"choose one of {', '.join(FEEDBACK_POLICIES)}")


class MomentField(Field):
    """A date and time in UTC, typed and shown on the 24-hour clock ('2027-02-26 23:59'), or blank for none.
    Read with the command line's rule (services/catalog/phases.py parse_moment, which names what it expects).

    A text field, not a datetime-local one: Chromium draws that in the browser's locale ('02/26/2027, 11:' on a
    12-hour clock, its minutes cut, on a page that says UTC: issue 34)."""

    widget = TextInput()
    data: datetime | None

    def __init__(self, label=None, validators=None, **kwargs):
        render_kw = {
            "placeholder": "YYYY-MM-DD HH:MM",
            "pattern": r"\d{4}-\d{2}-\d{2}([ T]\d{2}:\d{2}(:\d{2})?)?",
            "size": 19,
            "autocomplete": "off",
            "spellcheck": "false",
            **kwargs.pop("render_kw", {}),
        }
        super().__init__(label, validators, render_kw=render_kw, **kwargs)

    def _value(self) -> str:
        if self.raw_data:
            return self.raw_data[0]
        if self.data is None:
            return ""
        moment = as_utc(self.data).astimezone(UTC)
        return moment.strftime("%Y-%m-%d %H:%M:%S" if moment.second else "%Y-%m-%d %H:%M")

    def process_formdata(self, valuelist):
        raw = (valuelist[0] if valuelist else "").strip()
        try:
            self.data = phases.parse_moment(raw, self.name)
        except ServiceError as exc:
            self.data = None
            raise ValueError(exc.message) from exc


class PhaseForm(FlaskForm):
    """When a split takes uploads; a blank field clears its bound."""

    opens_at = MomentField("Uploads open (UTC)")
    closes_at = MomentField("Uploads close (UTC)")


class SplitForm(FlaskForm):
    benchmark = SelectField("Benchmark", validators=[DataRequired()])
    slug = StringField(
        "Split slug",
        validators=[DataRequired(), Length(max=64)],
        render_kw={"placeholder": "e.g. test-u", "maxlength": 64, "required": True, "pattern": "[a-z0-9][a-z0-9-]*"},
    )
    name = StringField(
        "Display name",
        validators=[Optional(), Length(max=120)],
        render_kw={"placeholder": "e.g. Test-U", "maxlength": 120},
    )
    gold = FileField("Gold file (JSON lines)", validators=[FileRequired("Choose the split's gold file.")])
    annotations = FileField("Category annotations (optional, NLVR2 format)")
    choices = FileField("Choices file (optional, GQA's official {tier}_choices.json)")
    subset_field = StringField(
        "Subset field (optional)",
        validators=[Optional(), Length(max=64)],
        render_kw={"placeholder": "e.g. region", "maxlength": 64},
    )
    hidden = BooleanField("Hidden test split: labels and per-example results never leave the server")


class SubsetForm(FlaskForm):
    name = StringField(
        "Subset name",
        validators=[DataRequired(), Length(max=120)],
        render_kw={"placeholder": "e.g. hard", "maxlength": 120, "required": True},
    )
    ids = FileField(
        "Identifier file (one a line, or JSON lines)", validators=[FileRequired("Choose a file of identifiers.")]
    )


class ReferenceForm(FlaskForm):
    """A reference row (a baseline or human performance from a paper); the service checks the scores and date.
    Its ids are its own: the split page has a subset form with a name field too."""

    name = StringField(
        "Name",
        id="reference-name",
        validators=[DataRequired(), Length(max=200)],
        render_kw={"placeholder": "e.g. Human (Suhr et al. 2019)", "maxlength": 200, "required": True},
    )
    scores = TextAreaField(
        "Scores (JSON, percentages)",
        id="reference-scores",
        validators=[DataRequired()],
        render_kw={"placeholder": '{"all": {"accuracy": 96.1}}', "rows": 2, "required": True},
    )
    source = StringField(
        "Source (http or https address, optional)",
        id="reference-source",
        validators=[Optional(), Length(max=500)],
        render_kw={"placeholder": "https://arxiv.org/abs/...", "maxlength": 500},
    )
    date = StringField(
        "Published on (YYYY-MM-DD, optional)",
        id="reference-date",
        validators=[Optional(), Length(max=10)],
        render_kw={"placeholder": "e.g. 2019-07-28", "maxlength": 10, "pattern": r"\d{4}-\d{2}-\d{2}"},
    )


def _not_empty(form, field) -> None:
    """An empty file says nothing a bundle's reader could name; say so here, beside the field."""
    stream = field.data.stream
    stream.seek(0, 2)
    empty = stream.tell() == 0
    stream.seek(0)
    if empty:
        raise ValidationError("the file is empty: choose the bundle's .zip")


class BundleForm(FlaskForm):
    """A bundle (.zip) for a dry run."""

    archive = FileField(
        "Bundle (.zip of benchmark.yaml and its files)",
        validators=[FileRequired("Choose the bundle's .zip."), _not_empty],
    )


class ApplyBundleForm(FlaskForm):
    """The reviewed bundle again (a browser cannot keep a chosen file), the digest of the one reviewed, and the
    reason a changed gold file needs."""

    archive = FileField(
        "The same bundle again (.zip)", validators=[FileRequired("Choose the bundle's .zip again."), _not_empty]
    )
    reason = TextAreaField(
        "Reason (needed when a gold file changes: the label correction's note)",
        validators=[Optional(), Length(max=2000)],
        render_kw={"rows": 2, "maxlength": 2000, "placeholder": "e.g. 14 labels fixed after the annotators' review"},
    )
    reviewed_sha256 = HiddenField(
        validators=[
            DataRequired("review the bundle's dry run first"),
            Regexp(r"^[0-9a-f]{64}$", message="not a sha256"),
        ]
    )


class HideForm(FlaskForm):
    reason = StringField(
        "Reason",
        validators=[DataRequired(), Length(max=2000)],
        render_kw={"maxlength": 2000, "required": True, "placeholder": "why it is hidden"},
    )


class VerifyForm(FlaskForm):
    note = StringField(
        "Note",
        validators=[DataRequired(), Length(max=500)],
        render_kw={"maxlength": 500, "required": True, "placeholder": "what was checked"},
    )
    url = StringField(
        "Link (optional)",
        validators=[Optional(), Length(max=2000)],
        render_kw={"maxlength": 2000, "placeholder": "https://… (optional)", "inputmode": "url"},
    )


class ButtonForm(FlaskForm):
    """A POST-only button: nothing but the CSRF token."""
