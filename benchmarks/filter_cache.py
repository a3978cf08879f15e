"""The positive filter's pass with and without its store (train --filter-cache), side by side in one run.

Every NTNU training of the default (16 of them) keeps, of each relevant SciFact train document, only the passage the
zero-shot bi-encoder scores highest (positives: best). They all filter the same pairs, so the pass is the same in
each; the train rule now keeps its scores in the run folder (reranker.formats.array_cache) and every training after
the first reads them. Timed here on the default's own settings (ntnu-bert's: 192 tokens, passages of the thesis'
length and stride, its held-out fraction and seed) over SciFact train as the workflow exports it: `cold` is the pass
itself (what every training paid before), `warm` is reading the stored scores (what every training after the first
pays now), each `--repeats` times interleaved, and the kept units must be the same. Writes
results/benchmarks/filter_cache.json.

    python benchmarks/filter_cache.py --run-dir runs/default [--repeats 2]

`--run-dir`: a run folder whose SciFact train export and BM25 run exist (any part that trains the shared start).
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import torch

from reranker.core import hardware
from reranker.core import settings as stage_settings
from reranker.experiments import load_config
from reranker.neural.training.pairs import load_source
from reranker.neural.training.settings import Source, TrainingConfig
from reranker.neural.training.teacher import best_units

REPO = Path(__file__).resolve().parent.parent
CHECKPOINT = "ntnu-bert"
FILTER = "sentence-transformers/all-MiniLM-L6-v2"  # minilm-l6-bi-encoder (workflow/config/checkpoints.yaml)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--run-dir", type=Path, required=True)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks" / "filter_cache.json")
    args = parser.parse_args()
    config = load_config([REPO / "workflow" / "config" / name for name in ("collections.yaml", "checkpoints.yaml", "config.yaml")])
    settings = stage_settings.train(config, CHECKPOINT)["training"]
    settings.pop("gpus")
    settings.update(positive_filter=FILTER, positive_filter_head="bi_encoder", teacher=None, head_from=None)
    training = TrainingConfig.from_mapping(settings)
    work = args.run_dir / "work"
    source = Source("beir/scifact/train", work / "collections/beir-scifact-train/docs.jsonl",
                    work / "collections/beir-scifact-train/topics.tsv", work / "collections/beir-scifact-train/qrels.txt",
                    work / "runs/beir-scifact-train/bm25.run")
    examples = [load_source(source, training)]
    device = torch.device("cpu")
    dtype = hardware.compute_dtype(hardware.resolve_precision(training.precision, device), device)
    positives = sum(p.label for split in (examples[0].pairs, examples[0].validation) for p in split)
    cold, warm, same = [], [], True
    with tempfile.TemporaryDirectory() as tmp:
        for repeat in range(args.repeats):
            store = Path(tmp) / str(repeat)
            started = time.perf_counter()
            first, _ = best_units(examples, training, device, dtype, store)  # computed and stored
            cold.append(time.perf_counter() - started)
            started = time.perf_counter()
            again, _ = best_units(examples, training, device, dtype, store)  # read back
            warm.append(time.perf_counter() - started)
            same &= first[0].pairs == again[0].pairs and first[0].validation == again[0].validation
    result = {
        "command": "python benchmarks/filter_cache.py --run-dir " + str(args.run_dir),
        "machine": {**hardware.machine(), "torch_threads": torch.get_num_threads(), "bf16": dtype == torch.bfloat16},
        "checkpoint_settings": CHECKPOINT, "positive_pairs_scored": positives, "max_length": training.max_length,
        "cold_seconds": [round(t, 2) for t in cold], "warm_seconds": [round(t, 3) for t in warm],
        "speedup": round(statistics.median(c / w for c, w in zip(cold, warm)), 1),
        "saved_per_training_seconds": round(statistics.median(c - w for c, w in zip(cold, warm)), 1),
        "same_units": same,
        "note": ("warm includes loading the filter checkpoint, which the pass still does; the first NTNU training of a "
                 "run pays cold, every later one warm"),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return 0 if same else 1


if __name__ == "__main__":
    raise SystemExit(main())
