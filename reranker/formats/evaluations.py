"""Saved evaluations: JSON of the measures' aggregate and per-query values (evaluate writes, tables reads)."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from reranker.formats.atomic import write_json
from reranker.formats.errors import FormatError


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
    """A saved evaluation, checked against its own record: the query count and each aggregate are what its per-query
    values give, so a file cut short or edited by hand is refused (one line naming it), never averaged as it is."""
    fix = "make it again with `python -m reranker evaluate`"
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        evaluation = Evaluation.from_json(data)
    except json.JSONDecodeError as err:
        raise FormatError(path, err.lineno, f"not JSON ({err.msg}): cut short or damaged; {fix}") from None
    except (KeyError, TypeError, ValueError, AttributeError) as err:
        raise FormatError(path, None, f"not an evaluation (missing or malformed {err}); {fix}") from None
    for measure in evaluation.measures:
        values = evaluation.per_query.get(measure)
        if values is None or measure not in evaluation.aggregate:
            raise FormatError(path, None, f"measure {measure} has no per-query values or no aggregate; {fix}")
        if len(values) != evaluation.queries:
            raise FormatError(path, None, f"{measure} has per-query values for {len(values)} queries but the file records "
                                          f"{evaluation.queries}: cut short or edited; {fix}")
        mean = math.fsum(values.values()) / len(values) if values else math.nan
        recorded = evaluation.aggregate[measure]
        # per-query values may be stored rounded to 6 places: their mean moves by at most 5e-7
        if not (math.isnan(mean) and math.isnan(recorded)) and not abs(mean - recorded) <= 1e-6:
            raise FormatError(path, None, f"{measure}'s aggregate {recorded!r} is not the mean of its per-query values "
                                          f"({mean:.6f}): edited after it was written; {fix}")
    return evaluation
