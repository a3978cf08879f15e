"""Run records: what a finished run took, read from what Snakemake and the stages left behind.

The wall clock of a run from its Snakemake logs (`tables wallclock`): one log, a run resumed in stretches
(their pauses left out), or one part of it (the union of its jobs' spans); and the resources table of a run
folder (`tables resources`): every job's `benchmark:`, the train and score stages' metas, the machine. Both
are reached through `python -m reranker tables` (`record_wall_clock`, `write_resources`);
reranker.workflow.finish calls them at the end of `make run`.
"""

from __future__ import annotations

import functools
import json
import math
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranker.core.provenance import provenance
from reranker.formats.atomic import write_json
from reranker.formats.benchmarks import busy_seconds, read_benchmarks, union_seconds
from reranker.report.labels import TableError
from reranker.report.outputs import Outputs, write_outputs
from reranker.report.table import Table

# A job's timestamp line in a Snakemake log, without its line end (callers add `$` or `\n`), and how to
# read it (local time, as Snakemake writes it).
LOG_STAMP = r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]"
# A Snakemake log's start, near its top (local time, as "YYYY-mm-dd HH:MM:SS...").
LOG_DATE = r"^\s*Date: (.+)$"


def _stamp_seconds(stamp: str) -> float:
    import time

    return time.mktime(time.strptime(stamp, "%a %b %d %H:%M:%S %Y"))


def _log_key(log: str | os.PathLike) -> tuple[str, tuple[str, int, int] | None]:
    """A Snakemake log as the caches below know it: its path as given (read through it, so that an error names
    it as ever) and its version (absolute path, modification time, size). `reranker.workflow.finish` times a run, then
    each part of it, over the same logs: each is read and parsed once."""
    try:
        stat = os.stat(log)
    except OSError:  # the read fails, naming the file; nothing is kept
        return os.fspath(log), None
    return os.fspath(log), (os.path.abspath(log), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=16)
def _log_text(path: str, version: tuple[str, int, int] | None) -> str:
    return Path(path).read_text(encoding="utf-8", errors="replace")


@functools.lru_cache(maxsize=16)
def _log_spans(path: str, version: tuple[str, int, int] | None) -> list[dict]:
    return _job_spans(_log_text(path, version))


def wall_clock(log: str | os.PathLike) -> dict | None:
    """Start, wall-clock seconds and jobs of a finished Snakemake run, from its log; None if it ran no job."""
    return _finished_wall_clock(_log_text(*_log_key(log)), Path(log).name)


def _log_start(text: str) -> str | None:
    import re

    started = re.search(LOG_DATE, text, re.M)
    return started.group(1).strip() if started else None


def _finished_wall_clock(text: str, name: str) -> dict | None:
    import re

    started = _log_start(text)
    elapsed = re.search(r"^Elapsed time: (?:(\d+) days?, )?(\d+):(\d+):([\d.]+)$", text, re.M)
    done = re.findall(r"^(\d+) of (\d+) steps \(100%\) done$", text, re.M)
    if not (started and elapsed and done):
        return None
    days, hours, minutes, seconds = (float(x) if x else 0.0 for x in elapsed.groups())
    return {"started": started, "wall_clock_seconds": round(((days * 24 + hours) * 60 + minutes) * 60 + seconds, 1),
            "jobs": int(done[-1][1]), "snakemake_log": name}


def run_wall_clock(logs: Sequence[str | os.PathLike]) -> dict:
    """The wall clock of a run made in stretches, one Snakemake log each (stopped and resumed, e.g. across
    sessions): each stretch from its start (the log's Date) to its end (its elapsed time when it finished, else
    its last timestamp), added up; the pauses between stretches do not count. The run must have finished: its
    last stretch that ran a job reached 100%."""
    import re
    import time

    stretches = []
    for log in logs:
        text = _log_text(*_log_key(log))
        finished = _finished_wall_clock(text, Path(log).name)
        if finished:
            started, seconds = finished["started"], finished["wall_clock_seconds"]
        else:  # stopped: from its start to its last job stamp
            started, stamps = _log_start(text), re.findall(LOG_STAMP + "$", text, re.M)
            seconds = 0.0
            if started and stamps:
                begin = time.mktime(time.strptime(started[:19], "%Y-%m-%d %H:%M:%S"))
                seconds = max(0.0, _stamp_seconds(stamps[-1]) - begin)
        stretches.append({"snakemake_log": Path(log).name, "started": started,
                          "seconds": round(seconds, 1), "jobs": len(re.findall(r"^Finished jobid: ", text, re.M)),
                          "finished": finished is not None})
    stretches.sort(key=lambda s: s["started"] or "")
    _add_commits(stretches, Path(logs[0]).parent / STRETCH_NOTES)
    working = [s for s in stretches if s["jobs"]]
    if not working:
        raise TableError(f"no finished job in {', '.join(map(str, logs))}")
    if not working[-1]["finished"]:
        raise TableError(f"{working[-1]['snakemake_log']}: the run's last stretch stopped before 100% (resume it, "
                         "then time it): no wall clock for an unfinished run")
    return {"started": working[0]["started"], "wall_clock_seconds": round(sum(s["seconds"] for s in stretches), 1),
            "jobs": sum(s["jobs"] for s in stretches), "stretches": stretches,
            "snakemake_logs": [s["snakemake_log"] for s in stretches]}


STRETCH_NOTES = "stretches.jsonl"  # beside the logs: one line per `make run` stretch, written as it starts


def _add_commits(stretches: list[dict], notes: Path) -> None:
    """Each stretch's commit and DAG command: the last note (`workflow.finish --logs-only`, before each stretch)
    taken at or before its start, so that a run resumed at a later commit says which commit made what. A
    stretch with no note before it (a folder begun before the notes existed) gets none."""
    if not notes.exists():
        return
    taken = sorted((json.loads(line) for line in notes.read_text(encoding="utf-8").splitlines() if line.strip()),
                   key=lambda note: note["at"])
    for stretch in stretches:
        before = [note for note in taken if stretch["started"] and note["at"] <= stretch["started"][:19]]
        if before:
            stretch.update({key: before[-1][key] for key in ("git_commit", "git_dirty", "snakemake") if key in before[-1]})


def job_spans(log: str | os.PathLike) -> list[dict]:
    """The finished jobs of a Snakemake log: start and end (epoch seconds), rule, and the job's block of
    text (its output and wildcards), in order of start."""
    return [dict(span) for span in _log_spans(*_log_key(log))]  # copies: the parsed log is kept for the next call


def _job_spans(text: str) -> list[dict]:
    import re

    stamp = LOG_STAMP + r"\n"
    started = {m.group(3): (_stamp_seconds(m.group(1)), m.group(2), m.group(0))
               for m in re.finditer(stamp + r"(?:local)?rule (\w+):\n(?:    .*\n)*?    jobid: (\d+)\n(?:    .*\n)*", text, re.M)}
    spans = []
    for m in re.finditer(stamp + r"Finished jobid: (\d+) \(Rule: (\w+)\)", text, re.M):
        if m.group(2) in started:
            start, rule, block = started[m.group(2)]
            spans.append({"start": start, "end": _stamp_seconds(m.group(1)), "rule": rule, "text": block})
    return sorted(spans, key=lambda span: span["start"])


def part_wall_clock(logs: Sequence[str | os.PathLike], match: str) -> dict:
    """The wall clock of one part of a run, over one or more Snakemake logs (a run stopped and resumed):
    the union of the time spans of the finished jobs whose block (rule, outputs, wildcards) matches the regular
    expression `match`, so that time when none of them ran (other parts, pauses) does not count. `job_seconds`
    adds the spans up (more than the wall clock where jobs ran side by side)."""
    import re

    spans = [s for log in logs for s in job_spans(log) if re.search(match, s["text"])]
    if not spans:
        raise TableError(f"no finished job mentions {match!r} in {', '.join(map(str, logs))}")
    covered = union_seconds([(span["start"], span["end"]) for span in spans])
    rules: dict[str, int] = {}
    for span in spans:
        rules[span["rule"]] = rules.get(span["rule"], 0) + 1
    return {"part": match, "wall_clock_seconds": round(covered, 1), "job_seconds": round(sum(s["end"] - s["start"] for s in spans), 1),
            "jobs": len(spans), "jobs_by_rule": dict(sorted(rules.items())), "snakemake_logs": [Path(log).name for log in logs]}


def record_wall_clock(logs: Sequence[str], out: str, *, part: str | None = None, command: str = "") -> dict | None:
    """Record a finished run's wall clock, with the machine it ran on, beside the numbers it made: from one
    Snakemake log, a resumed run's `logs` (their stretches), or with `part` (a regular expression) one part of the
    run; its timing, or None where there is none to record (no finished job: `out` is kept, as stderr says)."""
    if part:
        try:
            timing = part_wall_clock(logs, part)
        except TableError as err:  # e.g. a rerun with nothing to do: the timed run's record stays
            print(f"{err}; {out} kept", file=sys.stderr)
            return None
    elif len(logs) > 1:
        timing = run_wall_clock(logs)  # a resumed run: its stretches, pauses left out
    else:
        timing = wall_clock(logs[0])
        if timing is None:
            print(f"{logs[0]}: no finished job in this run; {out} kept", file=sys.stderr)
            return None
    from reranker.core.hardware import machine

    found = machine()
    record = provenance(command, extra={**timing, "machine": {
        "cpu": found["cpu"], "cores": found["threads"], "bf16": found["cpu_bf16"], "gpu": found["gpu"]}})
    write_json(out, record, indent=2)
    print(f"{out}: {timing['jobs']} {part or ''} jobs in {timing['wall_clock_seconds'] / 60:.1f} min".replace("  ", " "))
    return timing


# Stages in the order a run reaches them; a stage not listed sorts after them.
STAGE_ORDER = ("export", "folds", "index", "retrieve", "evaluate", "segment", "train", "score", "join", "fuse",
               "aggregate", "speed", "tables", "figures", "compare")
RESOURCE_COLUMNS = ("jobs", "time (s)", "CPU time (s)", "max RSS (MiB)")
RESOURCE_EXTRAS = ("pairs/s", "GPU", "GPU peak (MiB)", "GPU energy (J)")
TOTAL_ROW = "sum"  # the resources table's last row adds all the others: readers that add rows skip it


def resource_subject(stage: str, name: str, groups: Sequence[str] = ()) -> str:
    """The table's second key: the collection for per-collection stages, the checkpoint for train, one row
    for the checkpoints a paper generates per fold or row (`groups`: their prefixes, e.g. "radboud-")."""
    if stage in ("tables", "figures", "compare"):
        return "all"
    if stage == "train":
        return next((f"{prefix}*" for prefix in groups if name.startswith(prefix)), name)
    return name.split(".")[0]


def resource_metas(work_dir: str | os.PathLike, groups: Sequence[str] = ()) -> dict[Path, tuple[str, str, dict]]:
    """Path -> (stage, subject, meta) of every checkpoint and score run under a run's work folder; score
    parts count once, through their gathered meta, and runs joined (`score join`) through their own."""
    work = Path(work_dir)
    found = {path: ("train", resource_subject("train", path.parent.name, groups), json.loads(path.read_text()))
             for path in sorted(work.glob("checkpoints/*/reranker.json"))}
    for path in sorted(work.glob("scores/*/**/*.meta.json")):
        meta = json.loads(path.read_text())
        if meta.get("part", "1/1") == "1/1" and "joined" not in meta:
            found[path] = ("score", path.relative_to(work / "scores").parts[0], meta)
    return found


def resources_table(jobs: Sequence, metas: Sequence[tuple[str, str, dict]], machine: Mapping[str, Any],
                    caption: str, wall_clock: float | None = None, groups: Sequence[str] = ()) -> Table:
    """Stage x collection: jobs, time, CPU time and peak memory from Snakemake's benchmarks; pairs/s and
    the GPU's name, peak memory and energy from the stages' metas; a sum row; notes on the wall clock."""
    from reranker.core.hardware import combine_usage

    by_stage: dict[tuple[str, str], list] = {}
    for job in jobs:
        by_stage.setdefault((job.stage, resource_subject(job.stage, job.name, groups)), []).append(job)
    order = lambda key: (STAGE_ORDER.index(key[0]) if key[0] in STAGE_ORDER else len(STAGE_ORDER), key)  # noqa: E731
    integer = lambda column, value: f"{value:,.0f}" if column != "time (s)" or value >= 10 else f"{value:.1f}"  # noqa: E731
    table = Table(caption, ["resources"], list(RESOURCE_COLUMNS), row_header="Stage · collection", bold_best=False,
                  number_format=integer)
    by_key: dict[tuple[str, str], list[dict]] = {}
    for stage, subject, meta in metas:
        by_key.setdefault((stage, subject), []).append(meta)

    def add_row(row: str, members: Sequence, key_metas: Sequence[dict], rate: bool = True) -> None:
        rss = [job.max_rss_mib for job in members if job.max_rss_mib is not None]
        cpu = [job.cpu_seconds for job in members if job.cpu_seconds is not None]
        values = {"jobs": len(members), "time (s)": sum(job.seconds for job in members),
                  "CPU time (s)": sum(cpu) if cpu else math.nan, "max RSS (MiB)": max(rss) if rss else math.nan}
        for column, value in values.items():
            table.add(row, "resources", column, float(value))
        rates = [(meta["throughput"]["pairs_per_second"], meta.get("seconds") or 0) if "throughput" in meta
                 else (meta["pairs"] / meta["seconds"] if meta.get("seconds") else None, meta.get("seconds") or 0)
                 for meta in key_metas]
        rates = [(rate, seconds) for rate, seconds in rates if rate is not None and seconds]
        pairs_rate = sum(r * seconds for r, seconds in rates) / sum(seconds for _, seconds in rates) if rates and rate else "–"
        usage = combine_usage([meta.get("device_usage") for meta in key_metas]) if key_metas else None
        table.add_value(row, "pairs/s", round(pairs_rate, 1) if isinstance(pairs_rate, float) else pairs_rate)
        table.add_value(row, "GPU", usage["gpu"] if usage else "–")
        table.add_value(row, "GPU peak (MiB)", usage["gpu_peak_memory_mib"] if usage else "–")
        table.add_value(row, "GPU energy (J)", usage["gpu_energy_joules"] if usage else "–")

    for key in sorted(by_stage, key=order):
        add_row(f"{key[0]} · {key[1]}", by_stage[key], by_key.get(key, []))
    add_row(TOTAL_ROW, list(jobs), [meta for _, _, meta in metas], rate=False)  # pairs of train and score do not add
    table.extra_formats.update({"pairs/s": ",.1f", "GPU peak (MiB)": ",.0f", "GPU energy (J)": ",.0f"})
    busy = busy_seconds(list(jobs))
    total = sum(job.seconds for job in jobs)
    table.notes.append(f"Machine: {machine['cpu']} ({machine['threads']} threads, bf16 "
                       f"{'yes' if machine['cpu_bf16'] else 'no'}); GPU: {machine['gpu']}.")
    table.notes.append(f"Time, CPU time and max RSS are Snakemake's `benchmark:` of each job (benchmarks/<stage>/); "
                       f"pairs/s and GPU fields come from the train and score stages' meta files (\"none\": no GPU). "
                       f"The sum row adds the jobs' times ({total / 60:.1f} min); jobs that ran side by side make it "
                       f"exceed the wall clock during which any job ran: {busy / 60:.1f} min.")
    if wall_clock is not None:
        rest = wall_clock - busy
        table.notes.append(f"The run's measured wall clock (Snakemake's logs, numbers/run.json): {wall_clock / 60:.1f} min; "
                           f"the jobs cover {busy / wall_clock:.0%} of it. The rest, {rest / 60:.1f} min, is Snakemake's "
                           "start-up (parsing, DAG and checksums) and the gaps between a job's end and the next one's start.")
    return table


def write_resources(run_dir: str | os.PathLike, outputs: Outputs, *, run_json: str | None = None,
                    caption: str = "What every stage cost", groups: Sequence[str] = ()) -> list[Path]:
    """The resources table of a run folder: what every stage cost, from Snakemake's benchmarks; the paths written.
    `run_json`: the finished run's wall clock (`tables wallclock`), compared with the jobs' time; `groups`: the
    prefixes of checkpoints trained per fold or row, one row each."""
    from reranker.core.hardware import machine

    run_dir = Path(run_dir)
    jobs = read_benchmarks(run_dir / "benchmarks")
    if not jobs:
        raise TableError(f"{run_dir / 'benchmarks'}: no job benchmarks (run the workflow first)")
    seconds = json.loads(Path(run_json).read_text())["wall_clock_seconds"] if run_json else None
    metas = resource_metas(run_dir / "work", groups)
    found = machine()
    table = resources_table(jobs, list(metas.values()), found, caption, seconds, groups)
    # the models whose training and scoring the rows time, as in the results tables' provenance
    models = {str(path): {key: meta[key] for key in ("checkpoint", "fingerprint", "kind", "precision") if key in meta}
              for path, (_, _, meta) in metas.items()}
    inputs = [str(job.path) for job in jobs] + [str(path) for path in metas] + ([run_json] if run_json else [])
    return write_outputs(table, outputs, inputs, lambda: {"benchmarks": len(jobs), "machine": found, "models": models},
                         machine_dependent=list(RESOURCE_COLUMNS) + list(RESOURCE_EXTRAS))
