# Two commands do all the set-up on a fresh machine with Python 3.11+:
#   make demo   - create .venv, install collhub + first-party plugins, run the main job on the built-in simulator
#   make test   - create .venv, install collhub + first-party plugins + test deps, run all tests
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PLUGINS := plugins/mscclang plugins/mscclpp plugins/nccl plugins/astrasim plugins/taccl plugins/tacos plugins/forest plugins/replay
# The registry service (`collhub registry build|serve|check`): its own distribution, not a plugin
# the registry lists, so it is installed beside the plugins but never indexed with them.
REGISTRY := ./registry
# collhub-replay needs torch: pinned here, in the same pip command, so pip never resolves an
# unpinned torch (that would download a multi-GB CUDA build; 2.13.0 is a local CPU build).
TORCH  ?= torch==2.13.0

.PHONY: demo test lint venv install install-dev browser astrasim-deps bench registry clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

# The README's "Use it" needs every first-party plugin, so the default set-up installs them all;
# collhub-replay brings torch (the heavy one): `make demo PLUGINS="plugins/mscclang plugins/astrasim
# plugins/taccl" TORCH=` leaves it out (and `replay.run` with it).
install: venv
	$(BIN)/python -m pip install -q -e ".[plot]" $(if $(TORCH),"$(TORCH)") $(foreach p,$(PLUGINS) $(REGISTRY),$(if $(wildcard $(p)/pyproject.toml),-e $(p)))

install-dev: venv
	$(BIN)/python -m pip install -q -e ".[test]" "$(TORCH)" $(foreach p,$(PLUGINS) $(REGISTRY),$(if $(wildcard $(p)/pyproject.toml),-e $(p)))
	# MLCommons' reader, for interop tests only: its full dependency set drags in jupyterlab.
	$(BIN)/python -m pip install -q --no-deps "mlc-chakra>=1.0"
	@touch $(DEV_STAMP)

# Newer than every pyproject.toml once install-dev has run: targets that only need a working
# development environment (`make registry`) depend on it and skip the reinstall when it is current.
DEV_STAMP := $(VENV)/.install-dev.stamp
$(DEV_STAMP): pyproject.toml $(wildcard $(addsuffix /pyproject.toml,$(PLUGINS) $(REGISTRY))) | $(BIN)/python
	@$(MAKE) --no-print-directory install-dev

demo: install
	$(BIN)/collhub run examples/compare-allreduce.yaml --out runs/demo --force

test: install-dev browser astrasim-deps lint
	$(BIN)/python -m pytest -q -p no:cacheprovider

# ruff (lint and format check) and mypy, configured in pyproject.toml; `ruff format .` fixes layout.
lint: install-dev
	$(BIN)/ruff check --quiet .
	$(BIN)/ruff format --check --quiet .
	$(BIN)/mypy --cache-dir $(VENV)/.mypy_cache

# Headless Chromium for the registry page test (Debian package; best effort: the test skips
# with a reason when no browser can be had).
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell) >/dev/null 2>&1; } || \
	  echo "note: headless Chromium unavailable; the registry page test will be skipped"

# Debian's libprotobuf32 for real ASTRA-sim binaries the user points to with $COLLHUB_ASTRASIM_DIR
# (optional live oracle; best effort: those tests skip with a reason without it; CI replays the
# recorded runs of ../shared/data/astra-sim-oracle instead).
astrasim-deps:
	@{ ldconfig -p 2>/dev/null | grep -q 'libprotobuf\.so\.32 '; } || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libprotobuf32) >/dev/null 2>&1; } || \
	  echo "note: libprotobuf32 unavailable; the tests against the real ASTRA-sim will be skipped"

# Build wheels of every first-party plugin and a registry site from them, then serve it:
#   make registry && .venv/bin/collhub registry serve site --port 8000
# REGISTRY_URL is where the site will be served: its pages' install commands name it.
REGISTRY_URL ?= http://127.0.0.1:8000/
registry: $(DEV_STAMP)
	$(BIN)/collhub registry build $(PLUGINS) --out site --url $(REGISTRY_URL)

bench: install-dev
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) runs site build dist *.egg-info
