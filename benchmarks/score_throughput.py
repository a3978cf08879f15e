"""Scoring throughput on this machine: reranker.neural.scoring against CrossEncoder and Birch-style 512 padding.

One run, one model (paraphrase-MiniLM-L3-v2 with a seeded two-way head, saved once and loaded from
that directory by every path), the same 2,000 (query, sentence) pairs from Cranfield: for each query
in id order, its best judged document and one other document drawn with the query id as seed,
split by the segment stage (pysbd, windows for max_length 128). Measured:

* pairs/s of reranker.neural.scoring in exact (fp32) and fast (bf16, or why it is not applicable) precision;
* sentence-transformers CrossEncoder.predict (batch 32; it sorts by length too);
* Birch-style scoring: every pair padded to 512 tokens, batch 4, the plain Hugging Face forward
  (each pair costs the same 512 tokens, so it is timed on the first `--padded-pairs` pairs);
* model GFLOP/s from the real token counts, against a dense fp32 matmul on the same cores;
* exact vs one-pair-at-a-time max |diff|, Kendall tau fast vs exact, speed-up ratios vs targets;
* sizing: pairs/s for MiniLM-L6 and L3 at max_length 128 and 256 (pairs windowed for each).

Every path, the sizing runs and the matmul are timed in each of `--repeats` interleaved rounds.

The paths run in `--repeats` interleaved rounds. On a shared machine other jobs come and go, so a
speed-up is the median over rounds of the ratio within a round (the paths of one round see similar
load); pairs/s are given as best and median rounds, with the load average. Writes
results/benchmarks/score_throughput.json.

    python benchmarks/score_throughput.py [--pairs 2000] [--repeats 3] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import torch

from reranker.core import hardware
from reranker.neural import scoring
from reranker.neural.models import LOADERS, load_classifier, write_meta
from reranker.stages import segment as seg

REPO = Path(__file__).resolve().parent.parent
L3 = "sentence-transformers/paraphrase-MiniLM-L3-v2"
L6 = "sentence-transformers/all-MiniLM-L6-v2"
FLAGS_OF_INTEREST = ("avx2", "fma", "avx512f", "avx512_vnni", "avx512_bf16", "amx_tile", "amx_bf16", "amx_int8")
TARGETS = {"exact_vs_crossencoder": 1.2, "fast_vs_crossencoder": 2.0, "exact_vs_padded512": 8.0}


def cranfield_pairs(n_pairs: int, tokenizer, max_length: int) -> list[tuple[str, str]]:
    """(query, sentence) pairs: each query's best judged document and one seeded other document."""
    import ir_datasets

    dataset = ir_datasets.load("cranfield")
    docs = {d.doc_id: (d.title, d.text) for d in dataset.docs_iter()}
    queries = {q.query_id: " ".join(q.text.split()) for q in dataset.queries_iter()}
    qrels: dict[str, dict[str, int]] = {}
    for r in dataset.qrels_iter():
        qrels.setdefault(r.query_id, {})[r.doc_id] = r.relevance
    doc_ids = sorted(docs, key=int)
    splitter = seg.SentenceSplitter()
    budget = seg.token_budget(tokenizer, queries.values(), max_length)
    pairs: list[tuple[str, str]] = []
    for qid in sorted(queries, key=int):
        judged = sorted(qrels.get(qid, {}), key=lambda d: (-qrels[qid][d], int(d)))[:1]
        chosen = judged + [random.Random(int(qid)).choice(doc_ids)]
        for doc_id in chosen:
            units = seg.sentence_units(doc_id, *seg.title_and_body(*docs[doc_id]), splitter, tokenizer, budget)
            pairs.extend((queries[qid], u.text) for u in units)
        if len(pairs) >= n_pairs:
            return pairs[:n_pairs]
    raise ValueError(f"Cranfield gives only {len(pairs)} pairs this way")


def save_model(base: str, directory: Path) -> Path:
    """The encoder with a seeded two-way head, saved so that every path loads the same weights."""
    classifier = load_classifier(base, seed=0)
    classifier.model.save_pretrained(directory)
    classifier.tokenizer.save_pretrained(directory)
    write_meta(directory, {"head": classifier.head, "relevant_index": classifier.relevant_index, "base": base})
    return directory


def timed(function: Callable[[], object]) -> float:
    started = time.perf_counter()
    function()
    return time.perf_counter() - started


def encoder_flops(lengths: Sequence[int], config, cls_only_last: bool = False) -> float:
    """Multiply-adds x 2 of the encoder for sequences of these lengths (embeddings and head are negligible)."""
    h, inner, layers = config.hidden_size, config.intermediate_size, config.num_hidden_layers
    total = 0.0
    for n in lengths:
        per_layer = n * (2 * (4 * h * h + 2 * h * inner) + 4 * n * h)  # projections, FFN, QK^T and AV
        if cls_only_last:  # last layer: K, V for all tokens; the rest for [CLS] only
            last = n * 2 * 2 * h * h + (2 * (2 * h * h + 2 * h * inner) + 4 * n * h)
            total += (layers - 1) * per_layer + last
        else:
            total += layers * per_layer
    return total


def bucket_widths(lengths: Sequence[int], batch_size: int) -> list[int]:
    """Padded lengths the bucketed scorer runs: sorted longest first, each batch padded to its longest."""
    ordered = sorted(lengths, reverse=True)
    return [w for start in range(0, len(ordered), batch_size)
            for w in [ordered[start]] * len(ordered[start:start + batch_size])]


def matmul_gflops(size: int = 2048, repeats: int = 10) -> float:
    a, b = torch.randn(size, size), torch.randn(size, size)
    torch.mm(a, b)
    seconds = min(timed(lambda: torch.mm(a, b)) for _ in range(repeats))
    return 2 * size ** 3 / seconds / 1e9


def versions() -> dict[str, str]:
    import pysbd
    import sentence_transformers
    import transformers

    return {"python": platform.python_version(), "torch": torch.__version__, "transformers": transformers.__version__,
            "sentence_transformers": sentence_transformers.__version__, "pysbd": pysbd.__version__}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pairs", type=int, default=2000)
    parser.add_argument("--padded-pairs", type=int, default=200, help="pairs timed on the 512-padded path")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--batch-size", type=int, default=64, help="reranker.neural.scoring batch (config score.batch_size)")
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks" / "score_throughput.json")
    args = parser.parse_args(argv)
    from scipy.stats import kendalltau
    from sentence_transformers import CrossEncoder
    from transformers import AutoModelForSequenceClassification

    threads = hardware.cpu_threads()
    torch.set_num_threads(threads)
    load_before = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="score-throughput-"))
    model_dir = save_model(L3, workdir / "minilm-l3")
    classifier = load_classifier(str(model_dir))
    tokenizer = classifier.tokenizer
    pairs = cranfield_pairs(args.pairs, tokenizer, max_length=128)
    queries, texts = [q for q, _ in pairs], [t for _, t in pairs]
    lengths = [len(ids) for ids in tokenizer(queries, texts)["input_ids"]]

    exact = scoring.Scorer(classifier, precision="exact", batch_size=args.batch_size, threads=threads)
    try:
        fast: scoring.Scorer | None = scoring.Scorer(classifier, precision="fast", batch_size=args.batch_size, threads=threads)
        fast_reason = None
    except hardware.PrecisionNotApplicable as err:
        fast, fast_reason = None, str(err)
    crossencoder = CrossEncoder(str(model_dir), device="cpu")
    plain = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    padded_pairs = pairs[:args.padded_pairs]

    def padded512() -> None:
        with torch.inference_mode():
            for start in range(0, len(padded_pairs), 4):
                chunk = padded_pairs[start:start + 4]
                batch = tokenizer([q for q, _ in chunk], [t for _, t in chunk], padding="max_length",
                                  truncation=True, max_length=512, return_tensors="pt")
                plain(**batch)

    paths: dict[str, tuple[Callable[[], object], int]] = {
        "exact": (lambda: exact.score(queries, texts), len(pairs)),
        "crossencoder": (lambda: crossencoder.predict(pairs, batch_size=32, show_progress_bar=False), len(pairs)),
        "padded512": (padded512, len(padded_pairs)),
    }
    if fast is not None:
        paths["fast"] = (lambda: fast.score(queries, texts), len(pairs))
    # Sizing: MiniLM-L3 and L6 at max_length 256 (and L6 at 128; L3 at 128 is `exact`), pairs windowed for each.
    mean_tokens: dict[str, float] = {}
    l6 = load_classifier(L6, seed=0)
    for name, sized, max_length in (("minilm-l3@256", classifier, 256), ("minilm-l6@128", l6, 128),
                                    ("minilm-l6@256", l6, 256)):
        scorer = scoring.Scorer(sized, batch_size=args.batch_size, max_length=max_length, threads=threads)
        sized_pairs = cranfield_pairs(args.pairs, sized.tokenizer, max_length)
        q, t = [p[0] for p in sized_pairs], [p[1] for p in sized_pairs]
        mean_tokens[name] = round(float(np.mean([len(x) for x in sized.tokenizer(q, t)["input_ids"]])), 1)
        paths[name] = ((lambda scorer=scorer, q=q, t=t: scorer.score(q, t)), len(sized_pairs))

    exact.score(queries[:256], texts[:256])  # warm-up: first calls allocate and pick kernels
    crossencoder.predict(pairs[:256], batch_size=32, show_progress_bar=False)
    if fast is not None:
        fast.score(queries[:256], texts[:256])
    seconds: dict[str, list[float]] = {name: [] for name in paths}
    matmul = []
    for round_ in range(args.repeats):
        matmul.append(matmul_gflops())
        for name, (function, _) in paths.items():
            seconds[name].append(timed(function))
            print(f"round {round_ + 1}: {name} {paths[name][1] / seconds[name][-1]:.1f} pairs/s", file=sys.stderr)
    pairs_per_second = {name: paths[name][1] / min(s) for name, s in seconds.items()}
    median_pairs_per_second = {name: round(paths[name][1] / statistics.median(s), 1) for name, s in seconds.items()}

    exact_scores = exact.score(queries, texts)
    with torch.inference_mode():
        reference = np.array([float(classifier.model(**tokenizer(q, t, return_tensors="pt")).logits[0, 1])
                              for q, t in pairs])
    crossencoder_scores = np.asarray(crossencoder.predict(pairs, batch_size=32, show_progress_bar=False))[:, 1]

    config = classifier.model.config
    model_flops = encoder_flops(lengths, config)
    cls_only_last = exact.fast_path and LOADERS[exact.classifier.head].pooling != "mean"
    executed_flops = encoder_flops(bucket_widths(lengths, args.batch_size), config, cls_only_last=cls_only_last)
    exact_seconds = min(seconds["exact"])
    peak = max(matmul)

    sizing = {name: {"pairs_per_second": round(pairs_per_second[name], 1),
                     "minutes_per_100k_pairs": round(1e5 / pairs_per_second[name] / 60, 1),
                     "mean_tokens": mean_tokens[name]} for name in mean_tokens}
    sizing["minilm-l3@128"] = {"pairs_per_second": round(pairs_per_second["exact"], 1),
                               "minutes_per_100k_pairs": round(1e5 / pairs_per_second["exact"] / 60, 1),
                               "mean_tokens": round(float(np.mean(lengths)), 1)}

    info = hardware.cpu_info()
    def speedup(fast_path: str, slow_path: str) -> float:
        return statistics.median((paths[fast_path][1] / a) / (paths[slow_path][1] / b)
                                 for a, b in zip(seconds[fast_path], seconds[slow_path]))

    ratios = {"exact_vs_crossencoder": speedup("exact", "crossencoder"),
              "exact_vs_padded512": speedup("exact", "padded512")}
    if fast is not None:
        ratios["fast_vs_crossencoder"] = speedup("fast", "crossencoder")
    result = {
        "model": {"base": L3, "head": "seeded two-way sequence classification (seed 0)", "layers": config.num_hidden_layers,
                  "fingerprint": classifier.fingerprint},
        "pairs": {"count": len(pairs), "source": "cranfield queries x pysbd sentences (best judged + one seeded other doc)",
                  "mean_tokens": round(float(np.mean(lengths)), 1), "max_tokens": max(lengths),
                  "padded512_timed_on": len(padded_pairs)},
        "best_pairs_per_second": {name: round(value, 1) for name, value in pairs_per_second.items()},
        "median_pairs_per_second": median_pairs_per_second,
        "seconds": {name: [round(s, 3) for s in values] for name, values in seconds.items()},
        "fast": {"applicable": fast is not None, "reason": fast_reason,
                 "kendall_tau_vs_exact": (float(kendalltau(fast.score(queries, texts), exact_scores).statistic)
                                          if fast is not None else None)},
        "exact_vs_one_pair_max_abs_diff": float(np.abs(exact_scores - reference).max()),
        "crossencoder_vs_one_pair_max_abs_diff": float(np.abs(crossencoder_scores - reference).max()),
        "speedups": {name: {"measured": round(value, 2), "target": TARGETS[name], "met": value >= TARGETS[name]}
                     for name, value in ratios.items()},
        "gflops": {"model_gflop": round(model_flops / 1e9, 2),
                   "exact_effective_gflops": round(model_flops / exact_seconds / 1e9, 1),
                   "exact_executed_gflops": round(executed_flops / exact_seconds / 1e9, 1),
                   "crossencoder_effective_gflops": round(model_flops / min(seconds["crossencoder"]) / 1e9, 1),
                   "matmul_fp32_2048_gflops": round(peak, 1),
                   "note": "effective = full-forward FLOPs of the unpadded pairs / time; executed = FLOPs the "
                           "bucketed CLS-only path runs, padding included"},
        "sizing_exact": sizing,
        "machine": {"cpu": info["model"], "flags": {flag: flag in info["flags"] for flag in FLAGS_OF_INTEREST},
                    "torch_threads": torch.get_num_threads(), "cores_available": threads,
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "settings": {"batch_size": args.batch_size, "crossencoder_batch_size": 32, "padded512_batch_size": 4,
                     "repeats": args.repeats, "attention": config._attn_implementation, "cls_only_last_layer": cls_only_last},
        "versions": versions(),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, args.out)
    print(json.dumps({"best_pairs_per_second": result["best_pairs_per_second"], "speedups": result["speedups"]}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
