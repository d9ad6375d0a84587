"""What each public read depends on, read in one cheap query: the web layer derives its HTTP validators
(ETags) from these before it asks for the page itself, so an unchanged page costs one query to confirm.

Every value a public page shows changes only with a row read here: what a board shows is bumped into its
split's board_version (publication, hiding, subsets, references, reveal, policy); the rest is the
benchmark's and splits' own columns, for a submission page the submission's and its team's, and for a team's
public page the team's and its members' choices to be named.
"""

from __future__ import annotations

from sqlalchemy import select

from app.db import begin_reading, db
from app.models import Benchmark, LeaderboardCache, Membership, Split, Submission, Team, TrackSnapshot, User
from app.services.boards import leaderboards
from app.services.catalog import tracks
from app.services.jobs import transport
from app.services.people import teams

_CATALOG_QUERY = (
    select(
        *leaderboards.BENCHMARK_FIELDS,
        Benchmark.default_split_id,
        *leaderboards.SPLIT_FIELDS,
        Split.position,
        Split.sealed_fraction,
        LeaderboardCache.version,  # the last finished snapshot: the home page shows each board's best entry
        LeaderboardCache.computed_at,
    )
    .outerjoin(Split, Split.benchmark_id == Benchmark.id)
    .outerjoin(LeaderboardCache, LeaderboardCache.split_id == Split.id)
    .order_by(Benchmark.id, Split.position, Split.id)
)


def benchmark(slug: str, track: str | None = None, verified: str | None = None) -> object:
    """The benchmark and every split of it with its board_version (NotFound for an unknown slug): what its
    leaderboards, models view, exports and sample files depend on; for a named track's board (`track`, or
    `verified` "1") also the versions of its stored boards, which the board's job builds after the board (a page
    served while its track's board is still being built changes when that is done)."""
    begin_reading()
    info = leaderboards.benchmark_info(slug)
    name = track or (tracks.VERIFIED if verified == "1" else None)
    if not name or not isinstance(name, str) or transport.inline():
        return info
    built = db.session.execute(
        select(TrackSnapshot.split_id, TrackSnapshot.version)
        .join(Split, Split.id == TrackSnapshot.split_id)
        .where(Split.benchmark_id == info.id, TrackSnapshot.track == name[: tracks.MAX_NAME])
        .order_by(TrackSnapshot.split_id)
    ).all()
    return info, tuple(tuple(row) for row in built)


def catalog() -> tuple:
    """Every benchmark and split with its board_version: what the home page and the benchmark list show."""
    begin_reading()
    return tuple(
        (*row[:-2], leaderboards.behind_marker(row.version, row.computed_at, row.board_version or 0))
        for row in db.session.execute(_CATALOG_QUERY)
    )


def submission(submission_id: int) -> tuple | None:
    """A submission's shown columns, its team's name and its split's state (None if there is none)."""
    begin_reading()
    row = db.session.execute(
        select(
            Submission.status,
            Submission.model_name,
            Submission.description,
            Submission.paper_url,
            Submission.code_url,
            Submission.fields,
            Submission.anonymous,
            Submission.published_at,
            Submission.hidden_at,
            Submission.released,
            Team.name,
            Split.board_version,
            Split.hidden,
            Split.feedback,
            Split.revealed_at,
            Split.name,
            Split.slug,
            Benchmark.name,
            Benchmark.slug,
        )
        .join(Team, Team.id == Submission.team_id)
        .join(Split, Split.id == Submission.split_id)
        .join(Benchmark, Benchmark.id == Split.benchmark_id)
        .where(Submission.id == submission_id)
    ).first()
    return None if row is None else tuple(row)


def team(team_slug: str) -> tuple | None:
    """What a team's public page depends on: the team and which members chose to be named, and every board
    (its entries are rows of their splits' boards)."""
    if not isinstance(team_slug, str) or not teams.SLUG_SHAPE.match(team_slug):
        return None
    begin_reading()
    people = db.session.execute(
        select(Team.id, Team.name, User.email, Membership.shown)
        .outerjoin(Membership, Membership.team_id == Team.id)
        .outerjoin(User, User.id == Membership.user_id)
        .where(Team.slug == team_slug)
        .order_by(User.email)
    ).all()
    return (tuple(tuple(row) for row in people), catalog()) if people else None
