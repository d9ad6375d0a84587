"""Teams."""
from __future__ import annotations

from sqlalchemy import select

from app.db import db
from app.models import Team
from app.services.errors import Conflict, InvalidInput


def find_team(name: str) -> Team | None:
    return db.session.scalar(select(Team).where(Team.name == name))


def create_team(name: str) -> Team:
    name = (name or "").strip()
    if not name or len(name) > 80:
        raise InvalidInput("a team name must have 1 to 80 characters")
    if find_team(name) is not None:
        raise Conflict(f"team {name!r} already exists")
    team = Team(name=name)
    db.session.add(team)
    db.session.commit()
    return team
