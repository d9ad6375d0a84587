"""Shared fixtures: an app on a migrated database with its own folders, a client and a CLI runner.

Every test that touches a database (through the `database_backend` fixture) runs on SQLite. With
`--postgres`, TEST_POSTGRES=1 or in CI, the tests whose behaviour depends on the database dialect run
again on a throwaway PostgreSQL cluster that the session starts itself (tests/postgres.py): those carry
`@pytest.mark.postgres(reason="...")` (or a module's `pytestmark`), and the reason is required (a test
without one is a collection error). Such tests are parametrised `[sqlite]` and `[postgresql]`.

Databases: the migrations run once per session (per xdist worker) into a template; each worker then makes
one working database from it (a file copy on SQLite, CREATE DATABASE ... TEMPLATE on PostgreSQL) that
every test shares and that is emptied after each test (DELETE on SQLite, TRUNCATE ... RESTART IDENTITY
on PostgreSQL; alembic_version is kept), so ids start at 1 in every test. A test that changed the schema
(its fingerprint differs from the template's) or left a lock behind gets the working database rebuilt
from the template. The process's in-memory caches (app.lru memos: gold sets, board snapshots, pages) are
cleared between tests too: they are keyed by the database URL and ids, which repeat from test to test.
Tests that need a database of their own (migrations from empty, restores, servers) still make one.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import sqlite3
import sys
from pathlib import Path

import jinja2
import jinja2.bccache
import pytest
from flask.testing import FlaskClient, FlaskCliRunner
from flask_migrate import upgrade

from app import create_app, observability, synthetic
from app.db import db
from app.evaluation.tasks.nlvr import synthetic as nlvr_synthetic
from app.lru import LRU
from tests.postgres import PostgresCluster, PostgresUnavailable

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("HOLDOUT_SHARED_DATA") or REPO.parent / "shared" / "data")
KEPT_TABLES = {"alembic_version"}
# A cheap password hash for tests about something else than password storage (pbkdf2 with 1,000 rounds
# instead of scrypt's 128 ms): logins check it all the same. `@pytest.mark.real_password_hash` opts out.
CHEAP_HASH = "pbkdf2:sha256:1000"


# --- synthetic data, made once per process ------------------------------------------------------------
# app.synthetic's generators are pure functions of their arguments (seeded), and tests build the same gold
# files and prediction files over and over (every test on both databases, the demo in several tests):
# their results are kept per process. Bytes are immutable; _binary_gold's lists and arrays are copied on
# the way out. tests/unit/test_synthetic.py (marked `synthetic_uncached`) checks the generators themselves
# and always calls them afresh.
_synthetic_memo_on = True


def _memoised(function, copy=None, size=64):
    cached = functools.lru_cache(maxsize=size)(function)

    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        if not _synthetic_memo_on:
            return function(*args, **kwargs)
        try:
            result = cached(*args, **kwargs)
        except TypeError as exc:  # an unhashable argument: no memo
            if "unhashable" not in str(exc):
                raise
            return function(*args, **kwargs)
        return copy(result) if copy else result

    wrapper.uncached = function
    return wrapper


if not hasattr(synthetic.predictions, "uncached"):
    for _name in ("nlvr2_gold", "nlvr_gold", "vcr_gold", "nlvr2_annotations", "predictions"):
        setattr(synthetic, _name, _memoised(getattr(synthetic, _name)))
    # The NLVR family's reader of its own synthetic gold, shared by its prediction generators.
    nlvr_synthetic._binary_gold = _memoised(
        nlvr_synthetic._binary_gold, copy=lambda found: (list(found[0]), found[1].copy(), found[2].copy()), size=64
    )


# --- URL builders, compiled once per process -----------------------------------------------------------
# Each test makes a new app (its configuration may change), and 95% of create_app's time (about 50 ms) is
# werkzeug compiling a URL builder function for each of the ~55 rules through `ast` and `compile`. The
# function depends only on the rule's text, its parsed parts, its defaults and its converters' kinds, and
# reads the rule and its converters from its first argument when called (it is bound to each rule with
# __get__), so one compiled per distinct rule serves every app. Without werkzeug's private method (another
# version), nothing is patched.
def _share_url_builders() -> None:
    from werkzeug.routing.rules import Rule

    compile_builder = getattr(Rule, "_compile_builder", None)
    if compile_builder is None or getattr(compile_builder, "shared", False):
        return
    builders: dict = {}

    def shared(self, append_unknown: bool = True):
        key = (
            self.rule,
            self.subdomain,
            self.host,
            tuple(self._trace),
            repr(sorted((self.defaults or {}).items())),
            tuple(sorted((name, type(converter).__qualname__) for name, converter in self._converters.items())),
            append_unknown,
        )
        found = builders.get(key)
        if found is None:
            found = builders[key] = compile_builder(self, append_unknown)
        return found

    shared.shared = True
    Rule._compile_builder = shared


_share_url_builders()


@pytest.fixture(autouse=True)
def _synthetic_memo(request):
    global _synthetic_memo_on
    if request.node.get_closest_marker("synthetic_uncached"):
        _synthetic_memo_on = False
        yield
        _synthetic_memo_on = True
    else:
        yield


def _flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() not in {"", "0", "false", "no"}


def pytest_configure(config):
    """Temporary folders (every test's databases, gold files and uploads) on tmpfs where there is one:
    the app fsyncs gold files, uploads and SQLite commits, which on a disk cost more than the tests' work.
    HOLDOUT_TEST_TMP chooses another folder; an explicit --basetemp or PYTEST_DEBUG_TEMPROOT wins."""
    if config.option.basetemp or os.environ.get("PYTEST_DEBUG_TEMPROOT") or hasattr(config, "workerinput"):
        return
    folder = os.environ.get("HOLDOUT_TEST_TMP") or "/dev/shm"
    try:
        free = shutil.disk_usage(folder).free
    except OSError:
        return
    if os.access(folder, os.W_OK) and free > 2 * 1024**3:
        os.environ["PYTEST_DEBUG_TEMPROOT"] = folder


def pytest_addoption(parser):
    parser.addoption(
        "--postgres",
        action="store_true",
        default=False,
        help="also run the tests marked `postgres` on a throwaway PostgreSQL cluster (as TEST_POSTGRES=1; on in CI)",
    )


def postgres_enabled(config) -> bool:
    return config.getoption("--postgres") or _flag("TEST_POSTGRES") or _flag("CI")


def backends(config) -> list[str]:
    return ["sqlite", "postgresql"] if postgres_enabled(config) else ["sqlite"]


def _postgres_reason(node) -> str | None:
    """The reason of the closest `postgres` marker: a required keyword (or the first argument)."""
    marker = node.get_closest_marker("postgres")
    if marker is None:
        return None
    reason = marker.kwargs.get("reason") or (marker.args[0] if marker.args else "")
    return reason.strip() if isinstance(reason, str) else ""


def pytest_generate_tests(metafunc):
    if "database_backend" in metafunc.fixturenames:
        names = ["sqlite"]
        if _postgres_reason(metafunc.definition) and not metafunc.definition.get_closest_marker("one_backend"):
            names = backends(metafunc.config)
        metafunc.parametrize("database_backend", names, indirect=True, scope="session")


def pytest_collection_modifyitems(config, items):
    """A `postgres` marker must say why the test depends on the dialect (a test marked `one_backend` in a
    module marked `postgres` stays on SQLite: its docstring says why). A parameter set marked `one_backend`
    (`pytest.param(..., marks=pytest.mark.one_backend)`, a comment beside it says why) runs on SQLite alone
    while the test's other sets run on both: its `[postgresql]` item is deselected here, since parameter marks
    are not seen when the backends are chosen. Then the modules longest first."""
    wrong, kept, dropped = [], [], []
    for item in items:
        if _postgres_reason(item) == "":
            wrong.append(f"{item.nodeid}: @pytest.mark.postgres needs reason='why it depends on the dialect'")
        callspec = getattr(item, "callspec", None)
        on_postgres = callspec is not None and callspec.params.get("database_backend") == "postgresql"
        (dropped if on_postgres and item.get_closest_marker("one_backend") else kept).append(item)
    if wrong:
        raise pytest.UsageError("bad database markers:\n" + "\n".join(sorted(set(wrong))))
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = kept
    _longest_modules_first(items)


# Seconds each test module took in a CI run (tests/module_seconds.json; remake it from a run's JUnit XML
# with `python -m tests.module_seconds JUNIT.xml`). With `--dist loadfile` the workers take whole modules in
# collection order, so the longest go first and the run ends on short ones spread over both workers, instead
# of one worker finishing a long module while the other waits (longest-processing-time-first scheduling).
MODULE_SECONDS: dict[str, float] = json.loads((Path(__file__).parent / "module_seconds.json").read_text())
NEW_MODULE_SECONDS = 10.0  # a module not measured yet


def _longest_modules_first(items) -> None:
    # A stable sort: tests keep their order within a module.
    items.sort(key=lambda item: -MODULE_SECONDS.get(item.nodeid.split("::")[0], NEW_MODULE_SECONDS))


def make_config(tmp_path: Path, database: Path | str) -> dict:
    """Test settings; `database` is a SQLite file or a SQLAlchemy URL."""
    return {
        "TESTING": True,
        "SQLALCHEMY_DATABASE_URI": database if isinstance(database, str) else f"sqlite:///{database}",
        "HIDDEN_LABELS_DIR": str(tmp_path / "hidden_labels"),
        "SUBMISSIONS_DIR": str(tmp_path / "submissions"),
        # Jobs run in the test's own process, whatever the database (tests/service/test_job_worker.py runs
        # real workers).
        "JOB_QUEUE": "inline",
    }


# --- the process's caches ------------------------------------------------------------------------------

_caches: list[LRU] = []
_caches_seen_modules = -1


def clear_process_caches() -> None:
    """Empty every module-level LRU memo of the app's modules (found by looking, so a new one is
    included): they are keyed by database URL and ids, and every test reuses both."""
    global _caches_seen_modules
    if len(sys.modules) != _caches_seen_modules:
        _caches_seen_modules = len(sys.modules)
        _caches[:] = [
            value
            for name, module in list(sys.modules.items())
            if module is not None and (name == "app" or name.startswith(("app.", "serving")))
            for value in list(vars(module).values())
            if isinstance(value, LRU)
        ]
    for cache in _caches:
        cache.clear()
    # The storage failures this process saw (what /healthz reports for 5 minutes) belong to the test that
    # caused them, not to the next one.
    observability.forget_storage_failures()


# Set by pytest itself, and by a library on its first import (OpenMP, through numpy's or torch's loader).
_ENVIRONMENT_NOT_WATCHED = {"PYTEST_CURRENT_TEST", "KMP_DUPLICATE_LIB_OK", "KMP_INIT_AT_FORK"}


_environment_before: dict[str, str] = {}


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _environment_before.clear()
    _environment_before.update(os.environ)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    """A test that leaves os.environ changed once its fixtures are torn down (e.g. by running gunicorn.conf.py
    in-process, which sets PROMETHEUS_MULTIPROC_DIR) fails its teardown here; otherwise some later test on its
    worker fails instead (/metrics read that folder). The environment is put back either way."""
    outcome = yield
    if call.when != "teardown":
        return
    before = _environment_before
    changed = sorted(
        name
        for name in before.keys() | os.environ.keys()
        if before.get(name) != os.environ.get(name) and name not in _ENVIRONMENT_NOT_WATCHED
    )
    if changed:
        os.environ.clear()
        os.environ.update(before)
        report = outcome.get_result()
        report.outcome = "failed"
        report.longrepr = f"the test left os.environ changed: {', '.join(changed)}"


@pytest.fixture(autouse=True)
def cheap_password_hashes(request, monkeypatch):
    if request.node.get_closest_marker("real_password_hash"):
        yield
    else:
        from werkzeug.security import generate_password_hash

        from app.services.people import accounts

        monkeypatch.setattr(
            accounts, "generate_password_hash", lambda password: generate_password_hash(password, method=CHEAP_HASH)
        )
        yield
    from app.services.people import accounts

    accounts._dummy_hash.cache_clear()  # made under whichever hash was in force


# --- PostgreSQL ----------------------------------------------------------------------------------------


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
    """The session's (this worker's) PostgreSQL cluster (started on first use, removed at the end)."""
    cluster = start_postgres()
    yield cluster
    cluster.remove()


@pytest.fixture
def own_postgres_cluster():
    """A cluster of the test's own, for tests that stop and start the database server."""
    cluster = start_postgres()
    yield cluster
    cluster.remove()


# --- backends ------------------------------------------------------------------------------------------


class SqliteBackend:
    name = "sqlite"

    def new_database(self, folder: Path, template: Path | str | None = None, name: str = "holdout") -> str:
        """A SQLite file in `folder` (a copy of `template` when given); returns its URL."""
        path = Path(folder) / f"{name}.sqlite3"
        for stale in (Path(f"{path}-wal"), Path(f"{path}-shm")):
            stale.unlink(missing_ok=True)
        if template is not None:
            shutil.copy(template, path)
        return f"sqlite:///{path}"

    def drop(self, url: str) -> None:
        """Nothing to do: the file goes with its temporary folder."""

    @staticmethod
    def _path(url: str) -> str:
        return url[len("sqlite:///") :]

    def fingerprint(self, url: str) -> str:
        with sqlite3.connect(self._path(url), timeout=30) as connection:
            rows = (
                connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
                + connection.execute("SELECT * FROM alembic_version").fetchall()
            )
        connection.close()
        return hashlib.sha256(repr(rows).encode()).hexdigest()

    def empty(self, url: str, fingerprint: str) -> bool:
        """Delete every row but alembic_version's; False when the schema is not the template's."""
        connection = sqlite3.connect(self._path(url), timeout=5, isolation_level=None)
        try:
            schema = connection.execute("SELECT type, name, sql FROM sqlite_master ORDER BY type, name").fetchall()
            versions = connection.execute("SELECT * FROM alembic_version").fetchall()
            if hashlib.sha256(repr(schema + versions).encode()).hexdigest() != fingerprint:
                return False
            tables = [name for kind, name, _ in schema if kind == "table"]
            connection.execute("PRAGMA foreign_keys=OFF")
            connection.execute("BEGIN IMMEDIATE")
            for table in tables:
                if table not in KEPT_TABLES and not table.startswith("sqlite_"):
                    connection.execute(f'DELETE FROM "{table}"')
            if "sqlite_sequence" in tables:
                connection.execute("DELETE FROM sqlite_sequence")
            connection.execute("COMMIT")
            return True
        except sqlite3.Error:
            return False
        finally:
            connection.close()


class PostgresBackend:
    name = "postgresql"
    # The schema, read from pg_catalog (information_schema's views cost ten times as much): every column of
    # every table and index with its type, every constraint, and the migration revision.
    FINGERPRINT = """
        SELECT md5(coalesce(string_agg(line, ';' ORDER BY line), '')) FROM (
            SELECT c.relname || '.' || a.attname || ':' || c.relkind::text || ':' || a.atttypid || ':' || a.atttypmod
                   || ':' || a.attnotnull || ':' || a.attnum AS line
              FROM pg_attribute AS a JOIN pg_class AS c ON c.oid = a.attrelid
             WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
            UNION ALL SELECT conname || ':' || contype::text || ':' || conrelid FROM pg_constraint
                       WHERE connamespace = 'public'::regnamespace
            UNION ALL SELECT 'version:' || version_num FROM alembic_version
        ) AS schema
    """
    # Each table with the sequences it owns (its serial ids).
    SEQUENCES = """
        SELECT t.relname, s.relname FROM pg_class AS s
          JOIN pg_depend AS d ON d.objid = s.oid AND d.classid = 'pg_class'::regclass
                              AND d.refclassid = 'pg_class'::regclass
          JOIN pg_class AS t ON t.oid = d.refobjid
         WHERE s.relkind = 'S' AND s.relnamespace = 'public'::regnamespace
    """

    def __init__(self, cluster: PostgresCluster):
        self.cluster = cluster
        self._used_query: dict[str, str] = {}
        self._connections: dict[str, object] = {}

    def new_database(self, folder: Path, template: str | None = None, name: str = "holdout") -> str:
        """A new database on the session's cluster (a copy of the `template` URL's database when given)."""
        template_name = template.rsplit("/", 1)[1] if template else None
        return self.cluster.url(self.cluster.create_database(name, template_name))

    def drop(self, url: str) -> None:
        """Drop the database (and this backend's connection to it, kept open between tests)."""
        self._used_query.pop(url, None)
        self._close(url)
        self.cluster.drop_database(url.rsplit("/", 1)[1])

    def fingerprint(self, url: str) -> str:
        with self.cluster.connect(url.rsplit("/", 1)[1]) as connection:
            return connection.execute(self.FINGERPRINT).fetchone()[0]

    def _used_tables_query(self, connection) -> str:
        """One query naming the tables that hold a row or whose id sequence has been used."""
        tables = [row[0] for row in connection.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")]
        sequences: dict[str, list[str]] = {}
        for table, sequence in connection.execute(self.SEQUENCES):
            sequences.setdefault(table, []).append(sequence)
        parts = []
        for table in sorted(set(tables) - KEPT_TABLES):
            used = [f'EXISTS (SELECT 1 FROM "{table}")'] + [
                f'(SELECT is_called FROM "{sequence}")' for sequence in sequences.get(table, [])
            ]
            parts.append(f"SELECT '{table}' WHERE " + " OR ".join(used))
        return " UNION ALL ".join(parts) or "SELECT '' WHERE false"

    def empty(self, url: str, fingerprint: str) -> bool:
        """TRUNCATE ... RESTART IDENTITY every table a test used (one with a row or a used id sequence; all
        but alembic_version); False when the schema is not the template's or a connection left open by the
        test holds a lock."""
        import psycopg

        try:
            connection = self._connections.get(url)
            if connection is None or connection.closed:
                connection = self._connections[url] = self.cluster.connect(url.rsplit("/", 1)[1])
                connection.execute("SET lock_timeout = '3s'")
            if connection.execute(self.FINGERPRINT).fetchone()[0] != fingerprint:
                return False
            if url not in self._used_query:
                self._used_query[url] = self._used_tables_query(connection)
            used = [row[0] for row in connection.execute(self._used_query[url])]
            if used:
                connection.execute(
                    "TRUNCATE " + ", ".join(f'"{table}"' for table in used) + " RESTART IDENTITY CASCADE"
                )
            return True
        except psycopg.Error:
            self._close(url)
            return False

    def _close(self, url: str) -> None:
        connection = self._connections.pop(url, None)
        if connection is not None:
            connection.close()


@pytest.fixture(scope="session")
def database_backend(request):
    """'sqlite' or 'postgresql' (parametrised): makes and drops databases of that kind."""
    if request.param == "sqlite":
        return SqliteBackend()
    return PostgresBackend(request.getfixturevalue("postgres_cluster"))


# Per backend, the migrated template and the working database, made once per session (per worker) and kept
# here rather than by the fixtures below: `database_backend` is a parametrised session fixture, so pytest tears
# it down, with every fixture that uses it, whenever the next test wants the other backend (a module's [sqlite]
# tests, then its [postgresql] ones, then the next module's [sqlite] ones...), and each switch ran every
# migration again. The PostgreSQL cluster goes at the end of the session with everything in it; SQLite files
# go with the session's temporary folders.
_templates: dict[str, Path | str] = {}
_working_databases: dict[str, WorkingDatabase] = {}


@pytest.fixture(scope="session")
def migrated_database(database_backend, tmp_path_factory) -> Path | str:
    """Run the migrations once per session (per worker) and backend; databases are copies of the result
    (SQLite: the file; PostgreSQL: the template database's URL)."""
    found = _templates.get(database_backend.name)
    if found is not None:
        return found
    folder = tmp_path_factory.mktemp("template")
    url = database_backend.new_database(folder, name="template")
    app = create_app(make_config(folder, url))
    with app.app_context():
        upgrade()
        db.engine.dispose()
    found = Path(url[len("sqlite:///") :]) if database_backend.name == "sqlite" else url
    _templates[database_backend.name] = found
    return found


class WorkingDatabase:
    """The worker's database that the tests share, emptied after each one (rebuilt when that fails)."""

    def __init__(self, backend, template, folder: Path):
        self.backend = backend
        self.template = template
        self.folder = folder
        self.url = backend.new_database(folder, template=template, name="working")
        self.fingerprint = backend.fingerprint(self.url)

    def reset(self) -> None:
        if not self.backend.empty(self.url, self.fingerprint):
            self.backend.drop(self.url)
            self.url = self.backend.new_database(self.folder, template=self.template, name="working")


@pytest.fixture(scope="session")
def working_database(database_backend, migrated_database, tmp_path_factory) -> WorkingDatabase:
    """The worker's working database on this backend (made on first use, kept for the session)."""
    working = _working_databases.get(database_backend.name)
    if working is None:
        working = WorkingDatabase(database_backend, migrated_database, tmp_path_factory.mktemp("working"))
        _working_databases[database_backend.name] = working
    return working


@pytest.fixture
def database_url(working_database) -> str:
    """The worker's migrated database, empty (ids from 1), with the process's caches cleared; emptied
    again after the test."""
    clear_process_caches()
    yield working_database.url
    clear_process_caches()
    working_database.reset()


class _SharedTemplateCode(jinja2.BytecodeCache):
    """Compiled templates kept per process for every app's Jinja environment, keyed by template name and
    checksum of the source (so a changed template is compiled again): each test's new app would otherwise
    parse and compile every template it renders (about a quarter of a web test's time)."""

    def __init__(self):
        self._code: dict[tuple[str, str], bytes] = {}

    def load_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        found = self._code.get((bucket.key, bucket.checksum))
        if found is not None:
            bucket.bytecode_from_string(found)

    def dump_bytecode(self, bucket: jinja2.bccache.Bucket) -> None:
        self._code[(bucket.key, bucket.checksum)] = bucket.bytecode_to_string()


_template_code = _SharedTemplateCode()


class SettledClient(FlaskClient):
    """A test client whose request has ended only once the jobs it started beside it (inline mail) have run.

    A test calls services directly, outside any request, so its transactions begin deferred (only requests
    that write begin as writers): on SQLite such a transaction that reads, then writes after a job beside
    it committed, fails at once with "database is locked". A browser's next request begins as a writer and
    waits instead; the test's next step should not depend on the mail thread's timing either."""

    def open(self, *args, **kwargs):
        from app.services.jobs import transport

        response = super().open(*args, **kwargs)
        assert transport.wait_beside(), "a job started by the request is still running"
        return response


class SettledCliRunner(FlaskCliRunner):
    """The same for a command (`flask splits reveal` mails the teams): a real command's process waits for its
    mail before it exits; a test's runner returns once the mail is sent too."""

    def invoke(self, *args, **kwargs):
        from app.services.jobs import transport

        result = super().invoke(*args, **kwargs)
        assert transport.wait_beside(), "a job started by the command is still running"
        return result


@pytest.fixture
def app(tmp_path, database_url):
    """A new app for each test (a test may change its configuration), with the test's own folders."""
    app = create_app(make_config(tmp_path, database_url))
    app.jinja_env.bytecode_cache = _template_code
    app.test_client_class = SettledClient
    app.test_cli_runner_class = SettledCliRunner
    yield app
    from app.services.jobs import transport

    # The jobs the test started beside it end before its database goes (the job threads serve the next test),
    # and a failed mail's retry waiting beside is dropped.
    transport.wait_beside()
    transport.cancel_retries()
    with app.app_context():
        db.engine.dispose()


@pytest.fixture(scope="module")
def module_app(database_backend, migrated_database, tmp_path_factory):
    """An app on a database of its own for a whole module (per backend): for a world that is expensive to
    build and that the module's tests only read. A test that changes anything uses `app`."""
    folder = tmp_path_factory.mktemp("module")
    url = database_backend.new_database(folder, template=migrated_database, name="module")
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


@pytest.fixture(scope="session")
def sink():
    """A real SMTP server on loopback (tests/support/smtp_sink.py), one per test process."""
    from tests.support.smtp_sink import SmtpSink

    running = SmtpSink().start()
    yield running
    running.stop()


@pytest.fixture
def mail_app(app, sink):
    """The test's app sending its mail to `sink` (emptied first); the test ends with no mail job running."""
    from app.services.jobs import transport

    app.config.update(sink.config())
    with sink.lock:
        sink.messages.clear()
    sink.forgive()
    yield app
    assert transport.wait_beside(), "a mail job still running at the end of the test"


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
