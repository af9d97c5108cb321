# The two commands that matter: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-core lint bench docs clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

$(VENV)/.bench-installed: $(STAMP)
	$(BIN)/pip install --quiet -e '.[bench]'
	touch $@

# The wake worker runs beside the server and stops with it. `make demo PORT=8001` serves
# on another port.
PORT ?= 8000
demo: $(STAMP)
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py demo_setup --port $(PORT)
	$(BIN)/python manage.py warlock_worker -v 2 & worker=$$!; \
	trap 'kill $$worker 2>/dev/null' EXIT INT TERM; \
	$(BIN)/python manage.py runserver 127.0.0.1:$(PORT) --noreload

# Style and complexity (ruff; no function above 15), strict types (mypy) and the layers
# contract (import-linter). .pre-commit-config.yaml runs the same.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# Two workers (pytest-xdist): this machine has two cores.
test: lint test-core
	$(BIN)/pytest -n 2

# The core installed with no extras (Django and DRF only) imports and works.
CORE := .venv-core
test-core:
	rm -rf $(CORE)
	$(PYTHON) -m venv $(CORE)
	$(CORE)/bin/pip install --quiet .
	rm -rf build
	cd / && $(CURDIR)/$(CORE)/bin/python $(CURDIR)/tests/core/without_extras.py

bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench.store
	$(BIN)/python -m bench.engine
	$(BIN)/python -m bench.providers
	$(BIN)/python -m bench.recognisers
	$(BIN)/python -m bench.host
	$(BIN)/python -m bench.ws
	$(BIN)/python -m bench.snapshots
	$(BIN)/python -m bench.conversations
	$(BIN)/python -m bench.growth
	# Full size takes about 8 minutes on 2 cores; WARLOCK_SCALE=0.01 runs it small.
	$(BIN)/python -m bench.scale

$(VENV)/.docs-installed: $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(CORE) build *.egg-info demo.sqlite3
