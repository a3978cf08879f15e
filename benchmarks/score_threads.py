"""Birch's scoring cost by threads and precision: what one core buys against two, in fp32 and bf16.

The default's Birch score jobs (MiniLM-L6 as a cross-encoder with a two-way head, and as a bi-encoder
of mean-pooled cosines) score Cranfield (query, sentence) pairs at max length 256. On a 2-core machine
a job on 2 threads takes both cores, so it pays only where it runs more than twice as fast as on one.
Measured here, on the same pairs (benchmarks/score_throughput.py's), in `--repeats` interleaved rounds:
pairs/s of each (model, precision, threads), the 2-thread speed-up per round (its median), and bf16
against fp32 on one thread. fp32 scores are the same on 1 and 2 threads (checked: max |diff|); bf16
is reported as skipped, with the reason, on a CPU without bf16 arithmetic. Run it on an idle machine.
Writes results/benchmarks/score_threads.json.

    python benchmarks/score_threads.py [--pairs 1536] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from reranker.core import hardware
from reranker.neural import scoring
from reranker.neural.models import load_classifier

sys.path.insert(0, str(Path(__file__).resolve().parent))
from score_throughput import L6, REPO, cranfield_pairs, save_model, versions  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=1536)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--max-length", type=int, default=256, help="the default's Birch scoring length")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks" / "score_threads.json")
    args = parser.parse_args(argv)
    workdir = Path(tempfile.mkdtemp(prefix="score-threads-"))
    models = {"cross-encoder": load_classifier(str(save_model(L6, workdir / "minilm-l6"))),
              "bi-encoder": load_classifier(L6, head="bi_encoder")}
    pairs = cranfield_pairs(args.pairs, models["cross-encoder"].tokenizer, args.max_length)
    queries, texts = [q for q, _ in pairs], [t for _, t in pairs]
    skipped: dict[str, str] = {}
    scorers = {}
    for name, classifier in models.items():
        kind = "cosine" if classifier.head == "bi_encoder" else "logit"
        for precision in ("exact", "fast"):
            try:
                scorers[name, precision] = scoring.Scorer(classifier, kind=kind, precision=precision, max_length=args.max_length)
            except hardware.PrecisionNotApplicable as err:
                skipped[f"{name} {precision}"] = str(err)
    load_before = os.getloadavg()
    rounds: list[dict[str, float]] = []
    scores: dict[str, np.ndarray] = {}
    for _ in range(args.repeats):
        timing = {}
        for (name, precision), scorer in scorers.items():
            for threads in (1, 2):
                torch.set_num_threads(threads)
                scorer.score(queries[:64], texts[:64])  # this thread count's kernels warm
                started = time.perf_counter()
                scores[f"{name} {precision} {threads}"] = scorer.score(queries, texts)
                timing[f"{name} {precision} {threads}"] = len(pairs) / (time.perf_counter() - started)
        rounds.append(timing)
    keys = list(rounds[0])
    result = {
        "command": "python benchmarks/score_threads.py " + " ".join(argv if argv is not None else sys.argv[1:]),
        "machine": hardware.machine(), "versions": versions(), "pairs": len(pairs), "max_length": args.max_length,
        "repeats": args.repeats, "load_average_before": [round(x, 2) for x in load_before],
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
        "pairs_per_second": {k: {"median": round(statistics.median(r[k] for r in rounds), 1),
                                 "best": round(max(r[k] for r in rounds), 1)} for k in keys},
        "two_thread_speedup": {f"{n} {p}": round(statistics.median(r[f"{n} {p} 2"] / r[f"{n} {p} 1"] for r in rounds), 2)
                               for n, p in scorers},
        "bf16_vs_fp32_one_thread": {n: round(statistics.median(r[f"{n} fast 1"] / r[f"{n} exact 1"] for r in rounds), 2)
                                    for n in models if (n, "fast") in scorers},
        "fp32_max_abs_diff_1_vs_2_threads": {n: float(np.max(np.abs(scores[f"{n} exact 1"] - scores[f"{n} exact 2"])))
                                             for n in models},
        "skipped": skipped,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: result[k] for k in ("two_thread_speedup", "bf16_vs_fp32_one_thread",
                                              "fp32_max_abs_diff_1_vs_2_threads")}, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
