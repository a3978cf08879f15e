"""Saved evaluations: JSON of the measures' aggregate and per-query values (evaluate writes, tables reads)."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from reranker.formats.atomic import write_json


@dataclass
class Evaluation:
    measures: list[str]
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]]  # measure -> qid -> value
    queries: int
    source: dict[str, str] = field(default_factory=dict)
    # the run's queries: how many, and which were left out (no judgments) or missing (judged, not in the run)
    coverage: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"measures": self.measures, "queries": self.queries, "coverage": self.coverage, "aggregate": self.aggregate,
                "per_query": self.per_query, "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping) -> Evaluation:
        return cls(list(data["measures"]), dict(data["aggregate"]), {m: dict(v) for m, v in data["per_query"].items()},
                   int(data["queries"]), dict(data.get("source", {})), dict(data.get("coverage", {})))


def write_evaluation(evaluation: Evaluation, path: str | os.PathLike) -> None:
    write_json(path, evaluation.to_json(), indent=1)


def read_evaluation(path: str | os.PathLike) -> Evaluation:
    return Evaluation.from_json(json.loads(Path(path).read_text()))
