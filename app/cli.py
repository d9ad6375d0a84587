"""Maintainers' commands: `flask --app wsgi benchmarks|splits|subsets|labels|evaluate|demo|users|teams|tokens|
references ...`.

These names and options are an interface that scripts rely on. Errors exit with code 2.
"""

from __future__ import annotations

import json
import logging
from contextlib import contextmanager
from pathlib import Path

import click
from flask import Flask, current_app
from flask.cli import AppGroup, with_appcontext

from app.evaluation import TASK_TYPES
from app.services import catalog
from app.services.boards import power
from app.services.catalog import phases, references
from app.services.errors import ServiceError
from app.services.intake import submissions
from app.services.jobs import console as jobs_console
from app.services.jobs import transport
from app.services.maintenance import backups, demo, label_audits, maintainer_actions
from app.services.people import accounts, teams, unconfirmed
from app.services.storage import upload_store


class CliError(click.ClickException):
    exit_code = 2


def _read(path: str, what: str) -> bytes:
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CliError(f"cannot read {what} {path!r}: {exc.strerror}") from exc


@contextmanager
def _refusals():
    """A service's refusal becomes the command's error: exit code 2 with the message the API gives."""
    try:
        yield
    except ServiceError as exc:
        raise _fail(exc) from exc


def _fail(exc: ServiceError) -> CliError:
    lines = [exc.message] + [
        f"line {d['line']}: {d['message']}" if d["line"] and not d["message"].startswith("line ") else d["message"]
        for d in exc.details()
    ]
    return CliError("\n".join(lines))


benchmarks_cli = AppGroup("benchmarks", help="Add and list benchmarks.")
splits_cli = AppGroup("splits", help="Add and list splits (gold files).")
subsets_cli = AppGroup("subsets", help="Add subsets of a split.")


@benchmarks_cli.command("add")
@click.argument("slug")
@click.option("--task", "task_type", required=True, type=click.Choice(list(TASK_TYPES)), help="Task type.")
@click.option("--name", required=True, help="Display name, e.g. NLVR2.")
@click.option("--description", default="", help="A sentence or two about the benchmark.")
@click.option("--paper-url", default=None, help="Link to the benchmark's paper.")
def benchmarks_add(slug, task_type, name, description, paper_url):
    """Add a benchmark SLUG of a task type."""
    with _refusals():
        benchmark = maintainer_actions.add_benchmark(None, slug, task_type, name, description, paper_url, via="cli")
    click.echo(f"added benchmark {benchmark.slug} ({benchmark.task_type})")


@benchmarks_cli.command("list")
def benchmarks_list():
    """List benchmarks."""
    for benchmark in catalog.list_benchmarks():
        click.echo(f"{benchmark.slug}\t{benchmark.task_type}\t{benchmark.name}")


@splits_cli.command("add")
@click.argument("benchmark")
@click.argument("split")
@click.option("--labels", required=True, type=click.Path(dir_okay=False), help="Gold file (JSON lines).")
@click.option("--hidden", is_flag=True, help="A blind test split: labels never leave the server.")
@click.option("--name", default=None, help='Display name, e.g. "Test-U".')
@click.option("--annotations", type=click.Path(dir_okay=False), help="Category annotation file (NLVR2 format).")
@click.option("--subset-field", default=None, help="A gold-file field whose values define subsets, e.g. region.")
@click.option(
    "--choices",
    type=click.Path(dir_okay=False),
    help="GQA: the official choices file ({tier}_choices.json), for validity and plausibility.",
)
def splits_add(benchmark, split, labels, hidden, name, annotations, subset_field, choices):
    """Import the gold file of SPLIT of BENCHMARK into the hidden-labels folder."""
    gold = _read(labels, "labels file")
    notes = _read(annotations, "annotations file") if annotations else None
    choices_data = _read(choices, "choices file") if choices else None
    with _refusals():
        added = maintainer_actions.add_split(
            None,
            benchmark,
            split,
            gold,
            hidden=hidden,
            name=name,
            annotations=notes,
            subset_field=subset_field,
            choices=choices_data,
            via="cli",
        )
    subsets = ", ".join(f"{s.name} ({s.size})" for s in added.subsets) or "none"
    with_choices = "; with a choices file (validity, plausibility)" if added.choices_sha256 else ""
    click.echo(
        f"added split {benchmark}/{added.slug} ({'hidden' if added.hidden else 'public'}): "
        f"{added.example_count} examples, sha256 {added.gold_sha256}; subsets: {subsets}{with_choices}"
    )


def _quota(value: str | None, option: str):
    if value is None:
        return catalog.UNSET
    if value.lower() in {"none", "unlimited"}:
        return None
    try:
        number = int(value)
    except ValueError as exc:
        raise CliError(f"{option} must be a whole number or 'none', got {value!r}") from exc
    if number < 0:
        raise CliError(f"{option} must be >= 0, got {number}")
    return number


@splits_cli.command("policy")
@click.argument("benchmark")
@click.argument("split")
@click.option("--per-day", help="Scored submissions a team may make a day (UTC), or 'none'.")
@click.option("--per-month", help="... a calendar month, or 'none'.")
@click.option("--total", help="... in all, or 'none'.")
@click.option("--rejected-per-day", help="Invalid files a team may send a day (a separate cap).")
@click.option("--feedback", type=click.Choice(["full", "ladder", "none"]), help="What teams see on a hidden split.")
@click.option("--open/--closed", "is_open", default=None, help="Accept submissions or not.")
@click.option("--default", "pin", is_flag=True, help="Make SPLIT the benchmark's landing page.")
@click.option(
    "--sealed",
    "sealed_fraction",
    type=float,
    default=None,
    help="Seal this share (0-0.9; 0 removes it) of a hidden split's groups: no feedback touches them "
    "until the reveal. Only before the split's first scored submission.",
)
def splits_policy(
    benchmark, split, per_day, per_month, total, rejected_per_day, feedback, is_open, pin, sealed_fraction
):
    """Set the submission policy of SPLIT of BENCHMARK (quotas, feedback, open/closed, sealed part) or pin it
    as the benchmark's landing split (--default)."""
    policy_given = any(
        v is not None for v in (per_day, per_month, total, rejected_per_day, feedback, is_open, sealed_fraction)
    )
    with _refusals():
        if pin:
            updated = maintainer_actions.pin_default_split(None, benchmark, split, via="cli")
        if policy_given or not pin:
            updated = maintainer_actions.set_policy(
                None,
                benchmark,
                split,
                per_day=_quota(per_day, "--per-day"),
                per_month=_quota(per_month, "--per-month"),
                total=_quota(total, "--total"),
                rejected_per_day=_quota(rejected_per_day, "--rejected-per-day"),
                feedback=feedback,
                is_open=is_open,
                sealed_fraction=sealed_fraction,
                via="cli",
            )
    click.echo(f"{benchmark}/{updated.slug}: {_policy_text(updated)}" + ("; the landing split" if pin else ""))


def _policy_text(split) -> str:
    def limit(value):
        return "unlimited" if value is None else str(value)

    return (
        f"per day {limit(split.per_day)}, per month {limit(split.per_month)}, total {limit(split.total)}, "
        f"rejected per day {split.rejected_per_day}, feedback {split.feedback}, "
        f"{'open' if split.is_open else 'closed'}"
        + (f", sealed part {split.sealed_fraction:g} of its groups" if split.sealed_fraction else "")
    )


def _moment(_ctx, param, value):
    """--opens / --closes read before anything else, so that a malformed one names its option (exit code 2);
    'none' clears the bound (None), leaving the option out keeps it (UNSET)."""
    if value is None:
        return catalog.UNSET
    try:
        return phases.parse_moment(value, param.opts[0])
    except ServiceError as exc:
        raise click.BadParameter(exc.message, param=param) from exc


@splits_cli.command("phase")
@click.argument("benchmark")
@click.argument("split")
@click.option(
    "--opens",
    callback=_moment,
    help="When uploads open: ISO 8601 with a time zone, e.g. 2026-12-01T00:00Z (without a zone the time is UTC; "
    "a date alone is its midnight UTC), or 'none' to clear it.",
)
@click.option(
    "--closes",
    callback=_moment,
    help="When uploads close (after --opens), as --opens; the board keeps a final view as it stood then. "
    "'none' clears it.",
)
def splits_phase(benchmark, split, opens, closes):
    """Set when SPLIT of BENCHMARK takes uploads (uploads outside are refused, 409); without options, show it."""
    with _refusals():
        if opens is catalog.UNSET and closes is catalog.UNSET:
            updated = catalog.get_split(benchmark, split)
        else:
            updated = maintainer_actions.set_phase(None, benchmark, split, opens_at=opens, closes_at=closes, via="cli")
    click.echo(f"{benchmark}/{updated.slug}: {_phase_text(updated)}")


def _phase_text(split) -> str:
    phase = phases.of(split)
    opens = f"opens {phases.moment_text(phase.opens_at)}" if phase.opens_at else "no opening time"
    closes = f"closes {phases.moment_text(phase.closes_at)}" if phase.closes_at else "no closing time"
    now = {phases.OPEN: "open now", phases.NOT_OPEN_YET: "not open yet", phases.CLOSED: "closed"}[phase.state]
    return f"{opens}, {closes} ({now})"


@splits_cli.command("reveal")
@click.argument("benchmark")
@click.argument("split")
def splits_reveal(benchmark, split):
    """Reveal hidden SPLIT of BENCHMARK (after a challenge ends): its board shows every published entry's
    scores, and a sealed part's figures and gaps; this cannot be undone."""
    with _refusals():
        revealed = maintainer_actions.reveal_split(None, benchmark, split, via="cli")
    click.echo(f"{benchmark}/{revealed.slug} revealed on {revealed.revealed_at:%Y-%m-%d %H:%M} UTC")


@splits_cli.command("power")
@click.argument("benchmark")
@click.argument("split")
@click.option("--entries", required=True, type=int, help="Entries the board would rank (2 or more).")
@click.option(
    "--discordance",
    type=float,
    default=None,
    help="Share of the units two close entries disagree on (default: measured on the current board, else 0.25).",
)
def splits_power(benchmark, split, entries, discordance):
    """How much a board of N entries on SPLIT can tell apart: the smallest difference, in points, that its pair
    decisions (one test per pair, Holm over all pairs) detect with 80% power; for planning a split."""
    with _refusals():
        found = power.plan(benchmark, split, entries, discordance)
    if found.measured_on is not None:
        source = f"spread measured between neighbours of the current board's {found.measured_on:,} entries"
    else:
        given = "given" if discordance is not None else "assumed"
        source = f"{given}: close entries disagree on {found.discordance:.0%} of the units"
    click.echo(
        f"{found.benchmark}/{found.split}: {found.entries:,} entries ({found.pairs:,} pairs) on {found.units:,} units\n"
        f"entries closer than {found.resolution:.1f} points are usually tied (80% power, alpha 0.05 over all "
        f"pairs; {source})"
    )


@splits_cli.command("list")
def splits_list():
    """List splits with their size, visibility and policy."""
    rows = catalog.list_splits()
    if not rows:
        click.echo("no splits yet")
        return
    click.echo("benchmark\tsplit\tname\tvisibility\texamples\tsubsets\tfeedback\topen\tsealed\tsha256\trisk")
    for split in rows:
        risks = catalog.risks(split)
        click.echo(
            f"{split.benchmark.slug}\t{split.slug}\t{split.name}\t{'hidden' if split.hidden else 'public'}\t"
            f"{split.example_count}\t{len(split.subsets)}\t{split.feedback}\t{'open' if split.is_open else 'closed'}\t"
            f"{_sealed_part(split)}\t{split.gold_sha256[:12]}\t{'AT RISK: ' + '; '.join(risks) if risks else '-'}"
        )


def _sealed_part(split) -> str:
    """The sealed part's share of the groups, and whether the split's reveal has opened it."""
    if not split.sealed_fraction:
        return "-"
    return f"{split.sealed_fraction:g}" + (" (revealed)" if split.revealed_at else " (sealed)")


@subsets_cli.command("add")
@click.argument("benchmark")
@click.argument("split")
@click.argument("name")
@click.option("--ids", required=True, type=click.Path(dir_okay=False), help="File of identifiers, one a line.")
def subsets_add(benchmark, split, name, ids):
    """Add subset NAME to SPLIT from a file of identifiers; stored submissions are rescored on it."""
    data = _read(ids, "identifier file")
    with _refusals():
        subset, rescored = maintainer_actions.add_subset(None, benchmark, split, name, data, via="cli")
    click.echo(f"added subset {subset.name} ({subset.size} examples); rescored {rescored} submissions")


@click.command("evaluate")
@with_appcontext
@click.argument("benchmark")
@click.argument("split")
@click.argument("predictions", type=click.Path(dir_okay=False))
def evaluate(benchmark, split, predictions):
    """Score PREDICTIONS against SPLIT without storing anything; print JSON scores."""
    data = _read(predictions, "predictions file")
    with _refusals():
        scores = submissions.evaluate(benchmark, split, data)
    click.echo(json.dumps(scores, indent=2))


@click.command("demo")
@with_appcontext
def demo_command():
    """Create demo benchmarks, teams and scored submissions (idempotent)."""
    with click.progressbar(length=sum(len(b.splits) for b in demo.BENCHMARKS), label="demo splits") as bar:
        created = demo.load_demo(progress=lambda _name: bar.update(1))
    click.echo("created " + ", ".join(f"{n} {what}" for what, n in created.items()))
    for email, password, admin, team in demo.DEMO_USERS:
        role = "maintainer" if admin else f"member of {team}"
        click.echo(f"demo login ({role}): {email} / {password}")


users_cli = AppGroup("users", help="Create user accounts; sign a user out everywhere; remove accounts never confirmed.")
teams_cli = AppGroup("teams", help="Create teams.")
tokens_cli = AppGroup("tokens", help="Create API tokens.")


def _user(email: str):
    user = accounts.get_user_by_email(email)
    if user is None:
        raise CliError(f"no user with email {email!r}")
    return user


@users_cli.command("create")
@click.argument("email")
@click.option(
    "--password",
    prompt=True,
    hide_input=True,
    confirmation_prompt=True,
    help="At least 8 characters; asked for when not given.",
)
@click.option("--admin", is_flag=True, help="Make the user a maintainer.")
def users_create(email, password, admin):
    """Create a user account for EMAIL."""
    with _refusals():
        user = maintainer_actions.create_user(None, email, password, admin=admin, via="cli")
    click.echo(f"created user {user.email}{' (admin)' if user.is_admin else ''}")


@users_cli.command("sign-out")
@click.argument("email")
def users_sign_out(email):
    """End every session of EMAIL at once, on every server (API tokens are revoked separately)."""
    with _refusals():
        user = maintainer_actions.sign_out_everywhere(None, email, via="cli")
    click.echo(f"signed {user.email} out everywhere")


@users_cli.command("prune-unconfirmed")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
def users_prune_unconfirmed(dry_run):
    """Remove accounts whose address was not confirmed within 7 days of registering, and the teams they hold
    alone (no submission, no other member): their addresses and team names are free again. An account with a
    submission is kept. Each removal is in the audit log; run daily (serving/systemd/holdout-prune.timer)."""
    with _refusals():
        pruned = unconfirmed.prune(dry_run=dry_run)
    done = "would remove" if dry_run else "removed"
    for name in pruned.teams:
        click.echo(f"{done} team {name!r}")
    for email in pruned.accounts:
        click.echo(f"{done} account {email}")
    for email in pruned.kept:
        click.echo(f"kept account {email}: it has submissions")
    click.echo(f"{done} {len(pruned.teams)} teams and {len(pruned.accounts)} accounts never confirmed")


@teams_cli.command("create")
@click.argument("name")
@click.option("--member", "emails", multiple=True, help="Email of an existing user to add; repeatable.")
@click.option(
    "--allow-over-cap",
    is_flag=True,
    help="Add members already in MAX_TEAMS_PER_ACCOUNT teams anyway (recorded in the audit log).",
)
def teams_create(name, emails, allow_over_cap):
    """Create team NAME with the given members.

    The team has no creator (it counts against nobody's teams created a day); a member already in
    MAX_TEAMS_PER_ACCOUNT teams is refused unless --allow-over-cap is given."""
    users = [_user(email) for email in emails]  # all checked before anything is created
    with _refusals():
        try:
            team = maintainer_actions.create_team(None, name, users, via="cli", over_cap=allow_over_cap)
        except teams.TeamCapReached as exc:
            raise CliError(f"{exc.message}; --allow-over-cap adds them anyway") from exc
    click.echo(f"created team {team.name} with {len(users)} member{'' if len(users) == 1 else 's'}")


@tokens_cli.command("create")
@click.argument("email")
@click.option("--name", default="cli", show_default=True, help="A label to recognise the token by.")
def tokens_create(email, name):
    """Create an API token for EMAIL; the token is the last line of output and is not shown again."""
    with _refusals():
        token, plaintext = maintainer_actions.create_token(None, _user(email), name, via="cli")
    click.echo(f"created token {token.name!r} ({token.prefix}...) for {token.user.email}; it is shown only once:")
    click.echo(plaintext)


references_cli = AppGroup("references", help="Reference rows (baselines, human performance) on leaderboards.")


@references_cli.command("add")
@click.argument("benchmark")
@click.argument("split")
@click.option("--name", required=True, help='What the row is, e.g. "Human" or "Majority class".')
@click.option(
    "--scores",
    "scores_json",
    required=True,
    help='Percentages as JSON, e.g. \'{"all": {"accuracy": 96.1, "consistency": 89.0}}\'.',
)
@click.option("--source", "source_url", default=None, help="Where the figures come from (http(s) URL).")
@click.option(
    "--date",
    "published_on",
    default=None,
    callback=lambda _ctx, _param, value: _reference_date(value),
    help="The day the figures were published (the paper's date), YYYY-MM-DD.",
)
def references_add(benchmark, split, name, scores_json, source_url, published_on):
    """Add a reference row to the leaderboard of SPLIT of BENCHMARK (shown where its score falls, never ranked)."""
    with _refusals():
        reference = references.add_reference(benchmark, split, name, scores_json, source_url, published_on=published_on)
    dated = f", dated {reference.published_on}" if reference.published_on else ""
    click.echo(f"added reference {reference.id} {reference.name!r} to {benchmark}/{split}{dated}: {reference.scores}")


def _reference_date(value):
    """--date checked before anything else, so that its error names the option (click: exit code 2)."""
    try:
        return references.parse_date(value)
    except ServiceError as exc:
        raise click.BadParameter(exc.message, param_hint="'--date'") from exc


@references_cli.command("list")
@click.argument("benchmark")
@click.argument("split")
def references_list(benchmark, split):
    """List the reference rows of SPLIT of BENCHMARK."""
    with _refusals():
        rows = references.list_references(benchmark, split)
    if not rows:
        click.echo("no reference rows")
    for reference in rows:
        day = reference.published_on.isoformat() if reference.published_on else ""
        click.echo(f"{reference.id}\t{reference.name}\t{reference.scores}\t{reference.source_url or ''}\t{day}")


@references_cli.command("remove")
@click.argument("benchmark")
@click.argument("split")
@click.argument("reference_id", type=int)
def references_remove(benchmark, split, reference_id):
    """Remove reference row REFERENCE_ID (see `references list`) from SPLIT of BENCHMARK."""
    with _refusals():
        reference = references.remove_reference(benchmark, split, reference_id)
    click.echo(f"removed reference {reference_id} {reference.name!r} from {benchmark}/{split}")


@click.command("backup")
@with_appcontext
@click.argument("path", type=click.Path(dir_okay=False))
def backup_command(path):
    """Write a consistent archive (tar.gz) of the database, gold files and uploads (from the upload folder or
    the bucket) to the new file PATH."""
    with _refusals():
        summary = backups.backup(Path(path))
    click.echo(
        f"wrote {summary.path}: {summary.rows} rows in {len(summary.tables)} tables (revision "
        f"{summary.revision}), {summary.gold_files} gold files, {summary.uploads} uploads; it holds the "
        "hidden labels: keep it private"
    )


@click.command("restore")
@with_appcontext
@click.argument("path", type=click.Path(dir_okay=False))
def restore_command(path):
    """Restore the archive PATH (from `backup`) into this empty deployment (its uploads into this deployment's
    folder or bucket), then migrate to the newest schema."""
    with _refusals():
        summary = backups.restore(Path(path))
    click.echo(
        f"restored {summary.path}: {summary.rows} rows in {len(summary.tables)} tables (revision "
        f"{summary.revision}, migrated to {summary.upgraded_to}), {summary.gold_files} gold files, "
        f"{summary.uploads} uploads"
    )


labels_cli = AppGroup(
    "labels", help="Audit a split's gold labels; install a corrected gold file; summarise for the probe check."
)


@labels_cli.command("audit")
@click.argument("benchmark")
@click.argument("split")
@click.option(
    "--top",
    default=str(label_audits.DEFAULT_TOP),
    show_default=True,
    help=f"How many suspect labels to list (1 to {label_audits.MAX_TOP}).",
)
def labels_audit(benchmark, split, top):
    """List the examples of SPLIT whose gold label the stored submissions most consistently contradict."""
    with _refusals():
        report = label_audits.audit_labels(benchmark, split, top)
    noise = ", ".join(f"{field} {100 * (1 - value):.2f}%" for field, value in report.gold_accuracy.items())
    click.echo(
        f"{benchmark}/{split}: {report.submissions} distinct submissions voted; estimated wrong gold labels: {noise}"
    )
    click.echo("rank	identifier	field	gold	likely	p_wrong	against")
    for row in report.rows:
        click.echo(
            f"{row.rank}	{row.identifier}	{row.field}	{row.gold}	{row.likely}	"
            f"{row.probability:.4f}	{100 * row.against:.1f}%"
        )


@labels_cli.command("correct")
@click.argument("benchmark")
@click.argument("split")
@click.option("--labels", required=True, type=click.Path(dir_okay=False), help="The corrected gold file.")
@click.option("--note", required=True, help="What was corrected and why (audit log).")
def labels_correct(benchmark, split, labels, note):
    """Install a corrected gold file for SPLIT as its next version and rescore every stored submission."""
    data = _read(labels, "labels file")
    with _refusals():
        done = label_audits.correct_labels(None, benchmark, split, data, note, via="cli")
    click.echo(
        f"{benchmark}/{split}: gold version {done.version} installed ({done.old_sha256[:12]} -> "
        f"{done.new_sha256[:12]}); {done.labels_changed} label{'' if done.labels_changed == 1 else 's'} "
        f"changed, {done.rescored} submissions rescored, {done.ranks_moved} published "
        f"rank{'' if done.ranks_moved == 1 else 's'} moved"
    )


@labels_cli.command("summarise")
@click.argument("benchmark")
@click.argument("split")
def labels_summarise(benchmark, split):
    """Make the probe summaries of hidden SPLIT's stored submissions against its labels (those stored before
    migration 0010 have none: the probe check reads them the slow way until this runs)."""
    with _refusals():
        summarised = label_audits.summarise_for_probes(None, benchmark, split, via="cli")
    click.echo(f"{benchmark}/{split}: {summarised} submissions summarised for the probe check")


uploads_cli = AppGroup("uploads", help="Check the store of original uploads (folder or bucket) against the database.")


@uploads_cli.command("check")
@click.option(
    "--delete",
    is_flag=True,
    help="Remove files (or objects) without a row and leftovers of unfinished uploads; put back complete "
    "files of committed rows that a killed worker left under a temporary name.",
)
@click.option(
    "--min-age",
    type=click.FloatRange(min=0),
    default=upload_store.IN_FLIGHT_SECONDS,
    show_default=True,
    help="Seconds after which a temporary file (in a bucket: an object without a row) is no longer taken for "
    "an upload in flight.",
)
def uploads_check(delete, min_age):
    """List originals in the upload store (SUBMISSIONS_DIR, or STORAGE_URL's folder or bucket) without a
    stored submission, and stored submissions without an original.

    Exits with 1 when something is wrong and --delete was not given (or cannot mend it), 2 when the store
    cannot be read."""
    with _refusals():
        found = upload_store.check(delete=delete, min_age=min_age)
    if isinstance(found, upload_store.BucketCheck):
        _report_bucket(found, delete)
        lost = found.rows_without_object
    else:
        _report_folder(found, delete)
        lost = found.rows_without_file
    if found.clean:
        click.echo("uploads and rows agree")
    elif not delete or lost:  # --delete cannot bring back a lost original
        raise SystemExit(1)


def _report_bucket(found: upload_store.BucketCheck, delete: bool) -> None:
    done = " (removed)" if delete else ""
    for key in found.objects_without_row:
        click.echo(f"object without a row{done}: {found.address(key)}")
    for digest in found.rows_without_object:
        click.echo(f"stored submission without an object: sha256 {digest}")
    for key in found.in_flight:
        click.echo(f"upload in flight, left alone: {found.address(key)}")


def _report_folder(found: upload_store.FolderCheck, delete: bool) -> None:
    done = " (removed)" if delete else ""
    for path in found.files_without_row:
        click.echo(f"file without a row{done}: {path}")
    for path in found.leftovers:
        click.echo(f"unfinished upload{done}: {path}")
    for path in found.restorable:
        moved = " (moved into place)" if delete else ""
        click.echo(f"complete file of a stored submission under a temporary name{moved}: {path}")
    for digest in found.rows_without_file:
        click.echo(f"stored submission without a file: sha256 {digest}")
    for path in found.in_flight:
        click.echo(f"upload in flight, left alone: {path}")


@click.command("worker")
@click.option("--concurrency", type=click.IntRange(1, 32), default=1, show_default=True, help="Jobs run at once.")
@with_appcontext
def worker_command(concurrency):
    """Run jobs (board snapshots, rescoring) until stopped (SIGTERM/SIGINT finish the job in hand).

    Needs JOB_QUEUE=procrastinate (the default on PostgreSQL). Several may run, on other machines."""
    if not transport.uses_workers():
        raise click.UsageError("JOB_QUEUE is inline (SQLite): jobs run in the web process; there is no worker to run")
    # What a worker does goes to its standard error, as gunicorn's messages do (systemd's journal keeps it).
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    click.echo(f"worker {transport.worker_label()}: running jobs (concurrency {concurrency})")
    transport.serve(current_app._get_current_object(), concurrency=concurrency)  # type: ignore[attr-defined]


jobs_cli = AppGroup("jobs", help="The job queue: what waits, runs, failed; run, retry or dismiss a job.")


@jobs_cli.command("list")
@click.option(
    "--state",
    type=click.Choice(["attention", "queued", "running", "done", "failed"]),
    default=None,
    help="Only these (attention: failed, not dismissed and not since run again, or waiting or running past "
    "JOB_STUCK_AFTER).",
)
@click.option("--limit", type=click.IntRange(1, 10_000), default=50, show_default=True)
def jobs_list(state, limit):
    """The newest jobs, with the queue's state first. Exits with 1 when a job needs attention."""
    summary = jobs_console.queue_state()
    click.echo(
        f"queue: {summary.waiting} waiting, {summary.running} running, oldest {summary.oldest_s:.0f} s, "
        f"{summary.failed} failed, {summary.stuck} stuck"
    )
    for row in jobs_console.listing(state, limit):
        flag = " STUCK" if row.stuck else ""
        line = (
            f"{row.id:>7}  {row.kind:<8} {row.target:<24} {row.state:<8}{flag} attempts {row.attempts}  "
            f"queued {row.queued_at:%Y-%m-%d %H:%M:%S}"
        )
        click.echo(line + (" (dismissed)" if row.dismissed else ""))
        if row.error and row.state != "done":
            click.echo(f"         error: {row.error.splitlines()[0][:200]}")
        elif row.result:
            click.echo(f"         {row.result[:200]}")
    if summary.failed or summary.stuck:
        raise SystemExit(1)


@jobs_cli.command("retry")
@click.argument("job_ids", nargs=-1, type=click.IntRange(1, 2**31 - 1))  # a job's id is an INTEGER
@click.option("--failed", "all_failed", is_flag=True, help="Every job that failed and was not since done.")
def jobs_retry(job_ids, all_failed):
    """Queue failed or stuck jobs' work again (a new run of each one's key)."""
    with _refusals():
        for old, new in maintainer_actions.rerun_jobs(None, list(job_ids), all_failed=all_failed):
            click.echo(f"job {old}: queued again as job {new}")


@jobs_cli.command("dismiss")
@click.argument("job_ids", nargs=-1, required=True, type=click.IntRange(1, 2**31 - 1))
def jobs_dismiss(job_ids):
    """Let failed jobs be: no longer counted by /healthz or `jobs list` (audited; the record stays)."""
    with _refusals():
        for job_id in maintainer_actions.dismiss_jobs(None, list(job_ids)):
            click.echo(f"job {job_id}: dismissed")


@jobs_cli.command("run")
def jobs_run():
    """Run every due job here and now, in this process (JOB_QUEUE=inline, or with no worker at hand)."""
    ran = transport.run_due_here()
    click.echo(f"{ran} jobs run")


def register(app: Flask) -> None:
    for command in (
        worker_command,
        jobs_cli,
        benchmarks_cli,
        splits_cli,
        subsets_cli,
        evaluate,
        demo_command,
        labels_cli,
        users_cli,
        teams_cli,
        tokens_cli,
        references_cli,
        backup_command,
        restore_command,
        uploads_cli,
    ):
        app.cli.add_command(command)
