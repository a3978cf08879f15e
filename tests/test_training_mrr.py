"""The held-out MRR (reranker.neural.training.validation) on ir_measures' RR gives the very floats of a hand-written
ranking (`old_*`): ties in `tie_key`'s order, 0 for a query without a relevant pair, the mean summed in the queries'
first-appearance order. Ties do not follow the pairs' order, which puts a query's positives first."""

from __future__ import annotations

import random

import torch

from reranker.neural.training.validation import mrr, mrr_by_source, reciprocal_ranks, tie_key


def old_reciprocal_ranks(qids, scores, relevant):
    by_query = {}
    for i, (qid, score, judged) in enumerate(zip(qids, scores, relevant)):
        by_query.setdefault(qid, []).append((score, tie_key(qid, i), judged))
    reciprocal = {}
    for qid, entries in by_query.items():
        ranked = sorted(sorted(entries, key=lambda entry: entry[1], reverse=True), key=lambda entry: -entry[0])
        first = next((rank for rank, (_, _, judged) in enumerate(ranked, start=1) if judged), None)
        reciprocal[qid] = 1 / first if first else 0.0
    return reciprocal


def old_mrr(qids, scores, relevant):
    reciprocal = old_reciprocal_ranks(qids, scores, relevant)
    return sum(reciprocal.values()) / len(reciprocal)


def old_mrr_by_source(qids, scores, relevant):
    per_source = {}
    for qid, value in old_reciprocal_ranks(qids, scores, relevant).items():
        per_source.setdefault(qid.split("\t", 1)[0], []).append(value)
    return {source: round(sum(values) / len(values), 6) for source, values in per_source.items()}


def held_out(rng: random.Random, generator: torch.Generator) -> tuple[list[str], list[float], list[bool]]:
    """Pairs of several sources' queries, interleaved; scores as the trainer hands them (a float32 tensor's
    values): a logit, a probability, or few distinct values (many ties, 0.0 and -0.0 among them)."""
    n = rng.randint(1, 400)
    qids = [f"source-{rng.randint(0, 3)}\t{rng.randint(0, 30)}" for _ in range(n)]
    kind = rng.choice(["logit", "probability", "ties", "signed_zeros"])
    if kind == "logit":
        scores = torch.randn(n, generator=generator) * 4
    elif kind == "probability":
        scores = torch.softmax(torch.randn(n, 2, generator=generator), dim=1)[:, 1]
    elif kind == "ties":
        scores = torch.randint(-2, 3, (n,), generator=generator).float() / 4
    else:
        scores = torch.tensor([rng.choice([0.0, -0.0, 1.0]) for _ in range(n)])
    share = rng.choice([0.0, 0.05, 0.2, 0.6, 1.0])  # 0: no query has a relevant pair; 1: every pair is relevant
    return qids, scores.tolist(), [rng.random() < share for _ in range(n)]


def test_the_mrr_is_the_old_rankings_to_the_last_bit():
    rng, generator = random.Random(61), torch.Generator().manual_seed(61)
    for _ in range(400):
        qids, scores, relevant = held_out(rng, generator)
        new, old = reciprocal_ranks(qids, scores, relevant), old_reciprocal_ranks(qids, scores, relevant)
        assert list(new.items()) == list(old.items())  # the same queries, in the same order, the same values
        assert mrr(qids, scores, relevant).hex() == old_mrr(qids, scores, relevant).hex()
        assert list(mrr_by_source(qids, scores, relevant).items()) == list(old_mrr_by_source(qids, scores, relevant).items())


def test_a_query_without_a_relevant_pair_counts_as_0():
    qids = ["a\t1", "a\t1", "a\t1", "b\t2", "b\t2", "a\t3"]
    scores = [0.5, 0.9, 0.5, 2.0, 1.0, 0.0]
    relevant = [False, True, False, False, False, False]
    assert reciprocal_ranks(qids, scores, relevant) == {"a\t1": 1.0, "b\t2": 0.0, "a\t3": 0.0}
    assert mrr(qids, scores, relevant) == 1 / 3
    assert mrr_by_source(qids, scores, relevant) == {"a": 0.5, "b": 0.0}


def test_a_model_that_scores_every_pair_alike_reads_about_chance_wherever_the_positive_stands():
    """Held-out pairs come positive first; with ties kept in that order a model at its label prior read MRR 1.0.
    Eight pairs, one relevant, ties in random order: the expected RR is (1 + 1/2 + ... + 1/8) / 8 = 0.34."""
    qids = [f"q\t{q}" for q in range(300) for _ in range(8)]
    for at in (0, 7):
        relevant = [i % 8 == at for i in range(len(qids))]
        assert 0.28 < mrr(qids, [0.0] * len(qids), relevant) < 0.40
