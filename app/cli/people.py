"""Commands on people: accounts, teams and API tokens (`users`, `teams`, `tokens`)."""

from __future__ import annotations

import click
from flask.cli import AppGroup

from app.cli.errors import CliError, refusals
from app.services.maintenance import maintainer_actions
from app.services.people import accounts, teams, unconfirmed

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
    with refusals():
        user = maintainer_actions.create_user(None, email, password, admin=admin, via="cli")
    click.echo(f"created user {user.email}{' (admin)' if user.is_admin else ''}")


@users_cli.command("sign-out")
@click.argument("email")
def users_sign_out(email):
    """End every session of EMAIL at once, on every server (API tokens are revoked separately)."""
    with refusals():
        user = maintainer_actions.sign_out_everywhere(None, email, via="cli")
    click.echo(f"signed {user.email} out everywhere")


@users_cli.command("prune-unconfirmed")
@click.option("--dry-run", is_flag=True, help="Only list what would be removed.")
def users_prune_unconfirmed(dry_run):
    """Remove accounts whose address was not confirmed within 7 days of registering, and the teams they hold
    alone (no submission, no other member): their addresses and team names are free again. An account with a
    submission is kept. Each removal is in the audit log; run daily (serving/systemd/holdout-prune.timer)."""
    with refusals():
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
    with refusals():
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
    with refusals():
        token, plaintext = maintainer_actions.create_token(None, _user(email), name, via="cli")
    click.echo(f"created token {token.name!r} ({token.prefix}...) for {token.user.email}; it is shown only once:")
    click.echo(plaintext)


COMMANDS = (users_cli, teams_cli, tokens_cli)  # what this module adds to `flask`
