"""Evaluation of Min-IP heads: predictions on a batch in its layout, the per-model metrics of
the task (error, exact accuracy, worst case), in chunks of sequences for large sets.
"""

from __future__ import annotations

import torch

from attnrank.minip.data import MinIPBatch, bits_batch
from attnrank.minip.models import MinIPHead, TokenIds


def predict(model: MinIPHead, batch: MinIPBatch) -> torch.Tensor:
    """Predictions (M, B, N), by the vocabulary path when the batch holds token ids."""
    if isinstance(batch.tokens, TokenIds):
        return model.forward_tokens(batch.tokens)
    return model(batch.tokens)


def sequence_metrics(pred: torch.Tensor, target: torch.Tensor) -> dict[str, torch.Tensor]:
    """Per-model metrics of predictions (M, B, N) against integer targets (M, B, N).

    position_error: fraction of positions with round(ŷ) ≠ t; sequence_accuracy: fraction of
    sequences with every position right; worst_case_error: max |ŷ − t|; mse: mean (ŷ − t)².
    """
    wrong = torch.round(pred) != target
    err = (pred - target).abs()
    return {
        "mse": (err**2).mean(dim=(1, 2)),
        "position_error": wrong.float().mean(dim=(1, 2)),
        "sequence_accuracy": (~wrong.any(dim=2)).float().mean(dim=1),
        "worst_case_error": err.amax(dim=(1, 2)),
    }


def evaluate_in_chunks(model: MinIPHead, data: torch.Tensor | MinIPBatch, chunk: int = 4096
                       ) -> dict[str, torch.Tensor]:
    """sequence_metrics over a large evaluation set (bits (M, E, N, m) or a batch), in chunks of
    sequences."""
    batch = bits_batch(data) if isinstance(data, torch.Tensor) else data
    preds = [predict(model, batch.chunk(i, i + chunk)) for i in range(0, batch.n_sequences, chunk)]
    return sequence_metrics(torch.cat(preds, dim=1), batch.targets)


def mse(model: MinIPHead, batch: MinIPBatch) -> torch.Tensor:
    """Per-model mean squared error of the predictions: (M,)."""
    return ((predict(model, batch) - batch.targets) ** 2).mean(dim=(1, 2))
