"""The maintainers' command line, `flask --app wsgi <group> ...`, one module per concept as the services are:
    catalog.py      benchmarks, splits, subsets, references, fields, tracks
    bundles.py      bundle
    intake.py       evaluate
    entries.py      entries
    people.py       users, teams, tokens
    maintenance.py  demo, backup, restore, labels
    storage.py      uploads
    jobs.py         worker, jobs
    errors.py       how a command fails: a refusal or an unreadable file exits with code 2 and its message

These names and options are an interface that scripts rely on. Errors exit with code 2.
May import: app.services, app.bundles, app.evaluation
"""

from __future__ import annotations

from flask import Flask

from app.cli import bundles, catalog, entries, intake, jobs, maintenance, people, storage

CONCEPTS = (catalog, bundles, intake, entries, people, maintenance, storage, jobs)


def register(app: Flask) -> None:
    for concept in CONCEPTS:
        for command in concept.COMMANDS:
            app.cli.add_command(command)
