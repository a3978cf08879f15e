"""What `make run` does around the DAG: `--logs-only` before each stretch, then once the DAG is done, in one call:

    python -m reranker.workflow.finish --run-dir runs/default --command "make run" [--snakemake "snakemake --cores all ..."]

In the run folder it writes, in this order:
- `logs/*.snakemake.log`: each stretch's Snakemake log, copied from .snakemake/log (collect_logs); before each
  stretch, `--logs-only` also notes its start, commit and DAG command in `logs/stretches.jsonl` (note_stretch);
- `numbers/run.json`: the run's wall clock and machine from every stretch's Snakemake log
  (`logs/*.snakemake.log`: a run stopped and resumed adds its stretches up, pauses left out);
- `numbers/<name>_time.json`: the wall clock of each paper with a part of its own (the registry's,
  `reranker.experiments.wall_clock_parts()`: the union of its jobs' spans); a part with no finished job in
  the logs (a rerun with nothing to do) keeps its file, says so on stderr, and the rest goes on;
- `tables/resources.{md,csv,html}` and `numbers/resources.json`: the resources table again, now with the
  measured wall clock, each paper's per-fold checkpoints in one row (`reranker.experiments.checkpoint_prefixes()`);
  a part of the run (`part:` in the folder's config.yaml) writes these records and the resources table into
  `parts/<part>/` instead, beside the other parts' once promoted;
- `report.html`: the DAG's own snakemake command with `--report`, every table and figure in one page
  (`--no-report`: not).

Each step is what `tables wallclock` or `tables resources` does, called in this process (reranker.report.run_records).
Not a stage: it reads the papers' registry (reranker.experiments), which stages never import.
"""

from __future__ import annotations

import argparse
import json
import shlex
import shutil
import subprocess
import sys
import time
from pathlib import Path

from reranker import experiments
from reranker.core.provenance import git_state
from reranker.formats.entry import exits_on_input_error
from reranker.formats.layout import Layout
from reranker.report import run_records as records
from reranker.report.outputs import Outputs


def _mentions(log: Path, mark: str) -> bool:
    """Whether a line of `log` holds `mark` (which holds no line end), read up to the first that does."""
    with open(log, encoding="utf-8", errors="replace") as lines:
        return any(mark in line for line in lines)


def collect_logs(run_dir: Path, snakemake_logs: Path = Path(".snakemake/log")) -> None:
    """Copy into <run-dir>/logs/ every Snakemake log of this run: started since the run folder's first
    `make run` (logs/.started) and naming the run folder (its jobs' outputs are there), so that another
    run in the same checkout, or an earlier run of a folder since deleted, does not count. Called before
    each stretch too: a stretch killed outright (its machine went away) never reached its own copy. A log
    whose copy has its size and modification time (copy2 keeps it) is copied already, and not read again."""
    logs = run_dir / "logs"
    started = logs / ".started"
    if not started.exists():
        logs.mkdir(parents=True, exist_ok=True)
        started.touch()
    since, mark = started.stat().st_mtime, str(run_dir).rstrip("/") + "/"
    for log in sorted(snakemake_logs.glob("*.snakemake.log")):
        found, copy = log.stat(), logs / log.name
        if found.st_mtime < since:
            continue
        kept = copy.stat() if copy.exists() else None
        if kept is not None and (kept.st_size, kept.st_mtime_ns) == (found.st_size, found.st_mtime_ns):
            continue  # copied already, and not grown since
        if _mentions(log, mark):
            shutil.copy2(log, copy)


def note_stretch(run_dir: Path, snakemake: str) -> None:
    """Before a stretch: when it starts, at which commit and with which DAG command (its extra arguments too),
    one line in logs/stretches.jsonl, which run.json's stretches read (a folder resumed at a later commit)."""
    commit, dirty = git_state()
    note = {"at": time.strftime("%Y-%m-%d %H:%M:%S"), "git_commit": commit, "git_dirty": dirty, "snakemake": snakemake}
    with open(run_dir / "logs" / records.STRETCH_NOTES, "a", encoding="utf-8") as notes:
        notes.write(json.dumps(note) + "\n")


def _part(run_dir: Path) -> str | None:
    """The part of the run the folder holds (its resolved configuration's `part`), or None for a whole run."""
    config = Path(Layout(str(run_dir)).path("config"))
    return experiments.load_config(config).get("part") if config.exists() else None


def finish(run_dir: Path, command: str, snakemake: str = "snakemake --cores all", report: bool = True) -> int:
    """The steps after the DAG (see the module's docstring); the report's snakemake exit code, else 0 (a step that
    fails raises)."""
    collect_logs(run_dir)
    # sorted: by the stretch's start (Snakemake names a log by it); none is an error (the run wrote no log)
    logs = sorted(str(path) for path in (run_dir / "logs").glob("*.snakemake.log"))
    if not logs:
        raise FileNotFoundError(f"{run_dir / 'logs'}: no *.snakemake.log (make run copies each stretch's log there)")
    # A part of the run (`part:` in its configuration) keeps its own records, promoted into the reference's parts/<name>/
    # beside the other parts', so that the whole run's numbers/run.json and resources table stay the whole run's.
    part = _part(run_dir)
    numbers = Path(Layout(str(run_dir)).path("part_records", part=part)) if part else run_dir / "numbers"
    tables = numbers if part else run_dir / "tables"
    run_json = numbers / "run.json"
    records.record_wall_clock(logs, str(run_json), command=command)
    if not part:  # a part's own clock is run.json
        for name, paper_part in experiments.wall_clock_parts().items():
            records.record_wall_clock(logs, str(numbers / f"{name}_time.json"), part=paper_part, command=command)
    outputs = Outputs(str(tables / "resources"), ("md", "csv", "html"), str(numbers / "resources.json"), command)
    for path in records.write_resources(run_dir, outputs, run_json=str(run_json), groups=experiments.checkpoint_prefixes()):
        print(path)
    if not report:
        return 0
    sys.stdout.flush()  # the steps' lines before snakemake's, in a log too
    # the command that ran the DAG (its profile and config files), so the report is of that run
    return subprocess.run([*shlex.split(snakemake), "--report", str(run_dir / "report.html")]).returncode


@exits_on_input_error("finish")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker.workflow.finish", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--run-dir", required=True, help="the run folder (runs/<profile>): its logs/ are read")
    parser.add_argument("--command", default="", help="the command that made the run, for provenance")
    parser.add_argument("--snakemake", default="snakemake --cores all",
                        help="the command that ran the DAG (profile, config files): the report is made with it")
    parser.add_argument("--no-report", action="store_true", help="skip report.html (a test, or a machine without the DAG's inputs)")
    parser.add_argument("--logs-only", action="store_true",
                        help="only copy this run's Snakemake logs into <run-dir>/logs/ and note the stretch about to start "
                             "(its time, commit and --snakemake command: logs/stretches.jsonl; make run, before each stretch)")
    args = parser.parse_args(argv if argv is not None else sys.argv[1:])
    if args.logs_only:
        collect_logs(Path(args.run_dir))
        note_stretch(Path(args.run_dir), args.snakemake)
        return 0
    return finish(Path(args.run_dir), args.command, args.snakemake, report=not args.no_report)


if __name__ == "__main__":
    sys.exit(main())
