"""The Snakemake DAG end to end: the quick profile regenerates every table, and its numbers match
the ones stored under results/ (1e-4 for retrieval, 2e-3 for metrics of trained models)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
STORED = REPO / "results"
RETRIEVAL_TOL = 1e-4
TRAINED_TOL = 2e-3


def snakemake(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=3600)


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory, birch_data) -> Path:
    """Run the quick profile once into a temporary work and results directory."""
    out = tmp_path_factory.mktemp("quick")
    overrides = ["--config", f"workdir={out / 'work'}", f"results={out / 'results'}"]
    done = snakemake("--profile", "workflow/profiles/quick", "--cores", "2", *overrides)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-8000:]
    rerun = snakemake("--profile", "workflow/profiles/quick", "--cores", "2", "-n", *overrides)
    assert rerun.returncode == 0
    out.joinpath("rerun.log").write_text(rerun.stdout + rerun.stderr)
    return out / "results"


def numbers(path: Path) -> dict:
    return json.loads(path.read_text())["numbers"]


def compare(fresh: dict, stored: dict, tolerance_for) -> list[str]:
    problems = []
    for collection, rows in stored.items():
        for row, measures in rows.items():
            for measure, value in measures.items():
                got = fresh.get(collection, {}).get(row, {}).get(measure)
                if got is None:
                    problems.append(f"{collection} / {row} / {measure}: missing")
                elif abs(got - value) > tolerance_for(row):
                    problems.append(f"{collection} / {row} / {measure}: {got:.5f}, stored {value:.5f}")
    return problems


def test_dry_run_shows_the_dag(birch_data):
    done = snakemake("-n")
    assert done.returncode == 0, done.stderr[-4000:]
    for rule in ("export_collection", "index", "retrieve", "evaluate", "baselines_table", "birch_main_table"):
        assert rule in done.stdout + done.stderr


def test_quick_profile_writes_every_table(quick_run):
    for name in ("baselines.md", "baselines.csv", "dataset_stats.md", "birch_main.md", "birch_main.csv", "birch_main.tex"):
        assert (quick_run / "tables" / name).stat().st_size > 0, name
    assert (quick_run / "figures" / "birch_main_per_query_ap.png").stat().st_size > 0
    # Each fine-tuned checkpoint's held-out loss against the label prior: a curve and a note.
    table = (quick_run / "tables" / "birch_main.md").read_text()
    for name, label in (("scifact", "BERT(SciFact)"), ("scifact-cranfield", "BERT(SciFact→Cranfield)")):
        assert (quick_run / "figures" / f"checkpoint_{name}_loss.png").stat().st_size > 0
        assert f"{label}: held-out loss" in table and "label prior" in table
    assert "Bi-encoder MiniLM-L3 (zero-shot) 1S" in table
    checkpoints = json.loads((quick_run / "numbers" / "birch_main.json").read_text())["provenance"]["checkpoints"]
    assert {v["validation"]["select"] for v in checkpoints.values()} == {"best"}


def test_rerun_has_nothing_to_do(quick_run):
    log = (quick_run.parent / "rerun.log").read_text()
    assert "Nothing to be done" in log, log[-2000:]


def test_baselines_match_stored_numbers(quick_run):
    """Lucene retrieval is deterministic: the default baselines table is regenerated exactly."""
    problems = compare(numbers(quick_run / "numbers" / "baselines.json"),
                       numbers(STORED / "numbers" / "baselines.json"), lambda row: RETRIEVAL_TOL)
    assert not problems, "\n".join(problems)


def test_dataset_statistics_match_stored_numbers(quick_run):
    problems = compare(numbers(quick_run / "numbers" / "dataset_stats.json"),
                       numbers(STORED / "numbers" / "dataset_stats.json"), lambda row: 1e-9)
    assert not problems, "\n".join(problems)


def test_birch_quick_table_matches_stored_numbers(quick_run):
    fresh = numbers(quick_run / "numbers" / "birch_main.json")
    stored = numbers(STORED / "quick" / "numbers" / "birch_main.json")
    problems = compare(fresh, stored, lambda row: RETRIEVAL_TOL if row.startswith("BM25") else TRAINED_TOL)
    assert not problems, "\n".join(problems)
