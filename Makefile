# Holdout: `make run` serves the demo on 127.0.0.1:8000; `make test` runs the whole suite in parallel (on
# SQLite, and the tests marked `postgres` again on a throwaway PostgreSQL cluster with TEST_POSTGRES=1 or when
# CI is set) with branch coverage; `make lint` checks style, format, imports and types and builds the
# documentation site with --strict (a broken link or a missing page fails); `make docs` serves that site on
# 127.0.0.1:$(DOCS_PORT); `make bench` prints the benchmark tables and writes them into docs/performance/.
# `make run`/`make install` install the runtime set only (requirements.txt); `make test`, `make lint` and
# `make docs` the development set too (requirements-dev.txt).
#
# The virtual environment lives outside the clone, so a fresh clone finds it ready: $(HOLDOUT_VENV), by
# default ~/.cache/holdout/venv-<key>, the key a digest of the Python version and both requirements files
# (a change to either makes a new one). `.venv` in the clone is a symlink to it (README commands and the
# pre-commit hooks use `.venv/bin/...`). Installing is skipped when the stamp for these files exists.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
CACHE_HOME ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/holdout
VENV_KEY := $(shell ($(PYTHON) -c 'import sys; print(sys.version)'; cat requirements.txt requirements-dev.txt) | sha256sum | cut -c1-12)
VENV := $(or $(HOLDOUT_VENV),$(CACHE_HOME)/venv-$(VENV_KEY))
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-run-$(shell sha256sum requirements.txt | cut -c1-12)
DEV_STAMP := $(VENV)/.installed-dev-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000
# Where `make docs` serves the site: beside `make run`, never on its port.
DOCS_PORT ?= 8001
# Where the demo's mailed links point: where `make run` serves (a SITE_URL in the environment wins). A server
# bound to every address is reached on loopback.
DEMO_SITE_URL := http://$(if $(filter 0.0.0.0 ::,$(HOST)),127.0.0.1,$(HOST)):$(PORT)
# Parallel test workers (pytest-xdist): one per core. `make test PYTEST_WORKERS=0` runs in one process.
PYTEST_WORKERS ?= auto
# loadfile: each test module goes whole to one worker, so a module's expensive world (the golden walk, the
# browser tests' server, the sealed-part attack, the backed-up deployments) is built once. (loadgroup's
# xdist_group marks do not group under pytest 9: xdist renames the node ids, which pytest 9 no longer reads.)
# --no-loadscope-reorder: modules go out in collection order, which tests/conftest.py makes longest first by
# tests/module_seconds.json (xdist's own order, most tests first, left the long single-test modules to the end).
PYTEST_DIST ?= loadfile
PYTEST_ARGS ?=
# Branch coverage costs the run about half again its CPU, so `make test` (and CI) leaves it out and
# `make coverage` measures it: the same suite with pytest-cov, its total in the README.
COVERAGE_ARGS ?=
export MYPY_CACHE_DIR ?= $(CACHE_HOME)/mypy-$(VENV_KEY)
export RUFF_CACHE_DIR ?= $(CACHE_HOME)/ruff

.PHONY: install install-dev venv-link system-deps run test deploy-test coverage lint docs docs-check bench benchmarks serve-benchmark scale-benchmark clean

# The stamps' names hold a digest of the files' contents, so they depend on nothing else: a fresh clone's
# newer file times must not reinstall (a changed file makes a new stamp name, which reinstalls).
$(STAMP):
	mkdir -p $(dir $(VENV))
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-run-*
	touch $(STAMP)

# Keyed on both files: a change to either reinstalls the development set.
$(DEV_STAMP): | $(STAMP)
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	rm -f $(VENV)/.installed-dev-*
	touch $(DEV_STAMP)

# `.venv` -> the environment in use (replaced when the key changes; a real .venv folder is left alone).
venv-link:
	@if [ -L .venv ] || [ ! -e .venv ]; then ln -sfn $(VENV) .venv; fi

install: $(STAMP) venv-link

install-dev: $(DEV_STAMP) venv-link

run: install
	HOLDOUT_DEMO=1 $(BIN)/flask --app wsgi db upgrade
	HOLDOUT_DEMO=1 $(BIN)/flask --app wsgi demo
	HOLDOUT_DEMO=1 SITE_URL="$${SITE_URL:-$(DEMO_SITE_URL)}" $(BIN)/gunicorn -c gunicorn.conf.py --bind $(HOST):$(PORT) wsgi:app

system-deps:
	bash scripts/install-system-deps.sh

# pytest's exit code 5 (no tests collected) fails like any other non-zero code. Bytecode is written (in the
# clone's git-ignored __pycache__ folders) even where PYTHONDONTWRITEBYTECODE is set: the master compiles and
# assertion-rewrites the tests once, and the workers and servers load them instead of compiling them again.
test: install-dev system-deps
	env -u PYTHONDONTWRITEBYTECODE $(BIN)/python -m pytest -n $(PYTEST_WORKERS) --dist $(PYTEST_DIST) --no-loadscope-reorder $(COVERAGE_ARGS) $(PYTEST_ARGS) || { status=$$?; \
	  [ $$status -ne 5 ] || echo "make test: pytest collected no tests (exit 5)" >&2; exit $$status; }

# The deployment across hosts alone (tests/deploy/test_hosts.py, also part of `make test`): network namespaces on
# this machine, so it needs root (or CAP_NET_ADMIN and CAP_SYS_ADMIN). `make test` skips it with the reason where
# namespaces cannot be made; here that fails instead (HOLDOUT_DEPLOY_TEST=1): it was asked for.
deploy-test: install-dev system-deps
	HOLDOUT_DEPLOY_TEST=1 $(BIN)/python -m pytest -n 0 tests/deploy

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy
	$(MAKE) --no-print-directory docs-check

# The site built with --strict into a temporary folder (never into the clone): a broken link, a page left out of
# the nav or a generated page that fails (docs/hooks.py) fails the build.
docs-check: install-dev
	@site=$$(mktemp -d) && NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --quiet --site-dir "$$site"; \
	  status=$$?; rm -rf "$$site"; exit $$status

docs: install-dev
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve --dev-addr $(HOST):$(DOCS_PORT)

coverage:
	$(MAKE) --no-print-directory test COVERAGE_ARGS="--cov=app --cov=serving --cov-branch --cov-report=term:skip-covered"

# The speed and scale benchmarks: scripts that print their tables and write them into docs/performance/ (each its
# page, between its markers: benchmarks/doc_tables.py), never part of the test run.
bench: install-dev system-deps
	$(BIN)/python benchmarks/scoring.py
	$(BIN)/python benchmarks/leaderboard.py
	$(BIN)/python benchmarks/vqa_board.py
	$(BIN)/python benchmarks/serve.py
	$(BIN)/python benchmarks/hostile_uploads.py
	$(BIN)/python benchmarks/worker_memory.py
	$(BIN)/python benchmarks/gold_sharing.py
	$(BIN)/python benchmarks/job_queue.py

benchmarks: install
	$(BIN)/python benchmarks/scoring.py

serve-benchmark: install
	$(BIN)/python benchmarks/serve.py

# A million stored submissions on a throwaway PostgreSQL cluster (about an hour on 2 cores);
# SCALE_ARGS="--submissions 100000" or "--database sqlite" for a smaller run.
scale-benchmark: install system-deps
	$(BIN)/python benchmarks/scale.py $(SCALE_ARGS)

# The shared environment and caches stay (other clones use them); `rm -rf $(CACHE_HOME)` removes them.
clean:
	rm -rf instance .pytest_cache
	if [ -L .venv ]; then rm .venv; else rm -rf .venv; fi
