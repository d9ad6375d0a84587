# Holdout: `make run` serves the demo on 127.0.0.1:8000; `make test` runs the whole suite (on SQLite, and
# again on a throwaway PostgreSQL cluster with TEST_POSTGRES=1 or when CI is set); `make lint` checks style,
# format and types. `make run`/`make install` install the runtime set only (requirements.txt); `make test` and
# `make lint` the development set too (requirements-dev.txt).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-run-$(shell sha256sum requirements.txt | cut -c1-12)
DEV_STAMP := $(VENV)/.installed-dev-$(shell cat requirements.txt requirements-dev.txt | sha256sum | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-dev system-deps run test lint benchmarks serve-benchmark scale-benchmark clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-run-*
	touch $(STAMP)

# Keyed on both files: a change to either reinstalls the development set.
$(DEV_STAMP): $(STAMP) requirements-dev.txt
	$(BIN)/python -m pip install --quiet -r requirements-dev.txt
	rm -f $(VENV)/.installed-dev-*
	touch $(DEV_STAMP)

install: $(STAMP)

install-dev: $(DEV_STAMP)

run: install
	HOLDOUT_DEMO=1 $(BIN)/flask --app wsgi db upgrade
	HOLDOUT_DEMO=1 $(BIN)/flask --app wsgi demo
	HOLDOUT_DEMO=1 $(BIN)/gunicorn -c gunicorn.conf.py --bind $(HOST):$(PORT) wsgi:app

system-deps:
	bash scripts/install-system-deps.sh

test: install-dev system-deps
	$(BIN)/python -m pytest

lint: install-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/mypy

benchmarks: install
	$(BIN)/python benchmarks/scoring.py

serve-benchmark: install
	$(BIN)/python benchmarks/serve.py

# A million stored submissions on a throwaway PostgreSQL cluster (about an hour on 2 cores);
# SCALE_ARGS="--submissions 100000" or "--database sqlite" for a smaller run.
scale-benchmark: install system-deps
	$(BIN)/python benchmarks/scale.py $(SCALE_ARGS)

clean:
	rm -rf $(VENV) instance .pytest_cache
