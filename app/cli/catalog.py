"""Commands on the catalog: benchmarks, splits (gold files, policies, phases, reveals, a planned board's
power), subsets, reference rows, entry fields and tracks (`benchmarks`, `splits`, `subsets`, `references`,
`fields`, `tracks`)."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from app.cli.errors import CliError, read_file, refusals
from app.evaluation import TASK_TYPES
from app.services import catalog
from app.services.boards import power
from app.services.catalog import entry_fields, phases, references, tracks
from app.services.errors import ServiceError
from app.services.maintenance import maintainer_actions

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
    with refusals():
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
    gold = read_file(labels, "labels file")
    notes = read_file(annotations, "annotations file") if annotations else None
    choices_data = read_file(choices, "choices file") if choices else None
    with refusals():
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
    with refusals():
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
    with refusals():
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
    with refusals():
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
    with refusals():
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
    data = read_file(ids, "identifier file")
    with refusals():
        subset, rescored = maintainer_actions.add_subset(None, benchmark, split, name, data, via="cli")
    click.echo(f"added subset {subset.name} ({subset.size} examples); rescored {rescored} submissions")


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
    with refusals():
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
    with refusals():
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
    with refusals():
        reference = references.remove_reference(benchmark, split, reference_id)
    click.echo(f"removed reference {reference_id} {reference.name!r} from {benchmark}/{split}")


fields_cli = AppGroup("fields", help="Entry fields: the fact sheet teams fill in for each entry of a benchmark.")


@fields_cli.command("add")
@click.argument("benchmark")
@click.argument("key")
@click.option("--label", required=True, help='What a reader sees, e.g. "Zero-shot".')
@click.option("--type", "type_", required=True, type=click.Choice(["yesno", "choice", "integer", "text", "url"]))
@click.option("--choices", default=None, help="A choice field's values, comma-separated: a,b,c.")
@click.option("--unit", default=None, help='An integer field\'s unit, e.g. "parameters".')
@click.option("--required", is_flag=True, help="Needed to publish an entry.")
@click.option("--column", is_flag=True, help="Shown as a column of the benchmark's boards.")
@click.option("--filter", "filterable", is_flag=True, help="Boards may be filtered by it.")
def fields_add(benchmark, key, label, type_, choices, unit, required, column, filterable):
    """Define field KEY (lower-case, digits, underscores) on BENCHMARK; audited."""
    with refusals():
        spec = entry_fields.checked_spec(
            key,
            label,
            type_,
            choices.split(",") if choices is not None else None,
            unit,
            required=required,
            column=column,
            filterable=filterable,
        )
        entry_fields.add_field(benchmark, spec)
    click.echo(f"added field {spec.key} ({spec.type}) to {benchmark}")


@fields_cli.command("list")
@click.argument("benchmark")
def fields_list(benchmark):
    """List BENCHMARK's fields: key, type, label, then its flags."""
    with refusals():
        specs = entry_fields.list_fields(benchmark)
    if not specs:
        click.echo("no entry fields")
    for spec in specs:
        kind = {"choice": f"choice({','.join(spec.choices)})", "integer": f"integer({spec.unit or ''})"}
        flags = [
            name
            for name, on in (("required", spec.required), ("column", spec.column), ("filter", spec.filterable))
            if on
        ]
        click.echo(f"{spec.key}\t{kind.get(spec.type, spec.type)}\t{spec.label}\t{' '.join(flags)}")


@fields_cli.command("remove")
@click.argument("benchmark")
@click.argument("key")
def fields_remove(benchmark, key):
    """Remove field KEY from BENCHMARK (refused while any entry holds a value for it); audited."""
    with refusals():
        entry_fields.remove_field(benchmark, key)
    click.echo(f"removed field {key} from {benchmark}")


tracks_cli = AppGroup(
    "tracks", help="Tracks: named filters over a benchmark's filterable entry fields (tabs of its boards)."
)


@tracks_cli.command("add")
@click.argument("benchmark")
@click.argument("name")
@click.option("--label", required=True, help='What a reader sees, e.g. "Under 1B parameters".')
@click.option(
    "--where",
    "conditions",
    multiple=True,
    required=True,
    help="A condition on a filterable field, field:value (zero_shot:yes) or field<=N (parameters<=1e9); repeat it "
    "for more (an entry meets them all).",
)
def tracks_add(benchmark, name, label, conditions):
    """Define track NAME (lower-case, digits, hyphens) on BENCHMARK; audited."""
    with refusals():
        spec = tracks.add_track(benchmark, name, label, list(conditions))
    click.echo(f"added track {spec.name} to {benchmark}: {' '.join(spec.as_dict()['where'])}")


@tracks_cli.command("list")
@click.argument("benchmark")
def tracks_list(benchmark):
    """List BENCHMARK's tracks: name, label, conditions; the built-in verified track first."""
    with refusals():
        specs = tracks.list_tracks(benchmark)
    click.echo(f"{tracks.VERIFIED}\tVerified\t(entries a maintainer verified; built in)")
    for spec in specs:
        click.echo(f"{spec.name}\t{spec.label}\t{' '.join(spec.as_dict()['where'])}")


@tracks_cli.command("remove")
@click.argument("benchmark")
@click.argument("name")
def tracks_remove(benchmark, name):
    """Remove track NAME from BENCHMARK; audited."""
    with refusals():
        tracks.remove_track(benchmark, name)
    click.echo(f"removed track {name} from {benchmark}")


# What this module adds to `flask`.
COMMANDS = (benchmarks_cli, splits_cli, subsets_cli, references_cli, fields_cli, tracks_cli)
