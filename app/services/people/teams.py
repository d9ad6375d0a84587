"""Teams, their members and one-time invite links."""

from __future__ import annotations

import secrets
from collections.abc import Iterable
from datetime import timedelta

from sqlalchemy import Connection, Integer, String, cast, column, literal, select, table, update

from app.db import db
from app.models import Invite, Membership, Team, User, as_utc, utcnow
from app.names import display_name, invisible, mixed_scripts, name_key, reserved_keys
from app.services.errors import Conflict, InvalidInput, NotFound, check_visible
from app.services.people.accounts import token_digest

INVITE_LIFETIME = timedelta(days=7)
INVITE_INVALID = "This invite link is unknown, has already been used or has expired. Ask a team member for a new one."


def find_team(name: str) -> Team | None:
    return db.session.scalar(select(Team).where(Team.name == name))


def get_team(team_id: int) -> Team:
    team = db.session.get(Team, team_id)
    if team is None:
        raise NotFound("no such team")
    return team


def get_team_for(team_id: int, user: User) -> Team:
    """The team, if the user is one of its members; otherwise the team is reported as missing."""
    team = db.session.get(Team, team_id)
    if team is None or not _is_member(team, user):
        raise NotFound("no such team")
    return team


def check_team_name(name: str) -> tuple[str, str]:
    """(name as stored, its key) for a new team, or why it cannot have that name: a name has no invisible
    characters, and must differ from every other team's, and from "Anonymous", in more than case, runs of
    spaces, compatibility forms and look-alike letters (app/names.py); no word of it mixes scripts."""
    check_visible("team name", name)
    shown = display_name(name)
    key = name_key(shown)
    if not key or len(shown) > 80:
        raise InvalidInput("a team name must have 1 to 80 visible characters")
    if len(key) > 255:
        raise InvalidInput("this team name is too long once its characters are normalised; choose a shorter one")
    if key in reserved_keys():
        raise InvalidInput(f'team name {shown!r} is reserved: boards show anonymous entries as "Anonymous"')
    existing = db.session.scalar(select(Team).where(Team.name_key == key))
    if existing is not None:
        same = "already exists" if existing.name == shown else f"looks like the existing team {existing.name!r}"
        raise Conflict(f"team name {shown!r} {same}; choose another name")
    mixed = mixed_scripts(shown)
    if mixed:
        raise InvalidInput(f"team name {shown!r} {mixed}")
    return shown, key


def recompute_name_keys(connection: Connection) -> list[tuple[int, str, str]]:
    """Every team's key again, by the rule of app/names.py as it is now, for a migration after the rule changed
    (stored keys made by an older rule would let a new team look like an old one). Teams are taken in id order;
    where two existing teams now look alike, the later one's key is made distinct with "#<id>", as migration
    0006 did: both keep their names. Returns (id, name, why) of the teams a maintainer should look at: those,
    and names the rule would now refuse (like "Anonymous", with an invisible character, mixing scripts). Core
    SQL on the migration's connection, not the models: it runs at whatever revision calls it."""
    teams = table("teams", column("id", Integer), column("name", String), column("name_key", String))
    rows = connection.execute(select(teams.c.id, teams.c.name).order_by(teams.c.id)).all()
    # Every key is first set to a placeholder, so that no new key meets another team's old one half way.
    connection.execute(update(teams).values(name_key=literal("#") + cast(teams.c.id, String)))
    seen: dict[str, str] = {}
    found = []
    for team_id, name in rows:
        key = name_key(name)[:240] or f"#{team_id}"
        why = invisible(name) or mixed_scripts(name)
        if key in reserved_keys():
            why = 'looks like "Anonymous"'
        if key in seen:
            why = f"looks like the earlier team {seen[key]!r}"
            key = f"{key}#{team_id}"
        seen.setdefault(key, name)
        if why:
            found.append((team_id, name, why))
        connection.execute(update(teams).where(teams.c.id == team_id).values(name_key=key))
    return found


def create_team(name: str, creator: User | None = None, *, members: Iterable[User] = ()) -> Team:
    """A new team; the creator and any given members join it in the same transaction."""
    name, key = check_team_name(name)
    team = Team(name=name, name_key=key)
    db.session.add(team)
    joined: set[int] = set()
    for user in ([creator] if creator else []) + list(members):
        if user.id not in joined:
            joined.add(user.id)
            db.session.add(Membership(user=user, team=team))
    db.session.commit()
    return team


def add_member(team: Team, user: User) -> None:
    """Add a user to a team; nothing happens if they already belong to it."""
    if not _is_member(team, user):
        db.session.add(Membership(user=user, team=team))
        db.session.commit()


def members(team: Team) -> list[User]:
    return list(
        db.session.scalars(
            select(User)
            .join(Membership, Membership.user_id == User.id)
            .where(Membership.team_id == team.id)
            .order_by(User.email)
        )
    )


def leave_team(team: Team, user: User) -> None:
    membership = db.session.get(Membership, (user.id, team.id))
    if membership is None:
        raise NotFound("no such team")
    db.session.delete(membership)
    db.session.commit()


def create_invite(team: Team, inviter: User) -> str:
    """A one-time invite link token for the team, valid for a week; only its digest is stored."""
    if not _is_member(team, inviter):
        raise NotFound("no such team")
    plaintext = secrets.token_urlsafe(32)
    db.session.add(
        Invite(
            team=team,
            token_hash=token_digest(plaintext),
            created_by_id=inviter.id,
            expires_at=utcnow() + INVITE_LIFETIME,
        )
    )
    db.session.commit()
    return plaintext


def find_invite(token: str) -> Invite:
    """A usable invite (unused, unexpired) for this token, without consuming it."""
    if not token or len(token) > 200:
        raise NotFound(INVITE_INVALID)
    invite = db.session.scalar(select(Invite).where(Invite.token_hash == token_digest(token)))
    if invite is None or invite.used_at is not None or as_utc(invite.expires_at) <= utcnow():
        raise NotFound(INVITE_INVALID)
    return invite


def accept_invite(token: str, user: User) -> Team:
    """Join the invite's team and use the invite up (also when the user already is a member)."""
    invite = find_invite(token)
    now = utcnow()
    # A conditional update claims the invite atomically, so two simultaneous uses cannot both succeed.
    claimed = db.session.execute(
        update(Invite)
        .where(Invite.id == invite.id, Invite.used_at.is_(None))
        .values(used_at=now, used_by_id=user.id)
        .returning(Invite.id)
        .execution_options(synchronize_session=False)
    ).first()
    if claimed is None:
        db.session.rollback()
        raise NotFound(INVITE_INVALID)
    team = invite.team
    if not _is_member(team, user):
        db.session.add(Membership(user=user, team=team))
    db.session.commit()
    return team


def _is_member(team: Team, user: User | None) -> bool:
    if user is None or user.id is None:
        return False
    return db.session.get(Membership, (user.id, team.id)) is not None
