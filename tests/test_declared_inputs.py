"""Every rule declares what its stage reads: the quick DAG's stages record the files they open
(reranker/core/opened.py, BIRCH_OPENED set by tests/background.py), and each file a stage read from the run
folder, the data folder or the reference (results/quick, which compare reads) must be a declared input of its
job (Snakemake's own list, tools/dag_trace.py), or under a declared folder: else a change to it reruns nothing
and nothing orders the job after its maker.

Read without declaring, by design: the run's resolved config.yaml (its settings are the job's params), the score
cache (a content-addressed store shared by every score job) and the positive filter's (shared by NTNU trainings),
the job's own outputs and their staging (a resumed job reads what it wrote), a checkpoint's folder beside the meta
file that stands for it, a declared file's
`.meta.json` sidecar and the other files of the job that made a declared input (written with it, in one job:
ordered and rerun with it), the run and qrels a declared evaluation names (a table hashes them into its numbers'
provenance), and the resources table's reading of every job's records (RUN_RECORDS). A folder listing reads no
file: only the files then read count. Outside the run and data folders (the code, the Hugging Face and ir_datasets
caches) nothing is checked.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from reranker.formats.layout import PATTERNS

pytestmark = [pytest.mark.dag, pytest.mark.slow]

REPO = Path(__file__).resolve().parent.parent
OUT_FLAGS = ("--out", "--numbers", "--into")
CHECKPOINT_META = "reranker.json"  # a checkpoint folder's meta: the file its rules name for the folder


def jobs_of(run_dir: Path, tmp: Path) -> list[dict]:
    """Each job of the quick DAG in `run_dir`, with its declared inputs (a dry run: nothing runs)."""
    sys.path.insert(0, str(REPO / "tools"))
    import dag_jobs

    trace = tmp / "trace.json"
    dag_jobs.dry_run("quick", run_dir, trace)
    return json.loads(trace.read_text())


def written(record: dict) -> list[str]:
    """The paths a stage's command line writes (its --out and the like; the index stage's --index), absolute."""
    argv, cwd = record["argv"], record["cwd"]
    flags = (*OUT_FLAGS, "--index") if argv[:1] == ["index"] else OUT_FLAGS
    return [os.path.normpath(os.path.join(cwd, argv[i + 1])) for i, arg in enumerate(argv[:-1]) if arg in flags]


def job_of(record: dict, jobs: list[dict]) -> dict | None:
    outs = written(record)
    for job in jobs:
        if any(o == out or o.startswith(out + os.sep) or out.startswith(o + ".") for o in job["outputs"] for out in outs):
            return job
    return None


# The one rule that reads the run's own records of every job (benchmarks, stage metas) by design: what each
# stage cost. It runs after every other job (its inputs: the comparison and the seed index, which come last).
RUN_RECORDS = {"resources_table"}


class Jobs:
    """The DAG's jobs, with what each job's producers also wrote and what its evaluations name."""

    def __init__(self, jobs: list[dict]):
        self.jobs = jobs
        self.maker = {out: job for job in jobs for out in job["outputs"]}
        self._sources: dict[str, list[str]] = {}

    def siblings(self, job: dict) -> set[str]:
        """Every output of the jobs that make this job's inputs: written with an input, in the same job."""
        return {out for path in job["input"] if path in self.maker for out in self.maker[path]["outputs"]}

    def made_with(self, job: dict) -> set[str]:
        """The files written with this job's inputs (siblings) and the run and qrels its evaluations name."""
        return self.siblings(job) | {p for d in job["input"] if d.endswith(".json") for p in self.sources(d)}

    def sources(self, path: str) -> list[str]:
        """The run and qrels an evaluation JSON names (tables hash them into their numbers' provenance)."""
        if path not in self._sources:
            try:
                document = json.loads(Path(path).read_text())
                self._sources[path] = [os.path.abspath(p) for p in (document.get("source") or {}).values()]
            except (OSError, ValueError, AttributeError):
                self._sources[path] = []
        return self._sources[path]


def allowed(path: str, job: dict, run_dir: Path, made_with: set[str]) -> bool:
    """`made_with`: the job's siblings and its evaluations' sources (Jobs.made_with), computed once per job."""
    declared = set(job["input"])
    stores = (str(run_dir / PATTERNS["score_cache"]), str(run_dir / PATTERNS["filter_cache"]))
    if path in declared or path == str(run_dir / "config.yaml") or path.startswith(stores):
        return True
    if any(path == o or path.startswith(o + os.sep) or path.startswith(o + ".") for o in job["outputs"]):
        return True  # its own outputs, and their staging (`.tmp`) and sidecars
    if any(path.startswith(os.path.dirname(o) + ".tmp") or path.startswith(os.path.join(os.path.dirname(o), f".{os.path.basename(o)}."))
           for o in job["outputs"]):
        return True  # a folder output built beside it (formats.atomic.atomic_dir), a scratch folder beside it (index)
    if any(path.startswith(d + os.sep) for d in declared):  # under a declared folder
        return True
    folders = {os.path.dirname(d) for d in declared if os.path.basename(d) == CHECKPOINT_META}
    if any(path.startswith(f + os.sep) for f in folders):  # a checkpoint's files beside its meta
        return True
    if path.endswith(".meta.json") and path.removesuffix(".meta.json") in declared:
        return True  # a declared file's sidecar: written with it, and checked against it by the reader
    return path in made_with


def check(run_dir: Path, opened: Path, tmp: Path) -> tuple[int, list[str], list[str]]:
    """(stage runs checked, records matched to no job, `rule: path` read but not declared)."""
    records = [json.loads(p.read_text()) for p in sorted(opened.glob("*.json"))]
    data = Path(os.environ.get("BIRCH_DATA", REPO / "data")).resolve()
    reference = os.path.join(REPO, yaml.safe_load((run_dir / "config.yaml").read_text())["reference"])
    roots = tuple(str(root) + os.sep for root in (run_dir, data, os.path.abspath(reference)))
    jobs = Jobs(jobs_of(run_dir, tmp))
    undeclared, unmatched, checked = [], [], 0
    for record in records:
        reads = [p for p in record["read"] if p.startswith(roots)]
        if not reads:
            continue
        job = job_of(record, jobs.jobs)
        if job is None:
            unmatched.append(" ".join(record["argv"][:3]) + f" (reads {reads[0]})")
            continue
        checked += 1
        if job["rule"] not in RUN_RECORDS:
            made_with = jobs.made_with(job)
            undeclared += [f"{job['rule']}: {p}" for p in reads if not allowed(p, job, run_dir, made_with)]
    return checked, unmatched, sorted(set(undeclared))


def test_every_file_a_stage_read_is_a_declared_input(dag_runs, tmp_path):
    run = dag_runs["quick"]
    assert run.wait().returncode == 0
    run_dir = run.run_dir.resolve()
    checked, unmatched, undeclared = check(run_dir, run_dir.parent / "opened", tmp_path)
    print(f"{checked} stage runs checked against their jobs' declared inputs")
    assert not unmatched, unmatched
    assert checked > 200
    assert not undeclared, "read but not declared:\n" + "\n".join(undeclared)
