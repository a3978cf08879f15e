"""`python tools/dag_trace.py SNAKEMAKE_ARGS...`: Snakemake's command line, and for a dry run, each job's rule,
outputs, params and inputs as Snakemake's persistence keeps them, as JSON into $DAG_TRACE_OUT.

Snakemake reruns a kept job when its params' serialised form or its set of inputs changed (beside its shell
text and mtimes), so tools/dag_jobs.py stores these too. The params are read with Snakemake's own
serialiser (`PersistenceBase._serialize_param_builtin`), an internal of Snakemake 9: pinned in pyproject."""

from __future__ import annotations

import atexit
import json
import os
import sys
from pathlib import Path

import snakemake.executors.dryrun as dryrun
from snakemake.cli import main
from snakemake.persistence import PersistenceBase

ROWS: list[dict] = []
_run_job = dryrun.Executor.run_job


def run_job(self, job):
    for one in getattr(job, "jobs", [job]):  # a group job holds several
        params = [PersistenceBase._serialize_param_builtin(None, value) for value in one.non_derived_params]
        ROWS.append({"rule": one.rule.name, "outputs": sorted(map(str, one.output)),
                     "params": sorted(p for p in params if isinstance(p, str)), "input": sorted(map(str, one.input))})
    return _run_job(self, job)


if __name__ == "__main__":
    dryrun.Executor.run_job = run_job
    atexit.register(lambda: Path(os.environ["DAG_TRACE_OUT"]).write_text(json.dumps(ROWS)))
    sys.argv = ["snakemake", *sys.argv[1:]]
    main()
