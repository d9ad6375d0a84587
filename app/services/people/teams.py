"""Teams, their members and one-time invite links.

People, not teams, are what a blind test protects: an account belongs to at most MAX_TEAMS_PER_ACCOUNT teams
(creating, joining by invite, or added by a maintainer) and creates at most MAX_TEAMS_CREATED_PER_DAY in any 24
hours. Both are counted inside the transaction that adds the membership, serialised on the account's row
(db.serialise_on), so parallel requests cannot pass a cap together. A maintainer (the command line) may add a
member over the cap on purpose (`over_cap`); teams a maintainer creates have no creator and count against
nobody's daily creations. Creating a team, inviting and joining need a confirmed address (accounts.check_verified);
a team held alone by an account never confirmed gives its name up (`abandoned`).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import (
    ColumnElement,
    Connection,
    Integer,
    String,
    and_,
    cast,
    column,
    exists,
    literal,
    select,
    table,
    update,
)

from app import settings
from app.db import db, serialise_on
from app.models import Invite, Membership, Submission, Team, User, as_utc, utcnow
from app.names import display_name, invisible, mixed_scripts, name_key, reserved_keys, team_slug
from app.services.audit import audit_log
from app.services.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    QuotaExceeded,
    ServiceError,
    Throttled,
    check_visible,
)
from app.services.mail import outbox
from app.services.mail.delivery import Letter
from app.services.people import accounts, signed_links, throttle
from app.services.people.accounts import token_digest

INVITE_LIFETIME = timedelta(days=7)
CREATION_WINDOW = timedelta(days=1)
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
    spaces, compatibility forms and look-alike letters (app/names.py); no word of it mixes scripts. A team
    holding the name that is abandoned (`abandoned`) is removed, in the caller's transaction: the name is free."""
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
    if existing is not None and _release_if_abandoned(existing):
        existing = None
    if existing is not None:
        same = "already exists" if existing.name == shown else f"looks like the existing team {existing.name!r}"
        raise Conflict(f"team name {shown!r} {same}; choose another name")
    mixed = mixed_scripts(shown)
    if mixed:
        raise InvalidInput(f"team name {shown!r} {mixed}")
    return shown, key


def abandoned(now: datetime) -> ColumnElement[bool]:
    """Which teams hold a name nobody answers for: made by an account that never confirmed its address within
    accounts.UNCONFIRMED_DAYS of registering, with no submission and no other member. (Unconfirmed accounts
    could make teams before issue 35: throwaway accounts squatted "DeepMind 9ce5b" and every look-alike.) Such
    a team is removed when its name (or a look-alike) is wanted again, or by `flask users prune-unconfirmed`."""
    return and_(
        Team.created_by_id.in_(select(User.id).where(accounts.never_confirmed(now))),
        ~exists().where(Submission.team_id == Team.id),
        ~exists().where(Membership.team_id == Team.id, Membership.user_id != Team.created_by_id),
    )


def abandoned_teams(now: datetime | None = None) -> list[Team]:
    return list(db.session.scalars(select(Team).where(abandoned(now or utcnow())).order_by(Team.id)))


def release(team: Team, why: str) -> None:
    """Remove an abandoned team, audited (not committed): its name and page are free again."""
    creator = db.session.get(User, team.created_by_id) if team.created_by_id else None
    audit_log.record(
        None,
        "team.release",
        f"team {team.name}",
        {"slug": team.slug, "created_by": creator.email if creator else None, "why": why},
    )
    db.session.delete(team)
    db.session.flush()  # the name, key and slug are free for the rest of the transaction


def _release_if_abandoned(team: Team) -> bool:
    if db.session.scalar(select(Team.id).where(Team.id == team.id, abandoned(utcnow()))) is None:
        return False
    release(team, "its name was wanted again")
    return True


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


class TeamCapReached(Conflict):
    """Adding this member would put an account in more teams than MAX_TEAMS_PER_ACCOUNT."""


@dataclass(frozen=True)
class TeamRoom:
    """Where an account stands against the caps on teams: what the Teams and invite pages say."""

    teams: list[str]  # names of the teams it belongs to, by name
    cap: int  # MAX_TEAMS_PER_ACCOUNT
    created_today: int  # teams it created in the last 24 hours
    per_day: int  # MAX_TEAMS_CREATED_PER_DAY

    @property
    def full(self) -> bool:
        return len(self.teams) >= self.cap


def _teams_of(user_id: int) -> list[str]:
    return list(
        db.session.scalars(
            select(Team.name)
            .join(Membership, Membership.team_id == Team.id)
            .where(Membership.user_id == user_id)
            .order_by(Team.name)
        )
    )


def _created_since(user_id: int, since: datetime) -> list[tuple[str, datetime]]:
    """(name, created at) of the teams the account created since then, oldest first."""
    rows = db.session.execute(
        select(Team.name, Team.created_at)
        .where(Team.created_by_id == user_id, Team.created_at > since)
        .order_by(Team.created_at, Team.id)
    )
    return [(name, as_utc(created_at)) for name, created_at in rows]


def room(user: User) -> TeamRoom:
    """The account's teams and creations against the caps (a read, without the lock: for pages)."""
    limits = settings.current()
    return TeamRoom(
        _teams_of(user.id),
        limits.max_teams_per_account,
        len(_created_since(user.id, utcnow() - CREATION_WINDOW)),
        limits.max_teams_created_per_day,
    )


def _plural(count: int, word: str) -> str:
    return f"{count} {word}{'' if count == 1 else 's'}"


def _check_membership_cap(user: User, *, by_self: bool) -> None:
    """Refuse a new membership for an account already in MAX_TEAMS_PER_ACCOUNT teams (inside the caller's
    transaction, after serialise_on its row), naming the cap and its teams."""
    cap = settings.current().max_teams_per_account
    names = _teams_of(user.id)
    if len(names) < cap:
        return
    who = "you belong" if by_self else f"{user.email} belongs"
    message = f"an account may belong to at most {_plural(cap, 'team')}; {who} to {len(names)} ({', '.join(names)})"
    if by_self:
        message += "; leave one of them first"
    raise TeamCapReached(message)


def _check_creations(user: User, now: datetime) -> None:
    """Refuse a team created by an account that created MAX_TEAMS_CREATED_PER_DAY in the last 24 hours."""
    per_day = settings.current().max_teams_created_per_day
    recent = _created_since(user.id, now - CREATION_WINDOW)
    if len(recent) < per_day:
        return
    retry = recent[-per_day][1] + CREATION_WINDOW  # when the oldest creation that counts leaves the window
    names = ", ".join(name for name, _ in recent)
    raise QuotaExceeded(
        f"an account may create at most {_plural(per_day, 'team')} a day; you created {len(recent)} in the last "
        f"24 hours ({names}); the next one can be created after {retry:%Y-%m-%d %H:%M} UTC",
        retry,
    )


@contextmanager
def _refused_rolls_back():
    """A refusal ends the transaction: it may hold the account's lock (on SQLite, the database's)."""
    try:
        yield
    except ServiceError:
        db.session.rollback()
        raise


def create_team(
    name: str, creator: User | None = None, *, members: Iterable[User] = (), over_cap: bool = False
) -> Team:
    """A new team; the creator and any given members join it in the same transaction.

    The creator is an account making a team for itself (the Teams page): its address must be confirmed and it
    must be under both caps. Members are added by a maintainer: each must be under MAX_TEAMS_PER_ACCOUNT unless
    `over_cap`."""
    if creator is not None:
        accounts.check_verified(creator)
    joining: dict[int, User] = {}
    for user in ([creator] if creator else []) + list(members):
        joining.setdefault(user.id, user)
    serialise_on(User, joining)  # before anything is read: the counts below hold until the commit
    now = utcnow()
    with _refused_rolls_back():
        name, key = check_team_name(name)
        if creator is not None:
            _check_membership_cap(creator, by_self=True)
            _check_creations(creator, now)
        if not over_cap:
            for user in joining.values():
                if creator is None or user.id != creator.id:
                    _check_membership_cap(user, by_self=False)
    team = Team(
        name=name,
        name_key=key,
        slug=_free_slug(name),
        created_at=now,
        created_by_id=creator.id if creator else None,
    )
    db.session.add(team)
    for user in joining.values():
        db.session.add(Membership(user=user, team=team))
    db.session.commit()
    return team


def _free_slug(name: str) -> str:
    """The team's public address: team_slug(name), or with "-2", "-3" ... when another team has it (two names
    apart to a reader can fold to one slug: "R&D" and "R-D"). The unique constraint settles a race."""
    base = team_slug(name)
    taken = set(db.session.scalars(select(Team.slug).where(Team.slug.like(f"{base}%"))))
    slug, n = base, 1
    while slug in taken:
        n += 1
        slug = f"{base}-{n}"
    return slug


def add_member(team: Team, user: User, *, over_cap: bool = False) -> None:
    """Add a user to a team (a maintainer's way; under the cap unless `over_cap`); nothing happens if they
    already belong to it."""
    serialise_on(User, [user.id])
    if not _is_member(team, user):
        if not over_cap:
            with _refused_rolls_back():
                _check_membership_cap(user, by_self=False)
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


NOTIFICATIONS = ("notify_reveal", "notify_rescore", "notify_invite")


def mail_recipients(team_ids: Iterable[int], notification: str) -> list[User]:
    """The members of these teams who get this notification: a verified address and the mail not turned off."""
    if notification not in NOTIFICATIONS:
        raise ValueError(notification)
    ids = sorted(set(team_ids))
    if not ids:
        return []
    return list(
        db.session.scalars(
            select(User)
            .where(
                User.id.in_(select(Membership.user_id).where(Membership.team_id.in_(ids))),
                User.email_verified_at.is_not(None),
                getattr(User, notification).is_(True),
            )
            .order_by(User.id)
        )
    )


def leave_team(team: Team, user: User) -> None:
    membership = db.session.get(Membership, (user.id, team.id))
    if membership is None:
        raise NotFound("no such team")
    db.session.delete(membership)
    db.session.commit()


INVITE_MAILS_PER_DAY = 20


def create_invite(team: Team, inviter: User, email: str | None = None) -> str:
    """A one-time invite link token for the team, valid for a week; only its digest is stored. With an
    address, the link is also mailed there (unless its account turned invitation mail off), at most
    INVITE_MAILS_PER_DAY a day per inviter: the site must not become a way to mail strangers."""
    accounts.check_verified(inviter)  # an account nobody answers for must not bring people in, nor mail strangers
    if not _is_member(team, inviter):
        raise NotFound("no such team")
    address = accounts.normalise_email(email) or None
    if address is not None:
        address = accounts.checked_email(
            address, invalid="enter a valid email address to mail the invitation to", field="email"
        )
        try:
            throttle.attempt(f"invite-mail:{inviter.id}", limit=INVITE_MAILS_PER_DAY, window=86400)
        except Throttled as exc:
            raise Throttled(
                f"you mailed {INVITE_MAILS_PER_DAY} invitations in the last day; try again in {exc.retry_after} "
                "seconds, or hand the link over yourself",
                exc.retry_after,
            ) from None
    expires = utcnow() + INVITE_LIFETIME
    # Signed from the row's id, so the letter can be written when its job runs without the jobs table
    # ever holding the link; the placeholder digest is replaced before the commit.
    invite = Invite(
        team=team, token_hash=secrets.token_hex(32), created_by_id=inviter.id, expires_at=expires, email=address
    )
    db.session.add(invite)
    db.session.flush()
    plaintext = _invite_token(invite)
    invite.token_hash = token_digest(plaintext)
    if address is not None:
        outbox.post("invite", invite_id=invite.id)
    db.session.commit()
    return plaintext


def _invite_token(invite: Invite) -> str:
    # The expiry too: a row id that came back (SQLite may reuse the highest) does not bring an old link back.
    return signed_links.sign_for_good(signed_links.INVITE, [invite.id, int(as_utc(invite.expires_at).timestamp())])


def _invite_letter(args: dict) -> Letter | None:
    invite = db.session.get(Invite, int(args["invite_id"]))
    if invite is None or invite.email is None or invite.used_at is not None or as_utc(invite.expires_at) <= utcnow():
        return None
    invited = accounts.get_user_by_email(invite.email)
    if invited is not None and invited.is_member(invite.team_id):
        return None
    # An opt-out holds for the mailbox, whichever "+tag" the address was given with (issue 35).
    if any(not user.notify_invite for user in accounts.same_mailbox(invite.email)):
        return None
    inviter = db.session.get(User, invite.created_by_id) if invite.created_by_id else None
    return Letter(
        to=invite.email,
        subject=f"An invitation to join {invite.team.name} on Holdout",
        body=(
            f"{inviter.email if inviter else 'A member'} invites you to join the team {invite.team.name} "
            "on Holdout.\n\n"
            f"Open this link, logged in (or after making an account), to join; it works once, until "
            f"{as_utc(invite.expires_at):%Y-%m-%d %H:%M} UTC:\n\n"
            f"{outbox.link('/invites/' + _invite_token(invite))}\n\n"
            "Turn off invitation mail on your account page. If you do not know the team, ignore this mail.\n"
        ),
    )


outbox.writer("invite", _invite_letter)


def find_invite(token: str) -> Invite:
    """A usable invite (unused, unexpired) for this token, without consuming it."""
    if not token or len(token) > 200:
        raise NotFound(INVITE_INVALID)
    invite = db.session.scalar(select(Invite).where(Invite.token_hash == token_digest(token)))
    if invite is None or invite.used_at is not None or as_utc(invite.expires_at) <= utcnow():
        raise NotFound(INVITE_INVALID)
    return invite


def accept_invite(token: str, user: User) -> Team:
    """Join the invite's team and use the invite up (also when the user already is a member). An account
    already in MAX_TEAMS_PER_ACCOUNT teams is refused, and the invite stays usable, as it does for an account
    whose address is not confirmed."""
    accounts.check_verified(user)
    serialise_on(User, [user.id])
    with _refused_rolls_back():
        invite = find_invite(token)
        team = invite.team
        joining = not _is_member(team, user)
        if joining:
            _check_membership_cap(user, by_self=True)
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
    if joining:
        db.session.add(Membership(user=user, team=team))
    db.session.commit()
    return team


def _is_member(team: Team, user: User | None) -> bool:
    if user is None or user.id is None:
        return False
    return db.session.get(Membership, (user.id, team.id)) is not None


# --- the public team page ---------------------------------------------------------------------------------

SLUG_SHAPE = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")


def get_team_by_slug(slug: str) -> Team:
    """The team whose public page is /teams/<slug>; NotFound for any other (a malformed one is not asked)."""
    if not isinstance(slug, str) or not SLUG_SHAPE.match(slug):
        raise NotFound("no such team")
    team = db.session.scalar(select(Team).where(Team.slug == slug))
    if team is None:
        raise NotFound("no such team")
    return team


@dataclass(frozen=True)
class PublicMembers:
    """What the public page says of a team's people: how many they are, and the members who chose to be named
    (each by the part of their address before "@", never the whole address); the others are only counted."""

    count: int
    shown: tuple[str, ...]

    @property
    def others(self) -> int:
        return self.count - len(self.shown)


def public_members(team: Team) -> PublicMembers:
    rows = db.session.execute(
        select(Membership.shown, User.email)
        .join(User, User.id == Membership.user_id)
        .where(Membership.team_id == team.id)
        .order_by(User.email)
    ).all()
    return PublicMembers(len(rows), tuple(email.split("@", 1)[0] for shown, email in rows if shown))


def is_shown(team: Team, user: User) -> bool:
    """Whether the user (a member) chose to be named on the team's public page."""
    membership = db.session.get(Membership, (user.id, team.id))
    return bool(membership is not None and membership.shown)


def set_shown(team: Team, user: User, shown: bool) -> None:
    """A member names themselves on the team's public page, or stops (their own choice only; NotFound for
    anyone else). Naming oneself changes what the team shows: only for a confirmed address (a member from
    before issue 35, or added by a maintainer, may not be); stopping is for anyone."""
    membership = db.session.get(Membership, (user.id, team.id))
    if membership is None:
        raise NotFound("no such team")
    if shown:
        accounts.check_verified(user)
    membership.shown = bool(shown)
    db.session.commit()
