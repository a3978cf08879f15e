"""Stored numbers current for the code, or marked: each stored reference records the jobs every numbers file rests
on (jobs.json, by `make promote`), and a numbers file one of whose jobs changed since is printed pending in its
table and judges no claim (tools/stale.py). Today's DAG is set against each record: the test fails where a changed
number is not marked. A constructed change (one NTNU setting, over a copy of the quick reference) marks exactly the
tables that rest on it, and the index reads their claims as pending."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import stale  # noqa: E402


@pytest.mark.parametrize("profile, reference", [("default", "results"), ("quick", "results/quick")])
def test_every_stored_number_whose_jobs_changed_is_pending(profile, reference, birch_data, capsys):
    assert (REPO / reference / stale.JOBS).exists(), f"{reference}/{stale.JOBS}: `make promote` records it"
    code = stale.main([profile, "--reference", str(REPO / reference)])
    out = capsys.readouterr().out
    assert code == 0, f"stored numbers whose jobs changed, not marked pending (`make stale PROFILE={profile}`):\n{out}"


def test_a_changed_setting_renders_the_numbers_behind_it_pending(tmp_path, birch_data, capsys):
    from reranker.report.seed_index import index
    from reranker.reproduction.seeds import load_seeds

    reference = tmp_path / "quick"
    for part in ("numbers", "tables", "figures"):
        shutil.copytree(REPO / "results" / "quick" / part, reference / part)
    shutil.copy(REPO / "results" / "quick" / stale.JOBS, reference / stale.JOBS)
    change = tmp_path / "change.yaml"  # one NTNU training setting: every NTNU model trains again
    change.write_text(yaml.safe_dump({"ntnu": {"training": {"learning_rate": 2.0e-4}}}))
    assert stale.main(["quick", "--reference", str(reference), "--configfile", str(change)]) == 1  # changed, unmarked
    assert stale.main(["quick", "--reference", str(reference), "--configfile", str(change), "--mark"]) == 0
    out = capsys.readouterr().out
    marked = {p.stem for p in (reference / "numbers").glob("*.json") if stale.is_marked(p)
              and (json.loads(p.read_text()).get("layout") or {}).get("pending")}
    assert {f"ntnu_5_{k}" for k in range(1, 7)} <= marked, out
    assert not any(name.startswith(("radboud", "birch", "baselines")) for name in marked), out
    assert "| pending |" in (reference / "tables" / "ntnu_5_2.md").read_text()
    text = index(load_seeds(REPO / "workflow" / "config" / "seed_tables.yaml"), reference)
    sections = {part.split(" ", 1)[0]: part for part in text.split("\n## ")}
    verdicts = [row for row in sections["NTNU"].splitlines() if row.startswith("| ") and " · " in row.split("|")[1]]
    judged = [row for row in verdicts if "**pending**" not in row and "**not run**" not in row]
    assert verdicts and judged == [], judged  # figure 5.4's points too: their JSON rests on the same jobs
    assert "**pending**" not in sections["Radboud"]


def test_without_the_data_folder_the_tools_stop_before_marking_anything(tmp_path, monkeypatch, capsys):
    """A data folder that lacks the registered files makes a DAG that fetches them first, and every job behind them
    would read as changed: stale.py stops in one line (exit 2) instead of marking every stored number pending."""
    monkeypatch.setenv("BIRCH_DATA", str(tmp_path / "empty"))
    with pytest.raises(SystemExit) as stopped:
        stale.main(["quick", "--mark"])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert "dag_jobs: error: the data folder (" in err and "set BIRCH_DATA to the data folder" in err, err
