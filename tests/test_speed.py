"""reranker.stages.speed: queries per minute from the Snakemake benchmark files of a pipeline's jobs."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from reranker.stages import speed

HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def benchmark(path, seconds: float, rss: str = "512.25") -> str:
    path.write_text(HEADER + f"{seconds:.4f}\t0:00:{int(seconds):02d}\t{rss}\t900\t500\t505\t1.0\t2.0\t95.0\t{seconds * 0.9:.2f}\n")
    return str(path)


def test_queries_per_minute_sum_the_stages_wall_clock(tmp_path):
    stages = [("retrieve", benchmark(tmp_path / "r.tsv", 6.0)), ("segment", benchmark(tmp_path / "s.tsv", 4.0, "NA")),
              ("score", benchmark(tmp_path / "m.tsv", 50.0))]
    result = speed.queries_per_minute(stages, queries=300)
    assert result["seconds"] == 60.0 and result["queries_per_minute"] == 300.0
    assert result["stages"]["segment"]["max_rss_mb"] is None and result["stages"]["score"]["max_rss_mb"] == 512.25
    assert result["machine"]["cpu"] and isinstance(result["machine"]["bf16"], list)


def test_the_command_line_counts_the_topics_and_refuses_other_files(tmp_path):
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tfirst query\n2\tsecond query\n")
    out = tmp_path / "speed.json"
    args = [sys.executable, "-m", "reranker", "speed", "--stage", f"retrieve:{benchmark(tmp_path / 'r.tsv', 3.0)}",
            "--topics", str(topics), "--out", str(out)]
    subprocess.run(args, check=True, capture_output=True)
    assert json.loads(out.read_text())["queries_per_minute"] == 40.0
    bad = tmp_path / "bad.tsv"
    bad.write_text("wall\n3\n")
    done = subprocess.run(args[:5] + [f"retrieve:{bad}"] + args[6:], capture_output=True, text=True)
    assert done.returncode == 2 and str(bad) in done.stderr and "Traceback" not in done.stderr
    with pytest.raises(ValueError, match="at least one query"):
        speed.queries_per_minute([("retrieve", str(tmp_path / "r.tsv"))], queries=0)
