"""The paper run's sizing: measured rates times the paper's counts, and no GPU figure without its source."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "benchmarks" / "paper_sizing.py"


def run_folder(tmp_path: Path) -> Path:
    run_dir = tmp_path / "run"
    (run_dir / "work/segments/cranfield").mkdir(parents=True, exist_ok=True)
    (run_dir / "benchmarks/segment").mkdir(parents=True, exist_ok=True)
    for unit, units, seconds in (("sentences", 2000, 2.0), ("passages", 500, 1.0)):
        (run_dir / f"work/segments/cranfield/bm25_rm3.k30.{unit}.jsonl.meta.json").write_text(
            json.dumps({"unit": unit, "units": units}))
        (run_dir / f"benchmarks/segment/cranfield.{unit}.tsv").write_text(f"s\th:m:s\tmax_rss\n{seconds}\t0:00:02\t100\n")
    return run_dir


def sizing(tmp_path: Path, *extra: str):
    return subprocess.run([sys.executable, str(SCRIPT), "--run-dir", str(run_folder(tmp_path)),
                           "--out", str(tmp_path / "sizing.json"), *extra], capture_output=True, text=True, cwd=REPO)


def test_sizing_is_the_paper_counts_over_the_measured_rates(tmp_path):
    done = sizing(tmp_path, "--scoring-rate", "1000", "--scoring-rate-source", "a test", "--devices", "4")
    assert done.returncode == 0, done.stderr
    result = json.loads((tmp_path / "sizing.json").read_text())
    robust = result["targets"]["robust04"]
    sentences = 249 * 1000 * 24.6
    pairs = 3 * sentences + sentences * 500 / 2000  # three checkpoints on sentences, one on passages
    assert robust["hours"]["score (1 device)"] == round(pairs / 1000 / 3600, 2)
    assert robust["hours"]["score (4 devices)"] == round(pairs / 1000 / 3600 / 4, 2)
    assert robust["hours"]["segment (CPU, 1 core)"] == round((sentences / 1000 + sentences * 0.25 / 500) / 3600, 2)
    assert result["rates"]["score_rate_source"] == "a test"
    assert "| robust04 | 249 |" in done.stdout


def test_no_scoring_rate_without_a_gpu_run_or_a_named_source(tmp_path):
    cpu_benchmark = tmp_path / "gpu.json"
    cpu_benchmark.write_text(json.dumps({"gpu": False, "device": "cpu", "shapes": {}}))
    done = sizing(tmp_path, "--gpu-benchmark", str(cpu_benchmark))
    assert done.returncode != 0 and "no GPU run of bert-large" in done.stderr
    done = sizing(tmp_path, "--gpu-benchmark", str(cpu_benchmark), "--scoring-rate", "1000")
    assert done.returncode != 0 and "--scoring-rate-source" in done.stderr
    assert not (tmp_path / "sizing.json").exists()
