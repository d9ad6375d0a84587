"""The catalog's mail: a held blind-test board revealed, told to the members of every team that uploaded to
it (those with a verified address who did not turn this mail off)."""

from __future__ import annotations

from sqlalchemy import select

from app.db import db
from app.models import Split, Submission, User
from app.services.mail import outbox
from app.services.mail.delivery import Letter
from app.services.people import teams


def post_reveal(split: Split) -> int:
    """Queue the letters in the caller's transaction (the reveal's); returns how many."""
    team_ids = db.session.scalars(
        select(Submission.team_id).where(Submission.split_id == split.id, Submission.status == "scored").distinct()
    )
    recipients = teams.mail_recipients(team_ids, "notify_reveal")
    for user in recipients:
        outbox.post("reveal", user_id=user.id, split_id=split.id)
    return len(recipients)


def _reveal_letter(args: dict) -> Letter | None:
    user, split = db.session.get(User, int(args["user_id"])), db.session.get(Split, int(args["split_id"]))
    if user is None or split is None or not user.notify_reveal or split.revealed_at is None:
        return None
    board = f"{split.benchmark.name} {split.name}"
    return Letter(
        to=user.email,
        subject=f"The {board} board is revealed",
        body=(
            f"The scores of the blind test {board} were revealed on {split.revealed_at:%Y-%m-%d %H:%M} UTC.\n\n"
            f"The board: {outbox.link(f'/leaderboards/{split.benchmark.slug}/{split.slug}')}\n"
            f"Your submissions, with their scores: {outbox.link('/submissions')}\n\n"
            f"Turn this mail off on your account page: {outbox.link('/account')}\n"
        ),
    )


outbox.writer("reveal", _reveal_letter)
