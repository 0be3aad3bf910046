import os

import torch

# Tests run single-threaded and deterministic regardless of the machine.
torch.set_num_threads(1)
os.environ.setdefault("PYTHONHASHSEED", "0")

# tests/slurm need the Slurm executor plugin (requirements-slurm.lock); `.ci/slurm.sh` installs it
# and runs them with ATTNRANK_SLURM_TESTS=1. `make test` leaves them out.
collect_ignore = [] if os.environ.get("ATTNRANK_SLURM_TESTS") == "1" else ["slurm"]
