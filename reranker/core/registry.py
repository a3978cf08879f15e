"""The suite's named choices, registered once: first-stage models, aggregators, heads, score kinds, units.

The config schema's enums, Snakemake's wildcard constraints, the stages' CLI choices and the tables'
labels all derive from these mappings, so adding one is one entry here plus its config.
Light on purpose (no torch, no Java): the Snakefile and the config loader import it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class FirstStage:
    """A Lucene first stage: BM25, with RM3 expansion when `rm3` is set."""

    label: str
    rm3: bool


@dataclass(frozen=True)
class Aggregator:
    """A document score from its units' scores, in document order (no first-stage interpolation)."""

    label: str
    combine: Callable[[Sequence[float]], float]


FIRST_STAGES: dict[str, FirstStage] = {
    "bm25": FirstStage("BM25", rm3=False),
    "bm25_rm3": FirstStage("BM25+RM3", rm3=True),
}

AGGREGATORS: dict[str, Aggregator] = {
    "firstp": Aggregator("FirstP", lambda scores: scores[0]),
    "maxp": Aggregator("MaxP", max),
    "sump": Aggregator("SumP", math.fsum),
    "meanp": Aggregator("MeanP", lambda scores: math.fsum(scores) / len(scores)),
}

# How a checkpoint turns a (query, text) pair into a relevance score; see reranker.neural.models.
HEADS: dict[str, str] = {
    "sequence_classification": "a linear layer on BERT's [CLS] pooler, as BERT was pre-trained",
    "mean_pooling": "a linear layer on the mean of the last layer's token vectors (sentence-transformers bases)",
    "next_sentence_prediction": "BERT's NSP head (Birch's released checkpoints)",
    "bi_encoder": "the cosine of the mean-pooled query and text vectors (fine-tuned as a two-way classifier of it)",
}

SCORE_KINDS: dict[str, str] = {
    "logit": "the relevant class's logit, as Birch",
    "log_prob": "the relevant class's log-probability",
    "cosine": "a bi-encoder's cosine (bi_encoder heads only)",
    "argmax": "the predicted class (grade level), ties broken by the expected level: level + E[level] / K",
}

UNITS: dict[str, str] = {
    "sentences": "pysbd sentences, cut into windows where query + sentence exceed the token budget",
    "passages": "fixed word windows with a stride, optionally prefixed by the title",
    "documents": "the whole document, title and text, one unit (truncated by the scorer)",
}

# What a fine-tuned classifier learns from a judged pair; see reranker.neural.objectives.
OBJECTIVES: dict[str, str] = {
    "binary": "two-way softmax: relevant (grade >= relevant_min_grade) or not",
    "multi_label": "a sigmoid per grade level, BCE against the one-hot level",
    "multi_class_multi_label": "softmax cross-entropy and the multi-label BCE on the same logits, weighted",
    "regression": "one output, squared error against the level's value (grade_values)",
    "distill": "two-way head, squared error against a teacher checkpoint's logits (knowledge distillation)",
    "soft_labels": "two-way softmax, cross-entropy against the judged label mixed with a teacher's relevance probability",
}

# How a document's score is read from a classifier's logits (the score stage's --ranking).
RANKINGS: dict[str, str] = {
    "relevant": "the relevant logit (two-way heads), or the single output (regression)",
    "argmax": "the predicted grade level, ties by the expected level",
    **{f"label{level}": f"grade level {level}'s logit" for level in range(5)},
}

# Multiple-testing corrections of a table column's t-tests; see reranker.reproduction.significance.
CORRECTIONS: dict[str, str] = {
    "none": "each test at alpha",
    "bonferroni": "each p times the column's number of tests",
    "holm": "Holm's step-down over the column's tests (uniformly more powerful than Bonferroni)",
}


def enums() -> dict[str, list[str]]:
    """The schema's `$defs` enums that come from this registry."""
    return {
        "first_stage": list(FIRST_STAGES),
        "aggregator": list(AGGREGATORS),
        "head": list(HEADS),
        "score_kind": [kind for kind in SCORE_KINDS if kind != "cosine"],
        "unit": list(UNITS),
        "objective": list(OBJECTIVES),
        "ranking": list(RANKINGS),
        "correction": list(CORRECTIONS),
    }


def wildcard_pattern(names) -> str:
    """A Snakemake wildcard constraint matching exactly these names."""
    return "|".join(re.escape(name) for name in sorted(names)) or "(?!)"
