# Two commands do all the set-up on a fresh machine with Python 3.11+:
#   make demo   - create .venv, install collhub, run the main job on the built-in simulator
#   make test   - create .venv, install collhub + first-party plugins + test deps, run all tests
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PLUGINS := plugins/mscclang plugins/astrasim plugins/tacos

.PHONY: demo test venv install install-dev browser bench registry clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

install: venv
	$(BIN)/python -m pip install -q -e ".[plot]"

install-dev: venv
	$(BIN)/python -m pip install -q -e ".[test]" $(foreach p,$(PLUGINS),$(if $(wildcard $(p)/pyproject.toml),-e $(p)))
	# MLCommons' reader, for interop tests only: its full dependency set drags in jupyterlab.
	$(BIN)/python -m pip install -q --no-deps "mlc-chakra>=1.0"

demo: install
	$(BIN)/collhub run examples/compare-allreduce.yaml --out runs/demo --force

test: install-dev browser
	$(BIN)/python -m pytest -q -p no:cacheprovider

# Headless Chromium for the registry page test (Debian package; best effort: the test skips
# with a reason when no browser can be had).
browser:
	@command -v chromium-headless-shell >/dev/null 2>&1 || command -v chromium >/dev/null 2>&1 || \
	  { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium-headless-shell) >/dev/null 2>&1; } || \
	  echo "note: headless Chromium unavailable; the registry page test will be skipped"

# Build wheels of every first-party plugin and a registry site from them, then serve it:
#   make registry && .venv/bin/collhub registry serve site
registry: install-dev
	$(BIN)/collhub registry build $(PLUGINS) --out site

bench: install-dev
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) runs site build dist *.egg-info
