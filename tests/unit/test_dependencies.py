"""pyproject.toml and the requirements files pin the same packages at the same versions, and production gets no
development tool: requirements.txt is the runtime set, requirements-dev.txt the runtime set and the dev extra."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
DEV_TOOLS = {
    "pytest",
    "pytest-xdist",
    "pytest-cov",
    "hypothesis",
    "schemathesis",
    "playwright",
    "openapi-spec-validator",
    "ruff",
    "mypy",
}


def name_of(requirement: str) -> str:
    """The normalised project name of a requirement (PEP 503): 'psycopg[binary]==3.3.9' -> 'psycopg'."""
    return re.sub(r"[-_.]+", "-", re.split(r"[\[=<>!~; ]", requirement, maxsplit=1)[0]).lower()


def requirements(name: str) -> tuple[list[str], list[str]]:
    """(requirements, included files) of a requirements file, comments and blank lines left out."""
    lines = [line.split("#", 1)[0].strip() for line in (REPO / name).read_text(encoding="utf-8").splitlines()]
    included = [line.removeprefix("-r").strip() for line in lines if line.startswith("-r")]
    return [line for line in lines if line and not line.startswith("-")], included


def test_runtime_requirements_are_the_projects_dependencies():
    runtime, included = requirements("requirements.txt")
    assert included == []
    assert sorted(runtime) == sorted(PROJECT["dependencies"])


def test_dev_requirements_are_the_runtime_set_and_the_dev_extra():
    dev, included = requirements("requirements-dev.txt")
    assert included == ["requirements.txt"]
    assert sorted(dev) == sorted(PROJECT["optional-dependencies"]["dev"])


def test_every_requirement_is_pinned_once():
    every = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["dev"]
    assert [r for r in every if not re.fullmatch(r"[A-Za-z0-9_.\-\[\]]+==[0-9][0-9A-Za-z.]*", r)] == []
    names = [name_of(r) for r in every]
    assert len(names) == len(set(names)), "a package is listed twice"


def test_production_installs_no_development_tool():
    runtime, _ = requirements("requirements.txt")
    assert {name_of(r) for r in runtime} & DEV_TOOLS == set()
    assert {name_of(r) for r in PROJECT["optional-dependencies"]["dev"]} >= DEV_TOOLS


def test_name_of():
    assert name_of("psycopg[binary]==3.3.9") == "psycopg"
    assert name_of("prometheus_client==0.26.0") == "prometheus-client"
    assert name_of("Flask-SQLAlchemy==3.1.1") == "flask-sqlalchemy"
