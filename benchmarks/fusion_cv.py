"""Benchmark: Birch's cross-validated grid search, vectorised AP against one ir_measures call per grid point.

Both searches run on the same candidates and must choose the same (a, w2, w3) per fold. The
baseline is the strongest per-combination form: the qrels are loaded into one ir_measures
evaluator, every grid point's fused run is built and evaluated once for all queries, and each
fold averages its training queries (Birch's scripts wrote a run and ran trec_eval per fold and
point).

    python benchmarks/fusion_cv.py [--run R --scores S.tsv --qrels Q --folds F.json] [--top-n 3]

Without inputs it uses a deterministic synthetic set shaped like Cranfield (225 queries, 5 folds of
45, a depth-1000 first-stage run whose top 100 documents have ~6 unit scores each, ~8 judged
documents per query with grades -1..4) and says so in the JSON. Writes
results/benchmarks/fusion_cv.json.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

import ir_measures
import numpy as np
from tqdm import tqdm

from reranker.formats.atomic import write_json
from reranker.formats.folds import read_folds
from reranker.formats.ids import qid_order
from reranker.formats.qrels import Qrels, read_qrels
from reranker.formats.runs import Run, read_run, sorted_docs
from reranker.formats.unit_scores import UnitScores, read_unit_scores
from reranker.ranking import fusion

REPO = Path(__file__).resolve().parent.parent


def synthetic_inputs(seed: int = 0, queries: int = 225, depth: int = 1000, k: int = 100, folds: int = 5):
    """Cranfield-shaped run, unit scores, qrels and folds. Relevant documents sit high in the
    first-stage run and get higher unit scores, so the grid search has something to find."""
    rng = np.random.default_rng(seed)
    collection = [str(d) for d in range(1, 1401)]
    run: Run = {}
    units: UnitScores = {}
    qrels: Qrels = {}
    for q in range(1, queries + 1):
        qid = str(q)
        doc_ids = rng.choice(collection, depth, replace=False).tolist()
        outside = sorted(set(collection) - set(doc_ids))
        judged: dict[str, int] = {}
        for grade in rng.choice([-1, 1, 2, 3, 4], 1 + rng.poisson(7.2), p=[0.1, 0.2, 0.3, 0.25, 0.15]):
            # Judged documents sit high in the run (geometric rank, mean 40); 5% were not retrieved.
            missed = rng.random() < 0.05
            doc_id = str(rng.choice(outside)) if missed else doc_ids[min(int(rng.geometric(1 / 40)), depth) - 1]
            judged.setdefault(doc_id, int(grade))
        qrels[qid] = judged
        # BM25-like scores, 4 decimals as Anserini prints them: a few ties.
        run[qid] = dict(zip(doc_ids, np.round(20 * np.exp(-np.arange(depth) / 150) + rng.normal(0, 0.5, depth), 4).tolist()))
        top = [doc_id for doc_id, _ in sorted_docs(run[qid])[:k]]
        units[qid] = {}
        for doc_id in top:
            boost = 1.5 * (judged.get(doc_id, 0) >= 1)
            logits = rng.normal(-2.0, 1.5, 1 + rng.poisson(5)) + boost * (rng.random() < 0.6)
            units[qid][doc_id] = np.round(logits, 6).tolist()
    order = rng.permutation(queries) + 1
    fold_qids = {f"fold{i + 1}": qid_order(str(q) for q in order[i::folds]) for i in range(folds)}
    description = (f"synthetic, Cranfield-shaped (seed {seed}): {queries} queries, depth {depth}, top {k} with "
                   f"1+Poisson(5) unit scores each, 1+Poisson(7.2) judged documents per query, {folds} folds")
    return run, units, qrels, fold_qids, description


def brute_force(run: Run, candidates, qrels: Qrels, folds, top_n: int, params: np.ndarray):
    """Per grid point: build the fused run, evaluate it with ir_measures; then choose per fold."""
    evaluated = [qid for qid in qid_order({q for qids in folds.values() for q in qids}) if qid in run and qid in qrels]
    evaluator = ir_measures.evaluator([ir_measures.AP @ fusion.CUTOFF], {q: qrels[q] for q in evaluated})
    matrix = np.zeros((len(evaluated), len(params)))
    row = {qid: i for i, qid in enumerate(evaluated)}
    for g, point in enumerate(tqdm(params, desc="ir_measures per grid point", file=sys.stderr)):
        for metric in evaluator.iter_calc(fusion.fuse(run, candidates, point, top_n, evaluated)):
            matrix[row[metric.query_id], g] = metric.value
    choices = []
    for fold, test_qids in folds.items():
        test = set(test_qids)
        train_rows = [row[q] for q in evaluated if q not in test]
        test_rows = [row[q] for q in evaluated if q in test]
        best = fusion.best_grid_point(matrix[train_rows].mean(axis=0), params)
        choices.append({"fold": fold, "a": float(params[best, 0]), "w2": float(params[best, 1]), "w3": float(params[best, 2]),
                        "train_ap": float(matrix[train_rows, best].mean()), "test_ap": float(matrix[test_rows, best].mean())})
    return choices


def machine(load_before: list[float]) -> dict:
    """Where the timings come from; the load averages show how shared the machine was."""
    cpuinfo = Path("/proc/cpuinfo")
    cpu = next((line.split(":", 1)[1].strip() for line in cpuinfo.read_text().splitlines()
                if line.startswith("model name")), None) if cpuinfo.exists() else None
    return {"platform": platform.platform(), "processor": cpu or platform.processor(), "cpus": os.cpu_count(),
            "python": platform.python_version(), "numpy": np.__version__, "ir_measures": ir_measures.__version__,
            "load_average_1_5_15min": {"before": load_before, "after": list(os.getloadavg())}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run", help="first-stage TREC run; with --scores, --qrels, --folds")
    parser.add_argument("--scores", help="unit scores TSV: qid, doc_id, unit, score")
    parser.add_argument("--qrels")
    parser.add_argument("--folds")
    parser.add_argument("--top-n", type=int, choices=fusion.TOP_N, default=3)
    parser.add_argument("--step", type=float, default=0.1)
    parser.add_argument("--seed", type=int, default=0, help="seed of the synthetic inputs")
    parser.add_argument("--out", default=str(REPO / "results" / "benchmarks" / "fusion_cv.json"))
    args = parser.parse_args(argv)

    given = [args.run, args.scores, args.qrels, args.folds]
    if any(given) and not all(given):
        parser.error("give all of --run, --scores, --qrels and --folds, or none for the synthetic set")
    if all(given):
        run, units, qrels = read_run(args.run), read_unit_scores(args.scores), read_qrels(args.qrels)
        folds = read_folds(args.folds)
        description = {"kind": "files", "run": args.run, "scores": args.scores, "qrels": args.qrels, "folds": args.folds}
    else:
        run, units, qrels, folds, text = synthetic_inputs(args.seed)
        description = {"kind": "synthetic", "description": text}

    candidates = fusion.birch_candidates(run, units, args.top_n)
    params = fusion.parameter_grid(args.top_n, args.step, args.step)

    load_before = list(os.getloadavg())
    start = time.perf_counter()
    _, vectorised = fusion.cross_validate(run, candidates, qrels, folds, args.top_n, args.step, args.step)
    vectorised_seconds = time.perf_counter() - start
    start = time.perf_counter()
    baseline = brute_force(run, candidates, qrels, folds, args.top_n, params)
    baseline_seconds = time.perf_counter() - start

    same = [(c.a, c.w2, c.w3) == (b["a"], b["w2"], b["w3"]) and abs(c.train_ap - b["train_ap"]) <= fusion.TIE_TOLERANCE
            and abs(c.test_ap - b["test_ap"]) <= fusion.TIE_TOLERANCE for c, b in zip(vectorised, baseline)]
    speed_up = baseline_seconds / vectorised_seconds
    result = {
        "inputs": description,
        "queries": len(run),
        "evaluated_queries": vectorised[0].train_queries + vectorised[0].test_queries,
        "documents": sum(map(len, run.values())),
        "rescored_documents": sum(len(c.doc_ids) for c in candidates.values()),
        "unit_scores": sum(len(u) for docs in units.values() for u in docs.values()),
        "top_n": args.top_n,
        "step": args.step,
        "grid_points": len(params),
        "folds": len(folds),
        "seconds": {"vectorised": vectorised_seconds, "ir_measures_per_grid_point": baseline_seconds},
        "speed_up": speed_up,
        "target_speed_up": 50,
        "identical_choices": all(same),
        "choices": [{"vectorised": {k: v for k, v in vars(c).items() if k not in ("n",)}, "ir_measures": b}
                    for c, b in zip(vectorised, baseline)],
        "machine": machine(load_before),
    }
    write_json(args.out, result)
    print(f"{len(params)} grid points, {result['evaluated_queries']} queries: vectorised {vectorised_seconds:.2f} s, "
          f"ir_measures per grid point {baseline_seconds:.1f} s, speed-up {speed_up:.0f}x; "
          f"identical choices: {all(same)} -> {args.out}")
    if not all(same):
        print("the two searches chose differently in folds " + ", ".join(c.fold for c, ok in zip(vectorised, same) if not ok),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
