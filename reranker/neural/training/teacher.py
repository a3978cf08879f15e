"""A checkpoint teaching another: a teacher's logits to distil, its probabilities mixed into the targets
(soft labels), and a filter checkpoint's scores that keep each relevant document's best unit."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from reranker.formats import array_cache
from reranker.neural import models
from reranker.neural.batching import pad_id, tokenize_pairs
from reranker.neural.forward import cosines
from reranker.neural.objectives import Objective, calibrate
from reranker.neural.training.encoding import Encoded, batched_logits, split_pairs
from reranker.neural.training.pairs import Examples, capped, pair_counts, unit_document
from reranker.neural.training.settings import TrainingConfig
from reranker.neural.training.validation import mrr, mrr_by_source


def teacher_logits(teacher: models.Classifier, encoded: Encoded, relevant_index: int, pad_id: int,
                   dtype: torch.dtype) -> torch.Tensor:
    """A two-way teacher's logits on tokenised pairs, ordered so that the relevant one is at `relevant_index`."""
    if teacher.n_logits != 2:
        raise models.CheckpointError(f"a teacher needs a two-way head, {teacher.source} has {teacher.n_logits} logit(s)")
    out = batched_logits(teacher.model, encoded, 2, pad_id, next(teacher.model.parameters()).device, dtype)
    return out if teacher.relevant_index == relevant_index else out.flip(1)


def teacher_cosines(teacher: models.Classifier, examples: Sequence[Examples], split: str, max_length: int,
                    dtype: torch.dtype) -> torch.Tensor:
    """A bi-encoder teacher's cosine of each pair of `split`, in encode()'s order (each side within `max_length`).

    Each split is encoded on its own: in bf16 a batch's make-up moves a cosine by up to ~6e-4, so encoding
    the splits together would not give the measured checkpoint (results/ablation/birch_soft_labels.md) again."""
    pairs = split_pairs(examples, split)
    return relevance_scores(teacher, [ex.topics[p.qid] for ex, p in pairs], [ex.docs[p.doc_id] for ex, p in pairs],
                            max_length, dtype)


def relevance_scores(scorer: models.Classifier, queries: Sequence[str], texts: Sequence[str], max_length: int,
                     dtype: torch.dtype) -> torch.Tensor:
    """A checkpoint's relevance score of each (query, text): a bi-encoder's cosine, a two-way classifier's log-odds."""
    device = next(scorer.model.parameters()).device
    if not queries:
        return torch.empty(0)
    if scorer.head == "bi_encoder":
        return cosines(scorer.model, scorer.tokenizer, queries, texts, max_length, 64, device, dtype)
    if scorer.n_logits != 2:
        raise models.CheckpointError(f"a filter needs a two-way head or a bi-encoder, {scorer.source} has "
                                     f"{scorer.n_logits} logit(s)")
    ids, types = tokenize_pairs(scorer.tokenizer, queries, texts, "only_second", max_length)
    logits = batched_logits(scorer.model, Encoded(ids, types, torch.empty(0), []), 2, pad_id(scorer.tokenizer),
                            device, dtype)
    return logits[:, scorer.relevant_index] - logits[:, 1 - scorer.relevant_index]


def _exact_array(scores: torch.Tensor) -> np.ndarray:
    """The scores as NumPy holds them, value for value (bf16, which NumPy lacks, widened to fp32 exactly)."""
    return (scores.float() if scores.dtype == torch.bfloat16 else scores).numpy()


def best_units(examples: Sequence[Examples], config: TrainingConfig, device: torch.device,
               dtype: torch.dtype, cache: str | os.PathLike | None = None) -> tuple[list[Examples], dict[str, Any]]:
    """Cleaner positives (positives: best): of each relevant document's units only the one the filter
    checkpoint scores highest stays a positive; its other units are left out, neither positive (they may
    not be relevant) nor negative (they may be). Held-out pairs alike, so that the kept step is chosen on
    the same task; the cap on training pairs is applied after. `cache`: a folder where each pass's scores are
    kept by content (reranker.formats.array_cache), since every row trained on the same pairs asks the same."""
    scorer = models.load_classifier(config.positive_filter, head=config.positive_filter_head, device=device)
    kept, record = [], {"checkpoint": str(config.positive_filter), "head": scorer.head,
                        "fingerprint": scorer.fingerprint}
    for example in examples:
        splits = {}
        for split in ("pairs", "validation"):
            pairs = getattr(example, split)
            positive = [pair for pair in pairs if pair.label]
            queries, texts = [example.topics[p.qid] for p in positive], [example.docs[p.doc_id] for p in positive]
            scores = array_cache.cached(
                cache, [scorer.fingerprint, scorer.head, str(dtype), config.max_length, queries, texts],
                lambda q=queries, t=texts: _exact_array(relevance_scores(scorer, q, t, config.max_length, dtype))).tolist()
            best: dict[tuple[str, str], tuple[float, str]] = {}
            for pair, score in zip(positive, scores):
                key = (pair.qid, unit_document(pair.doc_id))
                if key not in best or score > best[key][0]:  # the first unit wins a tie
                    best[key] = (score, pair.doc_id)
            chosen = {(qid, unit) for (qid, _), (_, unit) in best.items()}
            splits[split] = [pair for pair in pairs if not pair.label or (pair.qid, pair.doc_id) in chosen]
        pairs = capped(splits["pairs"], config)
        left_out = {"pairs": len(example.pairs) - len(splits["pairs"]),
                    "validation_pairs": len(example.validation) - len(splits["validation"])}
        kept.append(example._replace(pairs=pairs, validation=splits["validation"], record={
            **example.record, **pair_counts(pairs, splits["validation"]), "positives_left_out": left_out}))
    return kept, record


def soft_labels(teacher: models.Classifier, examples: Sequence[Examples], data: Encoded, held_out: Encoded,
                objective: Objective, config: TrainingConfig, pad_id: int, dtype: torch.dtype,
                record: dict[str, Any]) -> tuple[Encoded, Encoded]:
    """Targets (1 - w) x judged + w x the teacher's P(relevant), w = teacher_weight: a two-way classifier's
    softmax, or a bi-encoder's cosine calibrated on the training pairs (never on the held-out ones)."""
    relevant, weight = objective.relevant_index, config.teacher_weight
    if teacher.head == "bi_encoder":
        train_cos, held_cos = (teacher_cosines(teacher, examples, split, config.max_length, dtype)
                               for split in ("pairs", "validation"))
        a, b = calibrate(train_cos, data.relevant)
        probabilities = [torch.sigmoid(a * c.double() + b).float() for c in (train_cos, held_cos)]
        record["calibration"] = {"a": round(a, 6), "b": round(b, 6)}
    else:
        probabilities = [torch.softmax(teacher_logits(teacher, encoded, relevant, pad_id, dtype), dim=1)[:, relevant]
                         for encoded in (data, held_out)]
    record["weight"] = weight
    # The teacher's own held-out MRR beside the student's (validation_mrr): whether the student passes it.
    held = probabilities[1].tolist()
    record["validation_mrr"] = round(mrr(held_out.qids, held, held_out.relevant), 6)
    record["validation_mrr_by_source"] = mrr_by_source(held_out.qids, held, held_out.relevant)
    mixed = []
    for encoded, p in zip((data, held_out), probabilities):
        teacher_rows = torch.stack([1 - p, p] if relevant == 1 else [p, 1 - p], dim=1)
        mixed.append(encoded._replace(targets=(1 - weight) * encoded.targets + weight * teacher_rows))
    return mixed[0], mixed[1]
