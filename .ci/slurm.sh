#!/usr/bin/env bash
# CI, after `make test`: the Slurm path. Installs the executor plugin into .venv, runs
# the profile's tests (dry-runs included), then the real-Slurm test: a one-node Slurm from Debian's
# packages on localhost, the small DAG through sbatch (tests/slurm/run.sh), its tables against the
# local smoke run `make test` made (ATTNRANK_SMOKE_RUN; it must be current). Stops every daemon
# it started, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$SECONDS
.venv/bin/python -m pip install -q -r requirements-slurm.lock
ATTNRANK_SLURM_TESTS=1 .venv/bin/pytest tests/slurm
echo "ci: Slurm plugin and profile tests took $((SECONDS - t)) s"
timeout -k 60 1800 bash tests/slurm/run.sh
