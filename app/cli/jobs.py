"""Commands on the job queue: `worker` runs jobs until stopped; `jobs` lists, runs, retries or dismisses them."""

from __future__ import annotations

import logging

import click
from flask import current_app
from flask.cli import AppGroup, with_appcontext

from app.cli.errors import refusals
from app.services.jobs import console as jobs_console
from app.services.jobs import transport
from app.services.maintenance import maintainer_actions


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
    with refusals():
        for old, new in maintainer_actions.rerun_jobs(None, list(job_ids), all_failed=all_failed):
            click.echo(f"job {old}: queued again as job {new}")


@jobs_cli.command("dismiss")
@click.argument("job_ids", nargs=-1, required=True, type=click.IntRange(1, 2**31 - 1))
def jobs_dismiss(job_ids):
    """Let failed jobs be: no longer counted by /healthz or `jobs list` (audited; the record stays)."""
    with refusals():
        for job_id in maintainer_actions.dismiss_jobs(None, list(job_ids)):
            click.echo(f"job {job_id}: dismissed")


@jobs_cli.command("run")
def jobs_run():
    """Run every due job here and now, in this process (JOB_QUEUE=inline, or with no worker at hand)."""
    ran = transport.run_due_here()
    click.echo(f"{ran} jobs run")


COMMANDS = (worker_command, jobs_cli)  # what this module adds to `flask`
