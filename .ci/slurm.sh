#!/usr/bin/env bash
# CI, after `make test`: the Slurm path (issue 4). Installs the executor plugin into .venv, runs
# the profile's tests (dry-runs included), then the real-Slurm test: a one-node Slurm from Debian's
# packages on localhost, the smoke DAG through sbatch, its tables against a local smoke run (the
# one `make test` left is reused when fresh). Stops every daemon it started, whatever happens.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/python -m pip install -q -r requirements-slurm.lock
ATTNRANK_SLURM_TESTS=1 .venv/bin/pytest tests/slurm
timeout -k 60 1800 bash tests/slurm/run.sh
