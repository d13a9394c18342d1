# Two commands do all the set-up on a fresh machine with Python 3.11+:
#   make demo   - create .venv, install collhub, run the main job on the built-in simulator
#   make test   - create .venv, install collhub + first-party plugins + test deps, run all tests
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PLUGINS := plugins/mscclang plugins/astrasim

.PHONY: demo test venv install install-dev bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

venv: $(BIN)/python

install: venv
	$(BIN)/python -m pip install -q -e .

install-dev: venv
	$(BIN)/python -m pip install -q -e ".[test]" $(foreach p,$(PLUGINS),$(if $(wildcard $(p)/pyproject.toml),-e $(p)))
	# MLCommons' reader, for interop tests only: its full dependency set drags in jupyterlab.
	$(BIN)/python -m pip install -q --no-deps "mlc-chakra>=1.0"

demo: install
	$(BIN)/collhub run examples/compare-allreduce.yaml --out runs/demo

test: install-dev
	$(BIN)/python -m pytest -q -p no:cacheprovider

bench: install-dev
	$(BIN)/python benchmarks/run.py

clean:
	rm -rf $(VENV) runs build dist *.egg-info
