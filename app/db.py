"""The database handle: one session per request, a declarative base with named constraints, and which
database errors no retry cures."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterable
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TYPE_CHECKING

from flask import current_app
from flask_migrate import Migrate
from flask_sqlalchemy import SQLAlchemy
from sqlalchemy import MetaData, event, select
from sqlalchemy.engine import Engine, make_url
from sqlalchemy.orm import DeclarativeBase, Session

# Named constraints make migrations reproducible across SQLite and PostgreSQL
# (SQLite batch mode can only drop a constraint it can name).
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)


db = SQLAlchemy(model_class=Base)

# The base the models derive from: Flask-SQLAlchemy's db.Model at run time (it adds `query` and the table
# names), typed as the declarative Base it is made from, since a checker cannot follow an attribute as a base.
if TYPE_CHECKING:
    Model = Base
else:
    Model = db.Model
migrate = Migrate(compare_type=True, render_as_batch=True)

_immediate: ContextVar[bool] = ContextVar("sqlite_immediate", default=False)


def _on_sqlite() -> bool:
    return db.session.get_bind().dialect.name == "sqlite"


def release_write_lock() -> None:
    """Before slow work that touches no shared state: end a transaction that may hold SQLite's write lock
    (write requests take it when they begin). PostgreSQL reads take no lock, so its transaction stays open
    for the write_transaction(continue_open=True) that follows: one round trip to end it and two to begin
    again (a pooled connection is pinged) are saved."""
    if _on_sqlite():
        db.session.rollback()


def begin_reading() -> None:
    """Begin the session's transaction for reading only, unless one is open: on PostgreSQL in autocommit
    mode, which spares the round trips of BEGIN and ROLLBACK (reads see the latest commits either way under
    READ COMMITTED). For the pages everyone reads; a write later in the request still goes through
    write_transaction, which ends this and begins a real transaction."""
    if _on_sqlite() or db.session().in_transaction():
        return
    db.session.connection(execution_options={"isolation_level": "AUTOCOMMIT"})


@contextmanager
def write_transaction(continue_open: bool = False):
    """Begin the session's next transaction as a writer.

    SQLite: BEGIN IMMEDIATE takes the write lock up front, so two requests cannot both read a quota and
    then both insert (a deferred transaction would fail to upgrade instead of waiting). PostgreSQL callers
    add SELECT ... FOR UPDATE on the row they serialise on. Ends any transaction already open, except on
    PostgreSQL with continue_open (READ COMMITTED: each later statement still sees every commit).
    """
    if continue_open and not _on_sqlite() and db.session().in_transaction():
        yield
        return
    db.session.rollback()
    token = _immediate.set(True)
    try:
        db.session.connection()  # begins now, under the flag
    finally:
        _immediate.reset(token)
    yield


def serialise_on(entity, ids: Iterable[int]) -> None:
    """Serialise the session's transaction with every other that serialises on one of these rows (by id),
    until it ends, so that what it counts next stays true until its commit.

    PostgreSQL: SELECT ... FOR UPDATE on the rows, in id order (two transactions locking several never wait
    for each other in a cycle). SQLite: the database's write lock, taken now: a request that began as a writer
    holds it already; a transaction with changes takes it by flushing them; any other is ended and begun again
    as a writer (BEGIN IMMEDIATE waits for the lock; a read transaction could not upgrade once another writer
    has committed)."""
    wanted = sorted(set(ids))
    if not wanted:
        return
    if not _on_sqlite():
        db.session.execute(select(entity.id).where(entity.id.in_(wanted)).order_by(entity.id).with_for_update())
        return
    session = db.session()
    if _immediate.get():
        return
    if session.new or session.dirty or session.deleted or session.info.get("flushed"):
        session.flush()
        return
    with write_transaction():
        pass


def may_hold_write_lock() -> bool:
    """Whether the session's open transaction may hold a write lock: it has changes, pending or flushed,
    or this request began its transactions as a writer. Work done on a connection of its own (a shared
    cache) must not wait for such a lock held by its own caller."""
    return bool(_immediate.get() or has_changes())


def has_changes() -> bool:
    """Whether the session's open transaction has changes of its own, pending or flushed (ending it would
    lose them)."""
    session = db.session()
    return bool(session.new or session.dirty or session.deleted or session.info.get("flushed"))


# --- one transaction for many service calls -------------------------------------------------------------
# A bundle applies many changes (a benchmark, its splits, policies, references, a label correction) that the
# services otherwise commit one by one; inside `one_transaction` their `commit()` only flushes, and the block
# commits once at its end, or rolls back (a dry run always does). A direct session.commit() inside the block
# would break that promise silently, so it raises instead.
_HELD = "held_transactions"
_ON_ROLLBACK = "on_rollback"


def commit() -> None:
    """What a service calls to commit its change: a commit, or a flush inside one_transaction."""
    if db.session.info.get(_HELD):
        db.session.flush()
    else:
        db.session.commit()


def on_rollback(undo) -> None:
    """Run ``undo`` (a callable) if the surrounding one_transaction rolls back: a file written for a change that
    is not kept. Outside one_transaction nothing is held, and the caller's own error handling applies."""
    if db.session.info.get(_HELD):
        db.session.info.setdefault(_ON_ROLLBACK, []).append(undo)


@contextmanager
def one_transaction(*, keep: bool = True):
    """Everything the block does is committed once at its end (``keep``) or rolled back (not ``keep``: a dry
    run; and on any error), with the files written for it removed."""
    info = db.session.info
    if info.get(_HELD):
        raise RuntimeError("one_transaction does not nest")
    info[_HELD] = 1
    try:
        yield
        info[_HELD] = 0
        if keep:
            db.session.commit()
            info.pop(_ON_ROLLBACK, None)
    finally:
        info[_HELD] = 0
        undo = info.pop(_ON_ROLLBACK, [])
        if undo or db.session().in_transaction():
            db.session.rollback()
        for step in reversed(undo):
            step()


@event.listens_for(Session, "before_commit")
def _no_commit_while_held(session) -> None:
    if session.info.get(_HELD):
        raise RuntimeError("a direct commit inside one_transaction: call app.db.commit() instead")


@event.listens_for(Session, "after_flush")
def _flushed(session, _context) -> None:
    session.info["flushed"] = True


@event.listens_for(Session, "after_transaction_end")
def _ended(session, transaction) -> None:
    if transaction.parent is None:
        session.info.pop("flushed", None)


def begin_writes_immediately(flag: bool) -> None:
    """For the rest of this request, begin SQLite transactions as writers (see write_transaction).

    A request that reads and then writes in a deferred transaction fails at once with "database is
    locked" if another writer committed in between; state-changing requests avoid that by taking the
    lock when they begin. No effect on PostgreSQL.
    """
    _immediate.set(flag)


@event.listens_for(Engine, "connect")
def _sqlite_connect(dbapi_connection, _record) -> None:
    if not type(dbapi_connection).__module__.startswith("sqlite3"):
        return
    # Let SQLAlchemy emit BEGIN itself (pysqlite's own would always be deferred), see _sqlite_begin.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA foreign_keys=ON")  # SQLite ignores foreign keys unless asked
    cursor.execute("PRAGMA journal_mode=WAL")  # readers run beside one writer
    cursor.execute("PRAGMA busy_timeout=30000")
    # The database holds password and token hashes and every stored prediction: owner only. SQLite
    # creates its -wal and -shm files with the main file's mode.
    for _, _, path in cursor.execute("PRAGMA database_list").fetchall():
        for name in (path, f"{path}-wal", f"{path}-shm") if path else ():
            with contextlib.suppress(FileNotFoundError, PermissionError):
                os.chmod(name, 0o600)
    cursor.close()


@event.listens_for(Engine, "begin")
def _sqlite_begin(connection) -> None:
    if connection.dialect.name == "sqlite":
        connection.exec_driver_sql("BEGIN IMMEDIATE" if _immediate.get() else "BEGIN")


@contextmanager
def own_session():
    """A session of its own for the block (a new app context: Flask-SQLAlchemy keeps one session per context),
    committed or rolled back there alone: for work run beside a caller's transaction (a job run after a
    commit, or by a reader) that must neither see nor end the caller's."""
    with current_app.app_context():
        yield


def in_app_context(work):
    """`work` made to run in a context of the current application: for a thread of its own (mail sent
    beside a request in-process), which has no context of its own."""
    app = current_app._get_current_object()  # type: ignore[attr-defined]

    def run() -> None:
        with app.app_context():
            work()

    return run


# libpq's parameters for every connection to PostgreSQL: give up connecting after 5 s, and drop a connection whose
# sent data has gone unacknowledged for 10 s (ms). Without the second, a database host that vanishes (a machine
# lost, a network cut: no reset ever comes) leaves a pooled connection's ping waiting on TCP's retransmissions for
# about 15 minutes, and the worker with it until gunicorn kills it, /healthz included. A long query is unaffected:
# the server acknowledges what it was sent. A parameter given in DATABASE_URL's query wins.
POSTGRES_CONNECT_ARGS = {"connect_timeout": 5, "tcp_user_timeout": 10_000}


def engine_options(database_url: str) -> dict:
    """SQLALCHEMY_ENGINE_OPTIONS for the database URL.

    PostgreSQL: test a pooled connection before handing it out (pool_pre_ping), so connections broken by
    a database restart or failover are replaced instead of failing a request, and give up connecting, or on a
    connection whose host is gone, after a few seconds (POSTGRES_CONNECT_ARGS), so an unreachable database
    answers 503 (and /healthz "degraded") within them instead of hanging workers.
    """
    if database_url.startswith("postgresql"):
        given = make_url(database_url).query
        connect_args = {name: value for name, value in POSTGRES_CONNECT_ARGS.items() if name not in given}
        return {"pool_pre_ping": True, "pool_recycle": 3600, "connect_args": connect_args}
    return {}


# Database errors that no retry cures: a full disk (or SQLite's page limit). Told apart here, once, for the
# metrics and for the answer a request gets (503 saying so, without a Retry-After that would never come true).
# SQLite's "database or disk is full" (SQLITE_FULL) and PostgreSQL's disk_full (SQLSTATE 53100).
SQLITE_FULL = 13
DISK_FULL_SQLSTATE = "53100"


def disk_full(exc: BaseException) -> bool:
    """Whether a database error says its disk (or SQLite's page limit) is full: no retry cures that, unlike
    a database that is restarting or locked."""
    orig = getattr(exc, "orig", None) or exc
    if getattr(orig, "sqlite_errorcode", None) == SQLITE_FULL or getattr(orig, "sqlstate", None) == DISK_FULL_SQLSTATE:
        return True
    text = str(orig)
    return "database or disk is full" in text or "No space left on device" in text
