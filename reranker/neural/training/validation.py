"""The held-out pass: the objective's loss on held-out pairs, and the MRR of their queries."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

import ir_measures
import torch
from ir_measures import RR

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


def tie_key(qid: str, i: int) -> str:
    """Pair i's document name for trec_eval, which breaks a tie of scores by name, descending: a hash of the
    query and the position, so that tied pairs fall in an order that is fixed but unrelated to the pairs' order,
    which puts a query's positives first (ties kept in that order read MRR 1.0 for a model that scores every
    pair alike)."""
    digest = int.from_bytes(hashlib.blake2b(f"{qid}\t{i}".encode(), digest_size=8).digest(), "big")
    return f"{digest:020d}-{i:09d}"


def reciprocal_ranks(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> dict[str, float]:
    """Each query's reciprocal rank of its first judged-relevant pair, its pairs ranked by score (0 if none), in
    the order the queries first appear: ir_measures' RR (trec_eval's recip_rank, through pytrec_eval). Tied
    scores fall in `tie_key`'s order. trec_eval compares scores as 32-bit floats, which the scores here are (a
    float32 model's)."""
    run: dict[str, dict[str, float]] = {}
    qrels: dict[str, dict[str, int]] = {}
    names: dict[str, str] = {}  # a query's id for trec_eval: its number (the qids here hold a tab)
    for i, (qid, score, judged) in enumerate(zip(qids, scores, relevant)):
        name, doc = names.setdefault(qid, str(len(names))), tie_key(qid, i)
        run.setdefault(name, {})[doc] = float(score)
        if judged:
            qrels.setdefault(name, {})[doc] = 1
    values = {metric.query_id: float(metric.value) for metric in ir_measures.pytrec_eval.iter_calc([RR], qrels, run)}
    return {qid: values.get(name, 0.0) for qid, name in names.items()}  # a query with no relevant pair is not in qrels


def mrr(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> float:
    reciprocal = reciprocal_ranks(qids, scores, relevant)
    return sum(reciprocal.values()) / len(reciprocal)


def mrr_by_source(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> dict[str, float]:
    """MRR per source, for qids of encode()'s form `source<TAB>qid`."""
    per_source: dict[str, list[float]] = {}
    for qid, value in reciprocal_ranks(qids, scores, relevant).items():
        per_source.setdefault(qid.split("\t", 1)[0], []).append(value)
    return {source: round(sum(values) / len(values), 6) for source, values in per_source.items()}
