"""Aggregation baselines: a document scored by FirstP / MaxP / SumP / MeanP of its unit scores (no first-stage score).

The top-K split and the tail below it are fusion's (reranker.ranking.fusion): K is the deepest first-stage rank
holding a document with unit scores."""

from __future__ import annotations

from reranker.core.registry import AGGREGATORS
from reranker.formats.errors import InputError
from reranker.formats.runs import Run, sorted_docs
from reranker.formats.unit_scores import UnitScores
from reranker.ranking.fusion import split_at_k, with_tail


def aggregate(run: Run, unit_scores: UnitScores, method: str, candidates: int | None = None) -> Run:
    """Score each top-K document by FirstP/MaxP/SumP/MeanP of its unit scores (no first-stage score).

    Top-K documents without units follow the scored ones, then the tail, both in first-stage order.
    With `candidates` R, only the first stage's top R are reranked, whatever else has scores (one
    scoring at the largest R serves every smaller one).
    """
    if method not in AGGREGATORS:
        raise InputError(f"method must be one of {', '.join(AGGREGATORS)}, not {method!r}")
    if candidates is not None and candidates < 1:
        raise InputError(f"candidates must be positive, not {candidates}")
    extra = sorted(set(unit_scores) - set(run))
    if extra:
        raise InputError(f"{len(extra)} queries have unit scores but no first-stage ranking (e.g. {extra[0]})")
    fused: Run = {}
    for qid, ranking in run.items():
        scored = unit_scores.get(qid, {})
        if candidates is not None:
            top_r = {doc_id for doc_id, _ in sorted_docs(ranking)[:candidates]}
            scored = {doc_id: values for doc_id, values in scored.items() if doc_id in top_r}
        top, tail = split_at_k(ranking, scored, qid)
        scores = {doc_id: AGGREGATORS[method].combine(scored[doc_id]) for doc_id in top if scored.get(doc_id)}
        fused[qid] = with_tail(scores, [d for d in top if d not in scores] + tail, ranking)
    return fused

