"""Each profile's DAG is the one stored when the library's refactor began (tests/data/dag/, from tools/dag_jobs.py):
same jobs, same outputs, same shell text, params and inputs (as digests; tools/dag_trace.py reads them the way
Snakemake's persistence does). A refactor that changes one of these makes Snakemake rerun that rule's jobs (and all
below them) in every kept run folder; this test says which. Stored at 33da588 (the modules moved into layer folders)
and checked equal after the stages were split into library modules and Birch became a plugin. Regenerate a snapshot
only for a change that means to alter the DAG: `python tools/dag_jobs.py PROFILE --out tests/data/dag/PROFILE.json`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import dag_jobs  # noqa: E402


def keyed(listing: list[dict], field: str = "shell") -> dict[tuple, str]:
    return {(j["rule"], *j["outputs"]): j.get(field) for j in listing}


@pytest.mark.parametrize("profile", dag_jobs.PROFILES)
def test_the_dag_is_the_stored_one(profile, tmp_path, birch_data):
    listing = json.loads((REPO / "tests/data/dag" / f"{profile}.json").read_text())
    today = dag_jobs.jobs(profile, tmp_path / profile)
    stored, now = keyed(listing), keyed(today)
    assert sorted(now.keys() - stored.keys())[:5] == [], "jobs the stored DAG lacks"
    assert sorted(stored.keys() - now.keys())[:5] == [], "jobs the DAG lost"
    # Snakemake's rerun triggers beside mtimes: the shell text, the params' serialised form, the set of inputs
    for field in ("shell", "params", "input"):
        stored, now = keyed(listing, field), keyed(today, field)
        changed = [(key, stored[key], now[key]) for key in stored if now[key] != stored[key]]
        assert changed[:3] == [], f"{len(changed)} jobs' {field} changed"


def test_a_listing_is_parsed_into_jobs():
    text = ("Building DAG of jobs...\n[Sat]\nrule a:\n    input: x\n    output: /r/o2, /r/o1\n    jobid: 1\n"
            "Shell command: python -m reranker index --out /r/o1\n\n[Sat]\nlocalrule all:\n    input: /r/o1\n"
            "    jobid: 0\n\nJob stats:\n")
    jobs = dag_jobs.normalise(dag_jobs.parse(text), Path("/r"))
    assert jobs == [{"rule": "a", "outputs": ["{run_dir}/o1", "{run_dir}/o2"], "shell": "python -m reranker index --out {run_dir}/o1"},
                    {"rule": "all", "outputs": [], "shell": ""}]
