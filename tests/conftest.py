"""Shared fixtures: an app on a fresh migrated database with its own folders, a client and a CLI runner.

Every test that touches a database runs on SQLite and, with `--postgres`, TEST_POSTGRES=1 or in CI, again
on a throwaway PostgreSQL cluster that the session starts itself (tests/postgres.py): such tests are
parametrised by the session-scoped `database_backend` fixture, ids `[sqlite]` and `[postgresql]`.
Each test gets a copy of a database migrated once per session (a file copy on SQLite, CREATE DATABASE
... TEMPLATE on PostgreSQL).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from flask_migrate import upgrade

from app import create_app
from app.db import db
from tests.postgres import PostgresCluster, PostgresUnavailable

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("HOLDOUT_SHARED_DATA") or REPO.parent / "shared" / "data")


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in {"", "0", "false", "no"}


def pytest_addoption(parser):
    parser.addoption(
        "--postgres",
        action="store_true",
        default=False,
        help="also run every database test on a throwaway PostgreSQL cluster (as TEST_POSTGRES=1; on in CI)",
    )


def backends(config) -> list[str]:
    postgres = config.getoption("--postgres") or _flag("TEST_POSTGRES") or _flag("CI")
    return ["sqlite", "postgresql"] if postgres else ["sqlite"]


def pytest_generate_tests(metafunc):
    if "database_backend" in metafunc.fixturenames:
        names = backends(metafunc.config)
        if metafunc.definition.get_closest_marker("one_backend"):
            names = names[:1]  # SQLite
        metafunc.parametrize("database_backend", names, indirect=True, scope="session")


def make_config(tmp_path: Path, database: Path | str) -> dict:
    """Test settings; `database` is a SQLite file or a SQLAlchemy URL."""
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database if isinstance(database, str) else f"sqlite:///{database}",
        "HIDDEN_LABELS_DIR": str(tmp_path / "hidden_labels"),
        "SUBMISSIONS_DIR": str(tmp_path / "submissions"),
    }


def start_postgres() -> PostgresCluster:
    """A new PostgreSQL cluster; skips the test where PostgreSQL is missing, fails it in CI."""
    try:
        return PostgresCluster.create()
    except PostgresUnavailable as exc:
        if _flag("CI"):
            pytest.fail(f"PostgreSQL is required in CI: {exc}")
        pytest.skip(f"PostgreSQL unavailable: {exc}")


@pytest.fixture(scope="session")
def postgres_cluster():
    """The session's PostgreSQL cluster (started on first use, removed at the end)."""
    cluster = start_postgres()
    yield cluster
    cluster.remove()


@pytest.fixture
def own_postgres_cluster():
    """A cluster of the test's own, for tests that stop and start the database server."""
    cluster = start_postgres()
    yield cluster
    cluster.remove()


class SqliteBackend:
    name = "sqlite"

    def new_database(self, folder: Path, template: Path | str | None = None, name: str = "holdout") -> str:
        """A SQLite file in `folder` (a copy of `template` when given); returns its URL."""
        path = Path(folder) / f"{name}.sqlite3"
        if template is not None:
            shutil.copy(template, path)
        return f"sqlite:///{path}"

    def drop(self, url: str) -> None:
        """Nothing to do: the file goes with its temporary folder."""


class PostgresBackend:
    name = "postgresql"

    def __init__(self, cluster: PostgresCluster):
        self.cluster = cluster

    def new_database(self, folder: Path, template: str | None = None, name: str = "holdout") -> str:
        """A new database on the session's cluster (a copy of the `template` URL's database when given)."""
        template_name = template.rsplit("/", 1)[1] if template else None
        return self.cluster.url(self.cluster.create_database(name, template_name))

    def drop(self, url: str) -> None:
        self.cluster.drop_database(url.rsplit("/", 1)[1])


@pytest.fixture(scope="session")
def database_backend(request):
    """'sqlite' or 'postgresql' (parametrised): makes and drops databases of that kind."""
    if request.param == "sqlite":
        return SqliteBackend()
    return PostgresBackend(request.getfixturevalue("postgres_cluster"))


@pytest.fixture(scope="session")
def migrated_database(database_backend, tmp_path_factory) -> Path | str:
    """Run the migrations once; each test gets a copy of the result (SQLite: the file; PostgreSQL: the
    template database's URL)."""
    folder = tmp_path_factory.mktemp("template")
    url = database_backend.new_database(folder, name="template")
    app = create_app(make_config(folder, url))
    with app.app_context():
        upgrade()
        db.engine.dispose()
    if database_backend.name == "sqlite":
        return Path(url[len("sqlite:///") :])
    return url


@pytest.fixture
def database_url(database_backend, migrated_database, tmp_path) -> str:
    """A fresh copy of the migrated database for this test, dropped afterwards."""
    url = database_backend.new_database(tmp_path, template=migrated_database)
    yield url
    database_backend.drop(url)


@pytest.fixture
def app(tmp_path, database_url):
    app = create_app(make_config(tmp_path, database_url))
    yield app
    with app.app_context():
        db.engine.dispose()


@pytest.fixture(scope="module")
def module_app(database_backend, migrated_database, tmp_path_factory):
    """An app on a database of its own for a whole module (per backend): for a world that is expensive to
    build and that the module's tests only read. A test that changes anything uses `app`."""
    folder = tmp_path_factory.mktemp("module")
    url = database_backend.new_database(folder, template=migrated_database)
    app = create_app(make_config(folder, url))
    yield app
    with app.app_context():
        db.engine.dispose()
    database_backend.drop(url)


@pytest.fixture
def ctx(app):
    """An application context for calling services directly."""
    with app.app_context():
        yield app


@pytest.fixture
def client(app):
    return app.test_client()


@pytest.fixture
def runner(app):
    return app.test_cli_runner()


@pytest.fixture
def shared_data() -> Path:
    if not SHARED_DATA.is_dir():
        pytest.skip(f"real benchmark data not found at {SHARED_DATA} (set HOLDOUT_SHARED_DATA)")
    return SHARED_DATA
