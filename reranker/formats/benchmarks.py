"""Snakemake `benchmark:` files: one TSV per job, `benchmarks/{stage}/{name}.tsv` under the run folder.

Snakemake measures each job (wall seconds `s`, `max_rss` in MB, `cpu_time` in seconds, ...) and
writes the file when the job ends, so the file's modification time is the job's end.
"""

from __future__ import annotations

import csv
import os
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from reranker.formats.errors import FormatError


class JobBenchmark(NamedTuple):
    stage: str  # the folder: index, retrieve, train, score, tables, ...
    name: str  # the file's stem: "{collection}.{...}", a checkpoint or a table
    seconds: float
    cpu_seconds: float | None
    max_rss_mib: float | None
    end: float  # epoch seconds: the file's modification time
    path: Path

    @property
    def start(self) -> float:
        return self.end - self.seconds


def _number(value: str | None) -> float | None:
    if value is None or value in ("", "NA", "-"):
        return None
    return float(value)


def read_benchmark(path: str | os.PathLike) -> JobBenchmark:
    """One job's benchmark; a file Snakemake wrote several repeats into counts its first."""
    path = Path(path)
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    if not rows or rows[0].get("s") in (None, "", "NA"):
        raise FormatError(path, 2, "no benchmark row with wall seconds `s` (is this a Snakemake benchmark file?)")
    row = rows[0]
    try:
        return JobBenchmark(path.parent.name, path.stem, float(row["s"]), _number(row.get("cpu_time")),
                            _number(row.get("max_rss")), path.stat().st_mtime, path)
    except ValueError as err:
        raise FormatError(path, 2, f"not a number: {err}") from None


def read_benchmarks(folder: str | os.PathLike) -> list[JobBenchmark]:
    """Every job benchmark under `folder` (benchmarks/{stage}/{name}.tsv), in order of end."""
    return sorted((read_benchmark(path) for path in sorted(Path(folder).glob("*/*.tsv"))), key=lambda job: job.end)


def union_seconds(spans: Iterable[tuple[float, float]]) -> float:
    """The seconds covered by at least one of the (start, end) spans: their union, added up in order of start."""
    covered, last = 0.0, float("-inf")
    for start, end in sorted(spans, key=lambda span: span[0]):
        covered += max(0.0, end - max(start, last))
        last = max(last, end)
    return covered


def busy_seconds(jobs: list[JobBenchmark]) -> float:
    """The wall clock during which at least one job ran: the union of the jobs' spans."""
    return union_seconds([(job.start, job.end) for job in jobs])
