"""The most a reranker of a run's top R can reach: every judged-relevant document of the top R moved to
its head (by grade, then in the run's order), the rest in the run's order, beside the run itself.

Headroom for a reranker (asked of the NTNU rows): if BM25 is already near this ceiling, no reranker
of its top R can show much. Measured as the evaluate stage measures, on the run folder's own run and qrels.

    python benchmarks/rerank_ceiling.py --run runs/x/work/runs/beir-scifact-test/bm25.run \
        --qrels runs/x/work/collections/beir-scifact-test/qrels.txt --depths 10 20 30 40 --measures RR@10 R@10
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reranker.formats.qrels import read_qrels
from reranker.formats.runs import read_run, sorted_docs
from reranker.stages.evaluate import evaluate


def oracle(run: dict[str, dict[str, float]], qrels: dict[str, dict[str, int]], depth: int) -> dict[str, dict[str, float]]:
    """The run with its top `depth` perfectly reranked (judged grade > 0 first, highest grade first) and
    everything below kept in order."""
    out = {}
    for qid, scores in run.items():
        ranked = [doc for doc, _ in sorted_docs(scores)]
        judged = qrels.get(qid, {})
        head = sorted(ranked[:depth], key=lambda doc: -max(judged.get(doc, 0), 0))  # stable: the run's order within a grade
        order = head + ranked[depth:]
        out[qid] = {doc: float(len(order) - rank) for rank, doc in enumerate(order)}
    return out


def table(run_path: Path, qrels_path: Path, depths: list[int], measures: list[str]) -> str:
    run, qrels = read_run(run_path), read_qrels(qrels_path)
    lines = ["| run | " + " | ".join(measures) + " |", "|---|" + "---|" * len(measures)]
    rows = [(run_path.stem, run)] + [(f"its top {depth} perfectly reranked", oracle(run, qrels, depth)) for depth in depths]
    for label, scores in rows:
        means = evaluate(scores, qrels, measures).aggregate  # the evaluate stage's own measures
        lines.append(f"| {label} | " + " | ".join(f"{means[m]:.4f}" for m in measures) + " |")
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run", type=Path, required=True)
    p.add_argument("--qrels", type=Path, required=True)
    p.add_argument("--depths", type=int, nargs="+", default=[20])
    p.add_argument("--measures", nargs="+", default=["RR@10", "R@10"])
    args = p.parse_args()
    print(table(args.run, args.qrels, args.depths, args.measures))


if __name__ == "__main__":
    main()
