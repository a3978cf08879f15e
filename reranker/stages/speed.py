"""Queries per minute of a ranking pipeline, from the wall clock its own jobs took.

Snakemake's `benchmark:` files time each job (wall seconds, memory, CPU time). A pipeline is
the jobs one system needs for the same queries, e.g. BM25 retrieval, passage splitting and
scoring: its queries per minute are 60 * queries / the sum of their wall seconds. Every stage is
counted from its start (imports, model loading) to its end, so the figure is measured end to end,
not extrapolated from a model's pairs per second. The machine is recorded beside it.
"""

from __future__ import annotations

import argparse
import csv
import os
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from reranker.core.hardware import CPU_BF16_FLAGS, cpu_info, cpu_threads
from reranker.formats.atomic import write_json
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import FormatError, InputError
from reranker.formats.topics import read_topics_tsv


def read_benchmark(path: str | os.PathLike) -> dict[str, float]:
    """The first timed repetition of a Snakemake benchmark TSV: its wall seconds, max RSS (MB), CPU seconds."""
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows or "s" not in rows[0]:
        raise FormatError(path, None, "not a Snakemake benchmark file (a tab-separated header with column s)")
    row = rows[0]

    def number(column: str) -> float | None:
        value = row.get(column, "NA")
        try:
            return float(value)
        except (TypeError, ValueError):
            return None  # Snakemake writes NA for what it could not measure

    seconds = number("s")
    if seconds is None or seconds < 0:
        raise FormatError(path, 2, f"wall seconds {row['s']!r} are not a number")
    return {"seconds": seconds, "max_rss_mb": number("max_rss"), "cpu_seconds": number("cpu_time")}


def machine() -> dict[str, Any]:
    info = cpu_info()
    return {"cpu": info["model"], "bf16": sorted(flag for flag in CPU_BF16_FLAGS if flag in info["flags"]),
            "threads_available": cpu_threads(), "platform": platform.platform()}


def queries_per_minute(stages: Sequence[tuple[str, str | os.PathLike]], queries: int) -> dict[str, Any]:
    """60 * queries / the summed wall seconds of the stages' jobs, with each stage's share."""
    if queries < 1:
        raise InputError("a pipeline needs at least one query")
    timed = {name: read_benchmark(path) for name, path in stages}
    total = sum(stage["seconds"] for stage in timed.values())
    if total <= 0:
        raise InputError("the stages took no measurable time")
    return {"queries": queries, "seconds": round(total, 3), "queries_per_minute": round(60 * queries / total, 2),
            "stages": {name: {**stage, "benchmark": str(path)} for (name, path), stage in zip(stages, timed.values())},
            "machine": machine()}


@exits_on_input_error("speed")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker speed", description=__doc__.splitlines()[0])
    parser.add_argument("--stage", action="append", required=True, metavar="NAME:BENCHMARK.tsv",
                        help="a job of the pipeline and its Snakemake benchmark file (repeat, in pipeline order)")
    parser.add_argument("--topics", required=True, help="topics.tsv: the queries the pipeline ranked")
    parser.add_argument("--out", required=True, help="JSON to write")
    args = parser.parse_args(argv)
    stages = [tuple(spec.split(":", 1)) for spec in args.stage]
    if any(len(stage) != 2 or not stage[1] for stage in stages):
        raise InputError("give each --stage as NAME:BENCHMARK.tsv")
    result = queries_per_minute(stages, len(read_topics_tsv(args.topics)))
    write_json(Path(args.out), result, indent=1, sort_keys=True)
    print(f"{result['queries_per_minute']:.1f} queries/min ({result['queries']} queries in {result['seconds']:.1f} s) "
          f"-> {args.out}", file=sys.stderr)
    return 0
