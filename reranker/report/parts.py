"""The index's account of how its numbers were made: the whole run's record (numbers/run.json) and, where the run was
made in parts (`make run PART=name`, promoted into parts/<name>/), each part's, with its wall clock, machine and
commit. A reader sees which tables came from which job, and on what."""

from __future__ import annotations

import json
from pathlib import Path

from reranker.formats.layout import PATTERNS
from reranker.report.run_records import TOTAL_ROW

PART_RECORDS = PATTERNS["part_run"].format(part="*")


def cpu_per_second(resources: Path) -> str:
    """The jobs' CPU seconds per second of their own time, from the record's resources table: about 1 or more where a
    run had its cores to itself (1-thread jobs near 1, 2-thread ones above), lower where other work shared them, so
    that a long wall clock from a shared machine shows as such. "–" where no table was kept."""
    if not resources.is_file():
        return "–"
    document = json.loads(resources.read_text(encoding="utf-8"))
    layout, groups = document.get("layout") or {}, list((document.get("numbers") or {}).values())
    skipped = {TOTAL_ROW, *layout.get("summaries", [])}  # rows that repeat the others' time would count it twice
    rows = [r for r in layout.get("rows", []) if r not in skipped]
    cells = [groups[0].get(r) or {} for r in rows] if groups else []
    cpu, time = (sum(c.get(key) or 0 for c in cells) for key in ("CPU time (s)", "time (s)"))
    return f"{cpu / time:.2f}" if time else "–"


def _commit(record: dict) -> str:
    return (record.get("git_commit") or "?")[:12] + (" (dirty)" if record.get("git_dirty") else "")


def _row(name: str, record: dict, resources: Path) -> str:
    machine = record.get("machine") or {}
    cpu = f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores" + (", bf16" if machine.get("bf16") else "")
    gpu = machine.get("gpu")
    if gpu and gpu != "none":
        cpu += f", GPU {gpu}"
    # a folder resumed at a later commit: each stretch's commit, in order (its notes, logs/stretches.jsonl)
    commits = list(dict.fromkeys(_commit(s) for s in record.get("stretches", []) if s.get("jobs") and "git_commit" in s))
    commit = " + ".join(commits) if commits else _commit(record)
    minutes = record.get("wall_clock_seconds")
    wall = f"{minutes / 60:.1f} min" if isinstance(minutes, (int, float)) else "?"
    cells = [name, f"`{record.get('command', '')}`", wall, str(record.get("jobs", "?")), cpu_per_second(resources), cpu,
             commit, record.get("started", "")]
    return "| " + " | ".join(cells) + " |"


def section(run_dir: Path) -> list[str]:
    """Lines for the index: one row per part record, and the whole run's where one exists; none where neither does."""
    rows = [_row(path.parent.name, json.loads(path.read_text(encoding="utf-8")), path.parent / "resources.json")
            for path in sorted(run_dir.glob(PART_RECORDS))]
    if not rows:
        return []
    whole = run_dir / "numbers" / "run.json"
    if whole.is_file():
        rows.append(_row("whole run (tables no part has remade)", json.loads(whole.read_text(encoding="utf-8")),
                         whole.parent / "resources.json"))
    return ["Made in parts, each one job on a fresh clone (`make run PART=<name>`, then `make promote PART=<name>`); "
            "a table is its part's, and a table whose jobs changed since reads pending. CPU/s: the jobs' CPU seconds "
            "per second of their own time (resources table), near 1 or above where a run had its cores to itself, "
            "lower where other work shared them:", "",
            "| part | command | wall clock | jobs | CPU/s | machine | commit | started |",
            "|---|---|---:|---:|---:|---|---|---|",
            *rows, ""]
