"""The test session's database plumbing (tests/conftest.py): a parameter set marked `one_backend` runs on
SQLite alone, and a backend's migrated template and working database outlive a switch to the other backend
(pytest sets the session fixtures up again at each switch; the migrations must not run again)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from tests import conftest


class _Item:
    def __init__(self, nodeid: str, backend: str | None, one_backend: bool = False):
        self.nodeid = nodeid
        self.callspec = SimpleNamespace(params={"database_backend": backend}) if backend else None
        self._one_backend = one_backend

    def get_closest_marker(self, name: str):
        if name == "one_backend" and self._one_backend:
            return pytest.mark.one_backend.mark
        if name == "postgres":
            return pytest.mark.postgres(reason="a reason").mark
        return None


def test_a_parameter_set_marked_one_backend_drops_its_postgresql_item():
    items = [
        _Item("tests/x.py::t[sqlite-a]", "sqlite"),
        _Item("tests/x.py::t[sqlite-b]", "sqlite", one_backend=True),
        _Item("tests/x.py::t[postgresql-a]", "postgresql"),
        _Item("tests/x.py::t[postgresql-b]", "postgresql", one_backend=True),
        _Item("tests/x.py::plain", None),
    ]
    deselected = []
    config = SimpleNamespace(hook=SimpleNamespace(pytest_deselected=lambda items: deselected.extend(items)))
    conftest.pytest_collection_modifyitems(config, items)
    assert [item.nodeid for item in items] == [
        "tests/x.py::t[sqlite-a]",
        "tests/x.py::t[sqlite-b]",
        "tests/x.py::t[postgresql-a]",
        "tests/x.py::plain",
    ]
    assert [item.nodeid for item in deselected] == ["tests/x.py::t[postgresql-b]"]


def test_switching_backends_migrates_each_once(monkeypatch, tmp_path_factory):
    migrations = []
    monkeypatch.setattr(conftest, "upgrade", lambda: migrations.append(1))
    monkeypatch.setattr(conftest, "_templates", {})
    monkeypatch.setattr(conftest, "_working_databases", {})

    class Backend(conftest.SqliteBackend):
        def __init__(self, name: str):
            self.name = name

        def new_database(self, folder, template=None, name: str = "holdout") -> str:
            return f"sqlite:///{folder}/{name}.sqlite3"  # empty: the migrations are counted, not run

        def fingerprint(self, url: str) -> str:
            return url

    first, other = Backend("first"), Backend("other")
    # What pytest does from one module to the next: first, other, then first again (a new backend object).
    templates = [
        conftest.migrated_database.__wrapped__(backend, tmp_path_factory)
        for backend in (first, other, Backend("first"))
    ]
    assert len(migrations) == 2 and templates[0] == templates[2] != templates[1]
    working = [
        conftest.working_database.__wrapped__(backend, template, tmp_path_factory)
        for backend, template in ((first, templates[0]), (other, templates[1]), (Backend("first"), templates[2]))
    ]
    assert working[0] is working[2] and working[0] is not working[1]
