"""attnrank: reproduce the experiments on the capacity (rank) of attention token mixers."""

__version__ = "0.1.0"
