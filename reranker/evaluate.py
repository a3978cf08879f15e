"""Evaluate TREC runs with ir_measures, keeping per-query values for paired tests.

`AP@1000` is trec_eval's `-M1000 map`; P@20, nDCG@20, RR@10 and R@k are ir_measures' usual ones.
As in trec_eval without `-c`, only queries that are both in the run and in the qrels are evaluated.
"""

from __future__ import annotations

import argparse
import json
import math
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import ir_measures

from reranker.trec import Qrels, Run, qid_order, read_qrels, read_run

DEFAULT_MEASURES = ("AP@1000", "P@20", "nDCG@20")


@dataclass
class Evaluation:
    measures: list[str]
    aggregate: dict[str, float]
    per_query: dict[str, dict[str, float]]  # measure -> qid -> value
    queries: int
    source: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict:
        return {"measures": self.measures, "queries": self.queries, "aggregate": self.aggregate,
                "per_query": self.per_query, "source": self.source}

    @classmethod
    def from_json(cls, data: Mapping) -> "Evaluation":
        return cls(list(data["measures"]), dict(data["aggregate"]), {m: dict(v) for m, v in data["per_query"].items()},
                   int(data["queries"]), dict(data.get("source", {})))


def parse_measures(names: Sequence[str]) -> list:
    parsed = []
    for name in names:
        try:
            parsed.append(ir_measures.parse_measure(name))
        except (ValueError, NameError, SyntaxError) as err:
            raise ValueError(f"unknown measure {name!r} (ir_measures syntax, e.g. AP@1000, P@20, nDCG@20, RR@10, R@100)") from err
    return parsed


def evaluate(run: Run, qrels: Qrels, measures: Sequence[str] = DEFAULT_MEASURES) -> Evaluation:
    """Aggregate and per-query values of `measures` for `run` against `qrels`."""
    names = list(dict.fromkeys(measures))
    parsed = parse_measures(names)
    by_measure = {str(m): name for m, name in zip(parsed, names)}
    per_query: dict[str, dict[str, float]] = {name: {} for name in names}
    for metric in ir_measures.iter_calc(parsed, qrels, run):
        # ir_measures also reports judged queries the run lacks (as 0); trec_eval without -c skips them.
        if run.get(metric.query_id):
            per_query[by_measure[str(metric.measure)]][metric.query_id] = float(metric.value)
    per_query = {name: {qid: values[qid] for qid in qid_order(values)} for name, values in per_query.items()}
    queries = len(next(iter(per_query.values()))) if per_query else 0
    aggregate = {name: (sum(values.values()) / len(values) if values else math.nan) for name, values in per_query.items()}
    return Evaluation(names, aggregate, per_query, queries)


def evaluate_files(run_path: str | os.PathLike, qrels_path: str | os.PathLike,
                   measures: Sequence[str] = DEFAULT_MEASURES) -> Evaluation:
    result = evaluate(read_run(run_path), read_qrels(qrels_path), measures)
    result.source = {"run": str(run_path), "qrels": str(qrels_path)}
    return result


def save(evaluation: Evaluation, path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(evaluation.to_json(), indent=1) + "\n")
    os.replace(tmp, path)


def load(path: str | os.PathLike) -> Evaluation:
    return Evaluation.from_json(json.loads(Path(path).read_text()))


def paired_ttest(a: Mapping[str, float], b: Mapping[str, float]) -> tuple[float, float, int]:
    """Two-sided paired t-test over the queries both have: (t, p, n). Identical inputs give p = 1."""
    from scipy import stats

    common = [qid for qid in a if qid in b]
    if len(common) < 2:
        return math.nan, math.nan, len(common)
    xs = [a[qid] for qid in common]
    ys = [b[qid] for qid in common]
    if all(x == y for x, y in zip(xs, ys)):
        return 0.0, 1.0, len(common)
    result = stats.ttest_rel(xs, ys)
    return float(result.statistic), float(result.pvalue), len(common)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--run", required=True, help="TREC run file (.gz ok)")
    parser.add_argument("--qrels", required=True, help="TREC qrels file (.gz ok)")
    parser.add_argument("--measures", nargs="+", default=list(DEFAULT_MEASURES))
    parser.add_argument("--out", help="write aggregate and per-query values as JSON")
    args = parser.parse_args(argv)
    result = evaluate_files(args.run, args.qrels, args.measures)
    if args.out:
        save(result, args.out)
    width = max(map(len, result.measures))
    for name in result.measures:
        print(f"{name:<{width}}  {result.aggregate[name]:.4f}")
    print(f"{'queries':<{width}}  {result.queries}")
    return 0
