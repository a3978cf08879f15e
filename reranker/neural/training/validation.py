"""The held-out pass: the objective's loss on held-out pairs, and the MRR of their queries."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from reranker.neural.objectives import Objective
from reranker.neural.training.encoding import Encoded, batched_logits


def validate(model: Any, encoded: Encoded, objective: Objective, pad_id: int, device: torch.device,
             dtype: torch.dtype, batch_size: int = 64) -> dict[str, float]:
    """The objective's mean loss on the held-out pairs, and the MRR of each query's first relevant pair
    ranked by the objective's score."""
    was_training = model.training
    model.eval()
    logits = batched_logits(model, encoded, objective.outputs, pad_id, device, dtype, batch_size)
    model.train(was_training)
    loss = float(objective.loss(logits, encoded.targets))
    return {"loss": loss, "mrr": mrr(encoded.qids, objective.score(logits).tolist(), encoded.relevant)}


def reciprocal_ranks(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> dict[str, float]:
    """Each query's reciprocal rank of its first judged-relevant pair, its pairs ranked by score (0 if none)."""
    by_query: dict[str, list[tuple[float, bool]]] = {}
    for qid, score, judged in zip(qids, scores, relevant):
        by_query.setdefault(qid, []).append((score, judged))
    reciprocal = {}
    for qid, entries in by_query.items():
        ranked = sorted(entries, key=lambda entry: -entry[0])
        first = next((rank for rank, (_, judged) in enumerate(ranked, start=1) if judged), None)
        reciprocal[qid] = 1 / first if first else 0.0
    return reciprocal


def mrr(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> float:
    reciprocal = reciprocal_ranks(qids, scores, relevant)
    return sum(reciprocal.values()) / len(reciprocal)


def mrr_by_source(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> dict[str, float]:
    """MRR per source, for qids of encode()'s form `source<TAB>qid`."""
    per_source: dict[str, list[float]] = {}
    for qid, value in reciprocal_ranks(qids, scores, relevant).items():
        per_source.setdefault(qid.split("\t", 1)[0], []).append(value)
    return {source: round(sum(values) / len(values), 6) for source, values in per_source.items()}
