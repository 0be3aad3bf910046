# attnrank: every target creates .venv itself when it is missing.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CORES ?= all
SCALE ?= full
# Rules run `python -m attnrank ...`: make that the venv's python.
export PATH := $(abspath $(VENV))/bin:$(PATH)
# A bare `make` lists the targets; it installs nothing.
.DEFAULT_GOAL := help

.PHONY: help setup reproduce smoke smoke-reference test lint bench reference restore heldout audit report readme clean

setup: $(STAMP)  ## the virtual environment .venv from requirements.lock (every target does this first)

$(STAMP): pyproject.toml requirements.lock
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements.lock
	$(PY) -m pip install -q --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Restored artifacts carry no Snakemake metadata: what the audit calls stale is forced to rerun
# (nothing when the run folder does not exist yet).
FORCE_STALE = $$(test ! -d results/$(1) || $(PY) -m attnrank stale results/$(1) --prefix | sed '1s/^/--forcerun /')

reproduce: $(STAMP)  ## full, paper-scale reproduction
	$(VENV)/bin/snakemake --cores $(CORES) $(call FORCE_STALE,full)
	@echo "results: results/full/  logs (one per job): logs/full/  claims: results/full/claims.md"

# The smoke run ends by comparing itself with the committed smoke reference (compare's tolerances):
# exit 1 when they differ.
SMOKE_REF := results/reference-smoke
smoke: $(STAMP)  ## the same DAG on the small grids, then compared with results/reference-smoke
	$(VENV)/bin/snakemake --cores $(CORES) --config scale=smoke
	@echo "results: results/smoke/  logs (one per job): logs/smoke/  claims: results/smoke/claims.md"
	@rc=0; $(PY) -m attnrank compare results/smoke $(SMOKE_REF) --brief || rc=$$?; \
	case $$rc in \
	  0) echo "smoke run matches the committed smoke reference ($(SMOKE_REF))";; \
	  1) echo "smoke run differs from the committed smoke reference ($(SMOKE_REF)): see above;" \
	       "after an intended change, commit and run make smoke-reference" >&2; exit 1;; \
	  *) exit $$rc;; \
	esac

# From a clean commit only: a fresh smoke run (results/smoke and logs/smoke emptied first), published
# to results/reference-smoke/ (its tables, claims and every sidecar) and audited.
smoke-reference: $(STAMP)  ## fresh smoke run from a clean tree -> results/reference-smoke/ (audited)
	@test -z "$$(git status --porcelain)" || { git status --short; \
	  echo "make smoke-reference: refusing a dirty tree; commit first" >&2; exit 1; }
	rm -rf results/smoke logs/smoke
	$(VENV)/bin/snakemake --cores $(CORES) --config scale=smoke
	$(PY) -m attnrank reference --run results/smoke --dest $(SMOKE_REF)
	$(PY) -m attnrank audit $(SMOKE_REF)

test: $(STAMP)  ## lint, then the unit tests with one shared smoke run of the DAG (timed)
	@t=$$(date +%s); $(MAKE) --no-print-directory lint && echo "ci: lint took $$(($$(date +%s) - t)) s"
	@t=$$(date +%s); $(VENV)/bin/pytest && echo "ci: pytest took $$(($$(date +%s) - t)) s"

lint: $(STAMP)  ## ruff, snakefmt --check and snakemake --lint
	$(VENV)/bin/ruff check .
	$(VENV)/bin/snakefmt --check Snakefile workflow/
	$(VENV)/bin/snakemake --lint

# The full run's wall time is recorded by `make reference` (benchmarks/results/pipeline_full_wall.json).
bench: $(STAMP)  ## trainer benchmark, step profile, peer step, smoke wall time -> benchmarks/results/summary.json, the time tables
	$(PY) benchmarks/trainer.py --threads 1
	$(PY) benchmarks/step_profile.py --scale full
	$(PY) benchmarks/step_events.py  # operator events of one step of every training rule
	$(PY) benchmarks/peer_step.py  # the training step beside a packed, whole-compiled peer
	$(PY) benchmarks/cores.py  # the P-core wall, replayed from the reference's sidecars
	$(PY) benchmarks/pipeline_wall.py --scale smoke --cores 2
	$(PY) benchmarks/summary.py
	$(PY) -m attnrank readme-times --readme docs/performance.md --summary benchmarks/results/summary.json
	$(PY) benchmarks/budgets.py  # each study's job seconds against its budget (fails when one is over)

audit: $(STAMP)  ## every artifact of results/$(SCALE) against its sidecar, chain, code and config
	$(PY) -m attnrank audit results/$(SCALE) --json results/$(SCALE)/audit.json

readme: $(STAMP)  ## README's results section and figure thumbnails from results/reference
	$(PY) -m attnrank readme --readme README.md --reference results/reference

report: $(STAMP)  ## results/$(SCALE)/report.html: figures as PNG, the claims table rendered
	$(VENV)/bin/snakemake --cores 1 --config scale=$(SCALE) --report results/$(SCALE)/report.html

restore: $(STAMP)  ## results/full from results/reference: what is still current, mtimes in DAG order
	$(PY) -m attnrank restore --reference results/reference --run results/full

# From a clean commit only: the full run (from a fresh clone: restored from the reference first,
# so only what changed reruns), then its tables, figures, claims, training outputs and every
# sidecar are published to results/reference/ atomically (the old reference stays if anything is
# wrong), and the published folder must pass the audit.
reference: $(STAMP)  ## full run from a clean tree -> results/reference/ (audited)
	@test -z "$$(git status --porcelain)" || { git status --short; \
	  echo "make reference: refusing a dirty tree; commit first" >&2; exit 1; }
	test -d results/full || $(PY) -m attnrank restore --reference results/reference --run results/full
	$(PY) benchmarks/pipeline_wall.py --scale full --here --forcerun-stale \
	  --out logs/full/pipeline_wall.json \
	  --cores $(if $(filter all,$(CORES)),$$(nproc),$(CORES))  # the full run, timed
	$(PY) -m attnrank reference --run results/full --dest results/reference
	$(PY) -m attnrank audit results/reference
	cp logs/full/pipeline_wall.json benchmarks/results/pipeline_full_wall.json

# Held-out seeds (docs/methods.md, Seeds): the same full run with another seed_offset, in a clean
# clone under runs/ that runs its own code (PYTHONPATH), so results/full stays the reference's and
# edits here cannot reach it; its config.yaml differs from the commit only in seed_offset (so its
# sidecars say dirty: the held-out record names the diff) and it is audited against that config;
# its claims and what it is go to benchmarks/results/heldout_*, its verdicts beside the reference's
# in README.
HELDOUT_OFFSET ?= 1000
HELDOUT_SCALE ?= full
heldout: $(STAMP)  ## full run on held-out seeds (seed_offset=$(HELDOUT_OFFSET)) in runs/heldout/ -> README
	@test -z "$$(git status --porcelain)" || { git status --short; \
	  echo "make heldout: refusing a dirty tree; commit first" >&2; exit 1; }
	rm -rf runs/heldout && git clone -q . runs/heldout
	sed -i 's/^seed_offset: 0 /seed_offset: $(HELDOUT_OFFSET) /' runs/heldout/config.yaml
	grep -q '^seed_offset: $(HELDOUT_OFFSET) ' runs/heldout/config.yaml
	cd runs/heldout && export PYTHONPATH=$$PWD/src && \
	  $(abspath $(VENV))/bin/snakemake --cores $(CORES) --config scale=$(HELDOUT_SCALE) && \
	  $(abspath $(PY)) -m attnrank audit results/$(HELDOUT_SCALE)
	$(PY) -m attnrank heldout --run runs/heldout/results/$(HELDOUT_SCALE)

help:  ## this list
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | sed -E 's/^([a-z-]+):.*## /\1\t/' | \
	  sed 's/$$(SCALE)/$(SCALE)/g; s/$$(HELDOUT_OFFSET)/$(HELDOUT_OFFSET)/g' | \
	  awk -F'\t' '{printf "  make %-16s %s\n", $$1, $$2}'
	@echo "  variables: SCALE=$(SCALE) (full|smoke), CORES=$(CORES), HELDOUT_OFFSET=$(HELDOUT_OFFSET)"

clean:  ## remove results/$(SCALE) and logs/$(SCALE) (never results/reference)
	@case "$(SCALE)" in full|smoke) ;; *) echo "make clean: SCALE must be full or smoke, got '$(SCALE)'" >&2; exit 2;; esac
	rm -rf results/$(SCALE) logs/$(SCALE)
