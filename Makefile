# Holdout: `make run` serves the demo on 127.0.0.1:8000; `make test` runs the whole suite (on SQLite, and
# again on a throwaway PostgreSQL cluster with TEST_POSTGRES=1 or when CI is set).
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell sha256sum requirements.txt | cut -c1-12)
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install system-deps run test benchmarks serve-benchmark clean

$(STAMP): requirements.txt
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -r requirements.txt
	rm -f $(VENV)/.installed-*
	touch $(STAMP)

install: $(STAMP)

run: install
	HOLDOUT_DEMO=1 $(BIN)/flask --app wsgi db upgrade
	HOLDOUT_DEMO=1 $(BIN)/flask --app wsgi demo
	HOLDOUT_DEMO=1 $(BIN)/gunicorn -c gunicorn.conf.py --bind $(HOST):$(PORT) wsgi:app

system-deps:
	bash scripts/install-system-deps.sh

test: install system-deps
	$(BIN)/python -m pytest

benchmarks: install
	$(BIN)/python benchmarks/scoring.py

serve-benchmark: install
	$(BIN)/python benchmarks/serve.py

clean:
	rm -rf $(VENV) instance .pytest_cache
