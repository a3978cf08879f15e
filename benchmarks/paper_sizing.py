"""Sizing of the `paper` profile's Birch part (Robust04, Core17, Core18), stage by stage, from measured rates.

The licensed documents are not here, so nothing of the paper run can be timed directly. Each stage's
cost is a count of the paper's work times a rate measured on this suite's own stages:

* segment: sentences (and passages) per second of the `segment` jobs of a finished run folder (their
  metas count the units; Snakemake's benchmark times them), one job per collection, on one core;
* score: pairs per second of a bert-large-shaped model from `results/benchmarks/gpu_throughput.json`
  when that file is a GPU run; otherwise a rate given with `--scoring-rate` and, required with it,
  `--scoring-rate-source` saying where it was measured. N devices divide it (`score.parts: N`);
* fuse: the vectorised cross-validation of `results/benchmarks/fusion_cv.json`, scaled by the
  rescored documents (the grid is the same);
* index and retrieve are not sized: a Lucene rate measured on 1,400-11,000 short abstracts does not
  extrapolate to 528,155 news articles, and Birch's own Robust04 run can be used as it is.

Counts: Birch's run has 249 judged Robust04 queries, Core17 and Core18 have 50 each; depth 1000;
about 24.6 sentences per document (Robust04; the same is assumed for Core17 and Core18, and said so).

    python benchmarks/paper_sizing.py --run-dir runs/default [--scoring-rate R --scoring-rate-source TEXT]
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TARGETS = {"robust04": 249, "core17": 50, "core18": 50}  # judged queries
DEPTH = 1000
SENTENCES_PER_DOC = 24.6  # Robust04, as gpu_throughput.py's sizing
CHECKPOINTS = 3  # birch-mb, birch-car-mb, birch-msmarco-mb (workflow/config/paper.yaml)
FUSIONS_PER_CHECKPOINT = 3  # 1S, 2S, 3S


def segment_rate(run_dir: Path) -> dict:
    """Units per second over every segment job of the run: the metas count them, the benchmarks time them."""
    units = {"sentences": 0, "passages": 0}
    seconds = {"sentences": 0.0, "passages": 0.0}
    for meta_path in sorted((run_dir / "work" / "segments").glob("*/*.jsonl.meta.json")):
        meta = json.loads(meta_path.read_text())
        collection = meta_path.parent.name
        bench = run_dir / "benchmarks" / "segment" / f"{collection}.{meta['unit']}.tsv"
        if not bench.exists():
            continue
        with bench.open() as handle:
            row = next(csv.DictReader(handle, delimiter="\t"))
        units[meta["unit"]] += meta["units"]
        seconds[meta["unit"]] += float(row["s"])
    if not units["sentences"]:
        raise SystemExit(f"error: no timed segment job under {run_dir} (run the workflow first)")
    return {unit: {"units": units[unit], "seconds": round(seconds[unit], 1),
                   "per_second": round(units[unit] / seconds[unit], 1) if seconds[unit] else None} for unit in units}


def scoring_rate(gpu_benchmark: dict, rate: float | None, source: str | None) -> tuple[float, str]:
    if rate is not None:
        if not source:
            raise SystemExit("error: --scoring-rate needs --scoring-rate-source (where and how it was measured)")
        return rate, source
    large = gpu_benchmark.get("shapes", {}).get("bert-large")
    if gpu_benchmark.get("gpu") and large:
        best = "fast" if "fast" in large["pairs_per_second"] else "exact"
        return large["pairs_per_second"][best], f"{gpu_benchmark['device']}, bert-large {best} (gpu_throughput.json)"
    raise SystemExit("error: gpu_throughput.json holds no GPU run of bert-large; give --scoring-rate and "
                     "--scoring-rate-source")


def size(run_dir: Path, gpu_benchmark: dict, fusion: dict, rate: float, rate_source: str, devices: int) -> dict:
    segmentation = segment_rate(run_dir)
    sentences_per_second = segmentation["sentences"]["per_second"]
    passages_per_sentence = segmentation["passages"]["units"] / segmentation["sentences"]["units"]
    fuse_seconds_per_doc = fusion["seconds"]["vectorised"] / fusion["rescored_documents"]
    rows = {}
    for target, queries in TARGETS.items():
        sentences = queries * DEPTH * SENTENCES_PER_DOC  # an upper bound: documents shared by queries are split once
        passages = sentences * passages_per_sentence
        score_pairs = CHECKPOINTS * sentences + passages  # every checkpoint on sentences, one on passages (FirstP/MaxP)
        hours = {
            "segment (CPU, 1 core)": (sentences / sentences_per_second
                                      + passages / (segmentation["passages"]["per_second"] or sentences_per_second)) / 3600,
            "score (1 device)": score_pairs / rate / 3600,
            f"score ({devices} devices)": score_pairs / rate / 3600 / devices,
            "fuse (CPU, 1 core)": CHECKPOINTS * FUSIONS_PER_CHECKPOINT * queries * DEPTH * fuse_seconds_per_doc / 3600,
        }
        rows[target] = {"queries": queries, "sentence_pairs_per_checkpoint": round(sentences),
                        "passage_pairs": round(passages), "hours": {k: round(v, 2) for k, v in hours.items()}}
    return {
        "counts": {"queries": TARGETS, "depth": DEPTH, "sentences_per_document": SENTENCES_PER_DOC,
                   "sentences_per_document_note": "Robust04's; assumed for Core17 and Core18",
                   "checkpoints": CHECKPOINTS, "fusions_per_checkpoint": FUSIONS_PER_CHECKPOINT},
        "rates": {"segment": segmentation, "segment_run_dir": str(run_dir),
                  "score_pairs_per_second": rate, "score_rate_source": rate_source,
                  "fuse_seconds_per_rescored_document": fuse_seconds_per_doc,
                  "fuse_source": "results/benchmarks/fusion_cv.json (vectorised, " + fusion["inputs"]["kind"] + " inputs)"},
        "not_sized": "index and retrieve: no Lucene rate measured here extrapolates to 528,155 news articles; "
                     "Birch's own Robust04 run can be used as it is",
        "targets": rows,
    }


def markdown(result: dict) -> str:
    stages = list(next(iter(result["targets"].values()))["hours"])
    lines = ["| target | queries | pairs per checkpoint | " + " | ".join(f"{s}, h" for s in stages) + " |",
             "|---|---:|---:|" + "---:|" * len(stages)]
    for target, row in result["targets"].items():
        lines.append(f"| {target} | {row['queries']} | {row['sentence_pairs_per_checkpoint']:,} | "
                     + " | ".join(f"{row['hours'][s]:.2f}" for s in stages) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--run-dir", type=Path, default=Path("runs/default"), help="a finished run: its segment jobs")
    parser.add_argument("--gpu-benchmark", type=Path, default=REPO / "results/benchmarks/gpu_throughput.json")
    parser.add_argument("--fusion-benchmark", type=Path, default=REPO / "results/benchmarks/fusion_cv.json")
    parser.add_argument("--scoring-rate", type=float, help="pairs/s of bert-large scoring, where no GPU run is stored")
    parser.add_argument("--scoring-rate-source", help="where that rate was measured (stored with the sizing)")
    parser.add_argument("--devices", type=int, default=8, help="N of the N-device line")
    parser.add_argument("--out", type=Path, default=REPO / "results/benchmarks/paper_sizing.json")
    args = parser.parse_args(argv)
    gpu_benchmark = json.loads(args.gpu_benchmark.read_text())
    rate, source = scoring_rate(gpu_benchmark, args.scoring_rate, args.scoring_rate_source)
    result = size(args.run_dir, gpu_benchmark, json.loads(args.fusion_benchmark.read_text()), rate, source, args.devices)
    result["command"] = "python benchmarks/paper_sizing.py " + " ".join(argv if argv is not None else sys.argv[1:])
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(markdown(result))
    print(f"-> {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
