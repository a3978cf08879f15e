"""Training settings: TrainingConfig, one field per `training:` setting of the config schema (its
defaults and descriptions there), with its checks; and a training source, one collection's files and the
queries it trains on."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranker.core.config import defaults as config_defaults
from reranker.core.registry import UNITS
from reranker.core.settings import RULE_ONLY
from reranker.formats.errors import FormatError, InputError
from reranker.formats.text import open_text
from reranker.formats.topics import read_topics_tsv

SELECTIONS = ("best", "last")
TRAINABLE = ("all", "head")
TEACHER_OBJECTIVES = ("distill", "soft_labels")
POSITIVES = ("all", "best")


class _Settings:
    """Checks and conversions of TrainingConfig (whose fields come from the schema)."""

    def __post_init__(self) -> None:
        if not 0 <= self.validation_fraction < 1:
            raise InputError(f"validation_fraction must be in [0, 1), not {self.validation_fraction}")
        if self.select not in SELECTIONS:
            raise InputError(f"select must be one of {', '.join(SELECTIONS)}, not {self.select!r}")
        if self.eval_every < 1:
            raise InputError("eval_every must be positive")
        if self.trainable not in TRAINABLE:
            raise InputError(f"trainable must be one of {', '.join(TRAINABLE)}, not {self.trainable!r}")
        if self.unit not in UNITS:
            raise InputError(f"unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if (self.objective in TEACHER_OBJECTIVES) != (self.teacher is not None):
            raise InputError(f"a teacher goes with the {' or '.join(TEACHER_OBJECTIVES)} objective: give both or neither")
        if self.head_from is not None and self.task == "mlm":
            raise InputError("head_from carries a relevance head: task mlm trains none")
        if self.positives not in POSITIVES:
            raise InputError(f"positives must be one of {', '.join(POSITIVES)}, not {self.positives!r}")
        if (self.positives == "best") != (self.positive_filter is not None):
            raise InputError("a positive_filter goes with positives: best (it picks each relevant document's best unit): "
                             "give both or neither")
        if self.positives == "best" and (self.unit == "documents" or self.task != "rank"):
            raise InputError("positives: best picks among a relevant document's units: it needs task rank and unit "
                             "passages or sentences")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TrainingConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise InputError(f"unknown training settings: {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        """JSON's view: sequences as lists (so a written reranker.json compares equal)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


# Hyper-parameters: one field per `training:` setting of the config schema, with its default and
# description there (`gpus` is the scheduler's, not the trainer's; `negatives_from` picks the --run a rule
# hands the trainer: reranker.core.settings.RULE_ONLY).
TrainingConfig = dataclasses.make_dataclass(
    "TrainingConfig",
    [(name, Any, dataclasses.field(default=tuple(value) if isinstance(value, list) else value))
     for name, value in config_defaults()["training"].items() if name not in ("gpus", *RULE_ONLY)],
    bases=(_Settings,), frozen=True)
TrainingConfig.__module__ = __name__
DEFAULT_TRAINING = TrainingConfig()


@dataclass(frozen=True)
class Source:
    """One collection's training files. `train_qids` (when given) are the only queries trained on."""

    name: str
    docs: Path
    topics: Path
    qrels: Path
    run: Path
    train_qids: frozenset[str] | None = None
    relevant_min_grade: int = 1

    def files(self) -> dict[str, Path]:
        return {"docs": Path(self.docs), "topics": Path(self.topics), "qrels": Path(self.qrels), "run": Path(self.run)}


def fold_training_queries(folds_path: str | os.PathLike, fold: str, topics_path: str | os.PathLike) -> frozenset[str]:
    """The collection's queries outside `fold`'s test queries; every query of the folds must be in the topics."""
    from reranker.formats.folds import fold_queries, fold_test_queries

    (folds, test), topics = fold_test_queries(folds_path, fold), read_topics_tsv(topics_path)
    unknown = sorted(fold_queries(folds) - topics.keys(), key=lambda q: (len(q), q))
    if unknown:
        raise FormatError(folds_path, None, f"{len(unknown)} queries of the folds are not in the collection's topics "
                          f"{topics_path}, e.g. {', '.join(unknown[:5])}")
    return frozenset(topics) - test


def read_qids(path: str | os.PathLike) -> frozenset[str]:
    """Query ids separated by whitespace (one per line, typically)."""
    with open_text(path) as f:
        qids = frozenset(f.read().split())
    if not qids:
        raise FormatError(path, None, "no query ids")
    return qids


def parse_source(spec: str) -> Source:
    """`NAME:DOCS:TOPICS:QRELS:RUN[:TRAIN_QIDS]`."""
    parts = spec.split(":")
    if len(parts) not in (5, 6) or not all(parts):
        raise InputError(f"--source {spec!r}: expected NAME:DOCS:TOPICS:QRELS:RUN[:TRAIN_QIDS]")
    name, docs, topics, qrels, run = parts[:5]
    return Source(name, Path(docs), Path(topics), Path(qrels), Path(run),
                  read_qids(parts[5]) if len(parts) == 6 else None)
