import os

import torch

# Tests run single-threaded and deterministic regardless of the machine.
torch.set_num_threads(1)
os.environ.setdefault("PYTHONHASHSEED", "0")
