# attnrank: every target creates .venv itself when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CORES ?= all
# Rules run `python -m attnrank ...`: make that the venv's python.
export PATH := $(CURDIR)/$(VENV)/bin:$(PATH)

.PHONY: setup reproduce smoke test lint bench reference

setup: $(STAMP)

$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

reproduce: $(STAMP)  ## full, paper-scale reproduction
	$(VENV)/bin/snakemake --cores $(CORES)

smoke: $(STAMP)  ## the same DAG on the small grids
	$(VENV)/bin/snakemake --cores $(CORES) --config scale=smoke

test: $(STAMP)  ## unit tests plus one smoke run of the DAG
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakemake --lint
	$(VENV)/bin/pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakemake --lint

bench: $(STAMP)  ## vectorized trainer vs a loop of models -> benchmarks/results/trainer.json
	$(PY) benchmarks/trainer.py

reference: $(STAMP)  ## copy results/full's tables, PNGs and claims to results/reference/
	$(PY) -m attnrank reference --run results/full --dest results/reference
