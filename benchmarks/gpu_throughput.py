"""Scoring throughput on a GPU (or, without one, this CPU, marked so) for MiniLM-, bert-base- and
bert-large-shaped models, on real Cranfield (query, sentence) pairs.

Random weights: speed depends on the shape, not on what the weights learned, and a GPU machine with
no hub access can build them. Per shape, in one run:

* `fast`: reranker.neural.scoring's path in bf16 (fp16 where bf16 is missing), after a warm-up pass over the
  same pairs (every new batch shape costs a kernel plan once), batches capped by pairs and tokens;
* `exact`: the same path in fp32;
* `padded512`: Birch's way, the plain Hugging Face forward with every pair padded to 512 tokens,
  fp32, timed on a subset (each pair costs the same);
* achieved TFLOP/s from the real token counts, against a bf16 (fp32 on a CPU without bf16) matmul
  peak measured here; Kendall tau of fast against exact scores;
* a check: `exact`'s batched logits (reranker.neural.forward's layer-by-layer path) against the plain Hugging
  Face forward of one pair at a time, fp32, on the first `--check-pairs` pairs (the largest difference);
* sizing: hours to score Birch's Robust04 setting (249 queries x 1000 documents x ~24.6 sentences:
  about 6.1 million pairs per checkpoint) on one device and on N.

`--trained DIR ...` adds trained checkpoints (a saved reranker directory; weights stored in bf16, as
`--write-trained SRC DST` writes them here to fit the GPU machine's upload limit, are upcast to fp32
first): the same measurements on weights that learned, whose logits are not nearly tied as random
ones are, so that Kendall tau says what bf16 does to a real ranking. Tau is given over all pairs and
as the mean over queries of the tau within each query's pairs (the order a reranker uses).

The pairs come from `--pairs-file` (JSONL of {"query", "text"}), which `--write-pairs` makes from
ir_datasets' Cranfield, so that the GPU machine needs neither ir_datasets nor the collection; the
tokenizer is a saved BERT-uncased vocabulary (`--tokenizer DIR`, written by `--write-pairs` too).

    python benchmarks/gpu_throughput.py --write-pairs benchmarks/data/cranfield_pairs   # here
    python benchmarks/gpu_throughput.py --pairs-file benchmarks/data/cranfield_pairs/pairs.jsonl \
        --tokenizer benchmarks/data/cranfield_pairs [--out results/benchmarks/gpu_throughput.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch

from reranker.core import hardware
from reranker.neural import scoring
from reranker.neural.models import load_classifier, write_meta

SHAPES = {  # (layers, hidden, heads, intermediate)
    "minilm-l6": (6, 384, 12, 1536),
    "bert-base": (12, 768, 12, 3072),
    "bert-large": (24, 1024, 16, 4096),
}
ROBUST04_PAIRS = 249 * 1000 * 24.6  # Birch's Robust04 run: queries x depth x mean sentences per document


def cranfield_pairs(n_pairs: int, tokenizer, max_length: int, docs_per_query: int = 10) -> list[tuple[str, str]]:
    """(query, sentence) pairs: per query, its judged documents (best first) then seeded others, 10 in all."""
    import random

    import ir_datasets

    from reranker.stages import segment as seg

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
        judged = [d for d in sorted(qrels.get(qid, {}), key=lambda d: (-qrels[qid][d], int(d))) if d in docs]
        chosen = (judged + random.Random(int(qid)).sample(doc_ids, docs_per_query))[:docs_per_query]
        for doc_id in chosen:
            units = seg.sentence_units(doc_id, *seg.title_and_body(*docs[doc_id]), splitter, tokenizer, budget)
            pairs.extend((queries[qid], u.text) for u in units)
        if len(pairs) >= n_pairs:
            return pairs[:n_pairs]
    return pairs


def write_pairs(directory: Path, n_pairs: int, base: str) -> None:
    """Cranfield pairs and the tokenizer, for a machine without either."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(base)
    pairs = cranfield_pairs(n_pairs, tokenizer, 512)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "pairs.jsonl", "w") as f:
        f.writelines(json.dumps({"query": q, "text": t}) + "\n" for q, t in pairs)
    tokenizer.save_pretrained(directory)
    print(f"{len(pairs)} pairs and the tokenizer of {base} -> {directory}", file=sys.stderr)


def random_model(shape: str, tokenizer_dir: Path, directory: Path) -> Path:
    """A BERT classifier of the shape, seeded random weights, saved with the tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    layers, hidden, heads, inner = SHAPES[shape]
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=inner, max_position_embeddings=512, num_labels=2)
    torch.manual_seed(0)
    BertForSequenceClassification(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    write_meta(directory, {"head": "sequence_classification", "relevant_index": 1, "base": f"random {shape}"})
    return directory


def write_trained(source: Path, directory: Path) -> None:
    """A copy of a saved checkpoint with its weights in bf16 (half the bytes), for a machine they must be carried to."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, directory, dirs_exist_ok=True, ignore=shutil.ignore_patterns("*.png", "*.jsonl"))
    weights = directory / "model.safetensors"
    save_file({k: v.to(torch.bfloat16).contiguous() for k, v in load_file(weights).items()}, weights, metadata={"format": "pt"})
    print(f"{source} -> {directory} (bf16 weights)", file=sys.stderr)


def trained_model(source: Path, directory: Path) -> Path:
    """A saved checkpoint with its weights upcast to fp32 (bf16-rounded values if it was carried in bf16)."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(source, directory, dirs_exist_ok=True)
    weights = directory / "model.safetensors"
    save_file({k: v.float().contiguous() for k, v in load_file(weights).items()}, weights, metadata={"format": "pt"})
    config = json.loads((directory / "config.json").read_text())
    config["dtype"] = "float32"
    (directory / "config.json").write_text(json.dumps(config, indent=2))
    return directory


def shape_of(directory: Path) -> tuple[int, int, int, int]:
    config = json.loads((directory / "config.json").read_text())
    return (config["num_hidden_layers"], config["hidden_size"], config["num_attention_heads"], config["intermediate_size"])


def within_query_tau(queries: list[str], a: np.ndarray, b: np.ndarray) -> float | None:
    """Mean over queries of Kendall tau between a and b on that query's pairs (queries with 2+ pairs)."""
    groups: dict[str, list[int]] = {}
    for index, query in enumerate(queries):
        groups.setdefault(query, []).append(index)
    taus = [kendall_tau(a[rows], b[rows]) for rows in groups.values() if len(rows) > 1]
    taus = [t for t in taus if not np.isnan(t)]
    return round(float(np.mean(taus)), 4) if taus else None


def encoder_flops(lengths, layers: int, hidden: int, inner: int) -> float:
    """2 x multiply-adds of the encoder over sequences of these lengths (embeddings, head negligible)."""
    return float(sum(layers * n * (2 * (4 * hidden * hidden + 2 * hidden * inner) + 4 * n * hidden) for n in lengths))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def matmul_peak(device: torch.device, dtype: torch.dtype, size: int, repeats: int = 20) -> float:
    """Dense matmul TFLOP/s, best of `repeats`."""
    a = torch.randn(size, size, device=device, dtype=dtype)
    b = torch.randn(size, size, device=device, dtype=dtype)
    torch.mm(a, b)
    synchronize(device)
    best = float("inf")
    for _ in range(repeats):
        started = time.perf_counter()
        torch.mm(a, b)
        synchronize(device)
        best = min(best, time.perf_counter() - started)
    return 2 * size ** 3 / best / 1e12


def kendall_tau(a: np.ndarray, b: np.ndarray) -> float:
    from scipy.stats import kendalltau

    return float(kendalltau(a, b).statistic)


def timed_scores(scorer: scoring.Scorer, ids, types, device: torch.device) -> tuple[np.ndarray, float]:
    synchronize(device)
    started = time.perf_counter()
    values = scorer.logits_tokens(ids, types)
    synchronize(device)
    return values, time.perf_counter() - started


def hf_one_at_a_time(classifier, ids, types, device: torch.device) -> np.ndarray:
    """Logits of the plain Hugging Face forward, fp32, one pair per call (no padding, no batching)."""
    from reranker.neural.batching import pad_batch, pad_id

    model, pad = classifier.model.to(device).float().eval(), pad_id(classifier.tokenizer)
    with torch.inference_mode():
        return np.stack([model(**pad_batch([one], [kind], pad, device)).logits.float().cpu().numpy()[0]
                         for one, kind in zip(ids, types)])


def padded512(classifier, queries, texts, device: torch.device, batch_size: int) -> float:
    """Seconds of the plain forward, every pair padded to 512, fp32."""
    model, tokenizer = classifier.model.to(device).float(), classifier.tokenizer
    synchronize(device)
    started = time.perf_counter()
    with torch.inference_mode():
        for start in range(0, len(queries), batch_size):
            batch = tokenizer(queries[start:start + batch_size], texts[start:start + batch_size], padding="max_length",
                              truncation=True, max_length=512, return_tensors="pt").to(device)
            model(**batch).logits.cpu()
    synchronize(device)
    return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-pairs", type=Path, help="write pairs.jsonl and the tokenizer here, then stop")
    parser.add_argument("--base", default="sentence-transformers/all-MiniLM-L6-v2", help="whose (BERT-uncased) tokenizer")
    parser.add_argument("--pairs-file", type=Path)
    parser.add_argument("--tokenizer", type=Path, help="a saved tokenizer (default: beside --pairs-file)")
    parser.add_argument("--pairs", type=int, default=20000)
    parser.add_argument("--padded-pairs", type=int, default=512, help="pairs timed on the 512-padded path")
    parser.add_argument("--check-pairs", type=int, default=128, help="pairs checked against the plain HF forward")
    parser.add_argument("--shapes", nargs="*", default=list(SHAPES), choices=list(SHAPES))
    parser.add_argument("--trained", nargs="+", type=Path, default=[], help="saved checkpoints to measure too")
    parser.add_argument("--write-trained", nargs=2, type=Path, metavar=("SRC", "DST"),
                        help="write a bf16 copy of checkpoint SRC to DST, then stop")
    parser.add_argument("--batch-size", type=int, default=512, help="pairs per batch, at most")
    parser.add_argument("--batch-tokens", type=int, default=65536, help="padded tokens per batch, at most")
    parser.add_argument("--gpus", type=int, default=8, help="N of the sizing's N-device line")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/gpu_throughput.json"))
    args = parser.parse_args(argv)
    if args.write_pairs:
        write_pairs(args.write_pairs, args.pairs, args.base)
        return 0
    if args.write_trained:
        write_trained(*args.write_trained)
        return 0
    if args.pairs_file is None:
        parser.error("give --pairs-file (made by --write-pairs) or --write-pairs")
    rows = [json.loads(line) for line in args.pairs_file.read_text().splitlines()][:args.pairs]
    queries, texts = [r["query"] for r in rows], [r["text"] for r in rows]
    tokenizer_dir = args.tokenizer or args.pairs_file.parent

    import transformers

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    fast_dtype = hardware.compute_dtype("fast", device) if hardware.has_fast_half(device) else torch.float32
    peak_dtype = fast_dtype
    if device.type == "cpu":
        args.pairs = min(args.pairs, len(rows))
    result = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else f"cpu: {hardware.cpu_info()['model']} "
                  f"({torch.get_num_threads()} threads); no GPU was lent, so these are CPU numbers",
        "gpu": device.type == "cuda",
        "torch": torch.__version__, "python": platform.python_version(), "transformers": transformers.__version__,
        "cuda": torch.version.cuda,
        "pairs": len(rows), "pairs_source": "cranfield queries x pysbd sentences of 10 documents each (judged first)",
        "batch_size": args.batch_size, "batch_tokens": args.batch_tokens,
        "fast_dtype": str(fast_dtype).removeprefix("torch."),
        "matmul_peak_tflops": round(matmul_peak(device, peak_dtype, 8192 if device.type == "cuda" else 2048), 2),
        "matmul_peak_dtype": str(peak_dtype).removeprefix("torch."),
        "shapes": {},
    }
    print(f"{result['device']}: {result['matmul_peak_dtype']} matmul peak {result['matmul_peak_tflops']} TFLOP/s",
          file=sys.stderr)
    # (name, shape, where its weights come from, how to save them in a folder)
    models = [(shape, SHAPES[shape], "random (seeded)", lambda tmp, shape=shape: random_model(shape, tokenizer_dir, tmp))
              for shape in args.shapes]
    models += [(f"trained:{path.name}", shape_of(path), f"trained: {path}", lambda tmp, path=path: trained_model(path, tmp))
               for path in args.trained]
    for shape, dims, weights, make in models:
        layers, hidden, _, inner = dims
        with tempfile.TemporaryDirectory() as tmp:
            classifier = load_classifier(str(make(Path(tmp) / "model")))
        timings: dict[str, float] = {}
        scores: dict[str, np.ndarray] = {}
        for name, precision in (("fast", "fast"), ("exact", "exact")):
            if name == "fast" and fast_dtype == torch.float32:
                continue
            scorer = scoring.Scorer(classifier, precision=precision, device=str(device), batch_size=args.batch_size,
                               batch_tokens=args.batch_tokens, max_length=512)
            ids, types = scorer.tokenize(queries, texts)
            timed_scores(scorer, ids, types, device)  # warm-up: kernel plans, allocator
            scores[name], timings[name] = timed_scores(scorer, ids, types, device)
        lengths = [len(x) for x in ids]
        n_check = min(args.check_pairs, len(rows))
        reference = hf_one_at_a_time(classifier, ids[:n_check], types[:n_check], device)
        check = {"pairs": n_check, "max_abs_diff": float(np.abs(scores["exact"][:n_check] - reference).max()),
                 "max_abs_logit": float(np.abs(reference).max())} if n_check else None
        flops = encoder_flops(lengths, layers, hidden, inner)
        n_padded = min(args.padded_pairs, len(rows))
        padded_seconds = padded512(classifier, queries[:n_padded], texts[:n_padded], device, batch_size=32)
        per_second = {name: len(rows) / seconds for name, seconds in timings.items()}
        per_second["padded512_fp32"] = n_padded / padded_seconds
        best = "fast" if "fast" in timings else "exact"
        entry = {
            "layers_hidden_heads_intermediate": dims,
            "weights": weights, "head": classifier.head,
            "mean_tokens": round(statistics.fmean(lengths), 1), "max_tokens": max(lengths),
            "pairs_per_second": {k: round(v, 1) for k, v in per_second.items()},
            "achieved_tflops": {k: round(flops / s / 1e12, 3) for k, s in timings.items()},
            "fraction_of_matmul_peak": round(flops / timings[best] / 1e12 / result["matmul_peak_tflops"], 3),
            "speedup_vs_padded512_fp32": round(per_second[best] / per_second["padded512_fp32"], 1),
            "kendall_tau_fast_vs_exact": round(kendall_tau(scores["fast"][:, 1], scores["exact"][:, 1]), 4)
            if "fast" in scores else None,
            "kendall_tau_fast_vs_exact_within_query_mean": within_query_tau(queries, scores["fast"][:, 1], scores["exact"][:, 1])
            if "fast" in scores else None,
            "check_exact_vs_hf_one_at_a_time_fp32": check,
            "robust04_hours": {"1 device": round(ROBUST04_PAIRS / per_second[best] / 3600, 2),
                               f"{args.gpus} devices": round(ROBUST04_PAIRS / per_second[best] / 3600 / args.gpus, 2)},
        }
        result["shapes"][shape] = entry
        write_result(args.out, result, argv)  # each shape as it ends: a later one that fails or is killed keeps it
        print(f"{shape}: {entry['pairs_per_second']} pairs/s, {entry['achieved_tflops']} TFLOP/s, "
              f"{entry['fraction_of_matmul_peak']:.0%} of peak, {entry['speedup_vs_padded512_fp32']}x padded512, "
              f"tau {entry['kendall_tau_fast_vs_exact']} (within queries "
              f"{entry['kendall_tau_fast_vs_exact_within_query_mean']}), exact vs HF max |diff| "
              f"{format(check['max_abs_diff'], '.3g') if check else None}", file=sys.stderr, flush=True)
        del classifier
        if device.type == "cuda":
            torch.cuda.empty_cache()
    result["goals"] = {"bert-large fraction of bf16 peak >= 0.40": None, "bert-large >= 20x padded512 fp32": None,
                       "kendall tau fast vs exact >= 0.99": None}
    if "bert-large" in result["shapes"] and result["gpu"]:
        large = result["shapes"]["bert-large"]
        result["goals"] = {"bert-large fraction of bf16 peak >= 0.40": large["fraction_of_matmul_peak"] >= 0.40,
                           "bert-large >= 20x padded512 fp32": large["speedup_vs_padded512_fp32"] >= 20,
                           "kendall tau fast vs exact >= 0.99": (large["kendall_tau_fast_vs_exact"] or 0) >= 0.99}
    write_result(args.out, result, argv)
    print(f"-> {args.out}", file=sys.stderr)
    return 0


def write_result(out: Path, result: dict, argv: list[str] | None) -> None:
    result["command"] = "python benchmarks/gpu_throughput.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
