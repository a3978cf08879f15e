"""Rows of an ablation from a run folder's evaluations: a measure per target, its ratio to a baseline
run, a paired t-test against the baseline, and Holm's correction across the rows of each target.

Used for results/ablation/: what a training choice does, measured on the targets' eval files that the
DAG wrote (work/eval/<collection>/<run>.json), so that every number names the run it came from.

    python benchmarks/ablation_rows.py --run-dir runs/kd --targets cranfield vaswani cisi cacm \
        --baseline bm25_rm3 --rows maxp.minilm-l6-bi-encoder.sentences maxp.scifact-soft.sentences
"""

from __future__ import annotations

import argparse
from pathlib import Path

from reranker.formats.evaluations import Evaluation, read_evaluation
from reranker.formats.layout import Layout
from reranker.reproduction.significance import holm, paired_ttest


def evaluation(run_dir: Path, collection: str, run: str) -> Evaluation:
    return read_evaluation(Layout(str(run_dir)).path("eval", collection=collection, run=run))


def rows(run_dir: Path, targets: list[str], baseline: str, runs: list[str], measure: str) -> str:
    """A markdown table: one line per run, per target its mean, ratio to the baseline and Holm-adjusted p."""
    head = ["run"] + [f"{t} {measure}" for t in targets]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    cells: dict[str, list[str]] = {run: [] for run in [baseline, *runs]}
    for target in targets:
        base = evaluation(run_dir, target, baseline)
        base_mean = base.aggregate[measure]
        cells[baseline].append(f"{base_mean:.4f}")
        values = {run: evaluation(run_dir, target, run) for run in runs}
        pvalues = [paired_ttest(values[run].per_query[measure], base.per_query[measure])[1] for run in runs]
        for run, p, adjusted in zip(runs, pvalues, holm(pvalues)):
            mean = values[run].aggregate[measure]
            mark = "†" if adjusted < 0.05 and mean > base_mean else ""
            cells[run].append(f"{mean:.4f}{mark} ({mean / base_mean:.2f}x; p {p:.3g}, Holm {adjusted:.3g})")
    lines += ["| " + " | ".join([run, *cells[run]]) + " |" for run in [baseline, *runs]]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--run-dir", type=Path, required=True)
    p.add_argument("--targets", nargs="+", required=True)
    p.add_argument("--baseline", required=True, help="the run every row is tested against")
    p.add_argument("--rows", nargs="+", required=True, help="run names (work/runs/<collection>/<name>.run)")
    p.add_argument("--measure", default="AP@1000")
    args = p.parse_args()
    print(rows(args.run_dir, args.targets, args.baseline, args.rows, args.measure))


if __name__ == "__main__":
    main()
