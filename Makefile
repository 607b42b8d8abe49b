# PokéBench: `make run` (set up, play the default run, publish) and `make test`
# (set up, run the whole test suite). Needs Python 3.11+ and Node.js 20 (>= 18).
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
RUN ?= bots-calibration
SERVER_STAMP := showdown-server/node_modules/.pokebench-installed
ORACLE_STAMP := showdown-server/oracle/node_modules/.pokebench-installed
ENGINE_STAMP := $(VENV)/.poke-engine-installed
# poke-engine built from its source for Gen 9 with Terastallization (pokebench/engine/check.py says why;
# a plain `pip install poke-engine` builds the Gen 4 default that never terastallizes).
ENGINE_INSTALL := $(PY) -m pip install --quiet --force-reinstall --no-binary poke-engine poke-engine==0.0.48 \
	--config-settings="build-args=--features poke-engine/terastallization --no-default-features"

.PHONY: setup run test test-faults test-fast test-quick test-slurm test-ray lint bench clean-runs

# what `make run` needs; `make test` adds the test-only text renderer ($(ORACLE_STAMP))
setup: $(VENV)/.installed $(SERVER_STAMP) $(ENGINE_STAMP)

$(VENV)/.installed: pyproject.toml
	@$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "PokéBench needs Python 3.11 or newer; run make PYTHON=python3.11 ..."'
	@echo "Set-up 1/3: $(VENV) with PokéBench and its Python packages (2 to 9 minutes, 9 on 2 busy shared cores)"
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	@touch $@

# npm ci, PokéBench's config and plugin, and the data exported from the server (showdown-server/generated/).
$(SERVER_STAMP): showdown-server/package.json showdown-server/package-lock.json showdown-server/config/config.js showdown-server/plugin/pokebench.js $(wildcard showdown-server/scripts/*.js) $(VENV)/.installed
	@command -v node >/dev/null || { echo "Node.js is missing: install Node.js 20 (https://nodejs.org), then run make again." >&2; exit 1; }
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js 20 with npm, then run make again." >&2; exit 1; }
	@echo "Set-up 2/3: the pinned Showdown server in showdown-server/ (npm ci and the data exported from it, about 40 s)"
	$(PY) -m pokebench.cli.server install
	@touch $@

# The search engine: built once (about 3 minutes of CPU; pip caches the build). Without Rust's cargo
# everything else works; the search bot and its tests need it.
$(ENGINE_STAMP): $(VENV)/.installed
	@if $(PY) -m pokebench.engine.check >/dev/null 2>&1; then touch $@; \
	elif command -v cargo >/dev/null; then \
		echo "Set-up 3/3: building poke-engine 0.0.48 for Gen 9 with Terastallization (about 3 minutes; seconds when pip has built it before)"; \
		$(ENGINE_INSTALL) && $(PY) -m pokebench.engine.check && touch $@; \
	else \
		echo "poke-engine is not built: Rust's cargo is missing. Install Rust (https://rustup.rs), then run make setup" >&2; \
		echo "again. Everything but the search bot (its tests are skipped) works without it; make run plays it:" >&2; \
		echo "without the engine play $(PY) -m pokebench +run=bots-calibration '~players.search' matchups=all" >&2; \
	fi

# Test-only: the independent battle-text renderer the tests compare PokéBench's text with (@pkmn/view).
$(ORACLE_STAMP): showdown-server/oracle/package.json showdown-server/oracle/package-lock.json
	@command -v npm >/dev/null || { echo "npm is missing: install Node.js 20 with npm, then run make again." >&2; exit 1; }
	@echo "For the tests: the independent battle-text renderer in showdown-server/oracle/ (npm ci, about 10 s)"
	cd showdown-server/oracle && npm ci --no-audit --no-fund --loglevel=error
	@touch $@

run: setup
	$(PY) -m pokebench +run=$(RUN)

# The tests in parallel (pytest-xdist): a worker per core and one more (a third of the suite's time is spent waiting
# on servers and subprocesses: with a worker per core the 2 cores were 65 % busy), TEST_WORKERS=1 for one process; tests/conftest.py
# says how the work is split (loadgroup: a module's expensive fixture is made once, on one worker; the slow
# tests are handed out first, in the order collected).
TEST_WORKERS ?= $(shell echo $$(( $$(nproc 2>/dev/null || echo 2) + 1 )))
PARALLEL = -n $(TEST_WORKERS) --dist loadgroup --no-loadscope-reorder

test: setup $(ORACLE_STAMP)
	$(PY) -m pytest -q $(PARALLEL) -m "not fault_sweep"

# the fault sweep: each fault at each phase of a game's life (tests/test_fault_sweep.py; .ci/run runs it)
test-faults: setup
	$(PY) -m pytest -q $(PARALLEL) -m fault_sweep

# the quick loop: everything but the tests marked slow
test-fast: setup $(ORACLE_STAMP)
	$(PY) -m pytest -q $(PARALLEL) -m "not slow"

# the lane without the server: no Node.js, no npm, no set-up beyond the venv (the tests marked server need them)
test-quick: $(VENV)/.installed
	$(PY) -m pytest -q $(PARALLEL) -m "not server and not slow"

# SLURM for real: a one-node cluster in a loopback-only network namespace (root, apt-get; skipped elsewhere)
test-slurm: setup
	tests/cluster/slurm.sh

# Ray for real: a one-node Ray cluster in a loopback-only network namespace (root; skipped elsewhere)
test-ray: setup
	tests/cluster/ray.sh

bench: setup
	$(PY) benchmarks/bots_throughput.py
	$(PY) benchmarks/ratings_speed.py
	$(PY) benchmarks/llm_overhead.py
	$(PY) benchmarks/server_start.py

clean-runs:
	rm -rf runs data
