"""Pairs tokenised once, batched by length: what the training loop, the held-out pass and a teacher read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import torch

from reranker.neural.batching import pad_batch, tokenize_pairs
from reranker.neural.objectives import Objective
from reranker.neural.training.pairs import Examples, TrainingPair

BUCKET_BATCHES = 50  # batches per sorted window: similar lengths within a batch, random order across


class Encoded(NamedTuple):
    """Pairs tokenised once: `[CLS] query [SEP] text [SEP]`, the text truncated to fit."""

    ids: list[list[int]]
    types: list[list[int]]
    targets: torch.Tensor  # each pair's target under the objective
    qids: list[str]
    relevant: Sequence[bool] = ()  # judged relevant (for MRR)
    token_labels: Sequence[list[int]] = ()  # masked-LM targets per token (IGNORE where not masked)


def encode_texts(tokenizer: Any, queries: Sequence[str], texts: Sequence[str], targets: torch.Tensor, max_length: int,
                 qids: Sequence[str] = (), relevant: Sequence[bool] = (), truncation: str = "only_second") -> Encoded:
    """Tokenise (query, text) pairs once, without padding; the text is truncated to fit."""
    if not queries:
        return Encoded([], [], targets[:0], list(qids), list(relevant))
    ids, types = tokenize_pairs(tokenizer, queries, texts, truncation, max_length)
    return Encoded(ids, types, targets, list(qids), list(relevant))


def split_pairs(examples: Sequence[Examples], split: str) -> list[tuple[Examples, TrainingPair]]:
    """Every source's pairs of `split` ("pairs" or "validation") with their source, in the one order that
    encode() and a teacher's scores share."""
    return [(example, pair) for example in examples for pair in getattr(example, split)]


def encode(tokenizer: Any, examples: Sequence[Examples], split: str, objective: Objective, max_length: int,
           truncation: str = "only_second") -> Encoded:
    """The `split` ("pairs" or "validation") of every source, tokenised; qids are `source<TAB>qid`."""
    pairs = split_pairs(examples, split)
    targets = objective.targets([p.level for _, p in pairs], [p.label for _, p in pairs])
    return encode_texts(tokenizer, [ex.topics[p.qid] for ex, p in pairs], [ex.docs[p.doc_id] for ex, p in pairs],
                        targets, max_length, [f"{ex.record['name']}\t{p.qid}" for ex, p in pairs],
                        [bool(p.label) for _, p in pairs], truncation)


def collate(encoded: Encoded, rows: Sequence[int], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """A batch padded to its own longest pair."""
    return pad_batch([encoded.ids[i] for i in rows], [encoded.types[i] for i in rows], pad_id, device)


def epoch_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator, bucketed: bool) -> list[list[int]]:
    """One epoch's batches. Bucketed: a random permutation, sorted by length within windows of
    BUCKET_BATCHES batches, cut into batches, and the batches shuffled (little padding, random order)."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    if not bucketed:
        return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    window = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[j:j + batch_size] for j in range(0, len(chunk), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def batched_logits(model: Any, encoded: Encoded, n_logits: int, pad_id: int, device: torch.device,
                   dtype: torch.dtype, batch_size: int = 64) -> torch.Tensor:
    """Logits of tokenised pairs in their order, scored in batches of similar length."""
    order = sorted(range(len(encoded.ids)), key=lambda i: (len(encoded.ids[i]), i))
    logits = torch.empty((len(order), n_logits))
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            logits[rows] = model(**collate(encoded, rows, pad_id, device)).logits.float().cpu()
    return logits


def subset(encoded: Encoded, rows: Sequence[int]) -> Encoded:
    """The pairs `rows` of tokenised pairs (ranking pairs: no token labels)."""
    return Encoded([encoded.ids[i] for i in rows], [encoded.types[i] for i in rows], encoded.targets[list(rows)],
                   [encoded.qids[i] for i in rows], [encoded.relevant[i] for i in rows])
