"""The index's account of how its numbers were made: the whole run's record (numbers/run.json) and, where the run was
made in parts (`make run PART=name`, promoted into parts/<name>/), each part's, with its wall clock, machine and
commit. A reader sees which tables came from which job, and on what."""

from __future__ import annotations

import json
from pathlib import Path

from reranker.formats.layout import PATTERNS

PART_RECORDS = PATTERNS["part_run"].format(part="*")


def _row(name: str, record: dict) -> str:
    machine = record.get("machine") or {}
    cpu = f"{machine.get('cpu', '?')}, {machine.get('cores', '?')} cores" + (", bf16" if machine.get("bf16") else "")
    gpu = machine.get("gpu")
    if gpu and gpu != "none":
        cpu += f", GPU {gpu}"
    commit = (record.get("git_commit") or "?")[:12] + (" (dirty)" if record.get("git_dirty") else "")
    minutes = record.get("wall_clock_seconds")
    wall = f"{minutes / 60:.1f} min" if isinstance(minutes, (int, float)) else "?"
    cells = [name, f"`{record.get('command', '')}`", wall, str(record.get("jobs", "?")), cpu, commit, record.get("started", "")]
    return "| " + " | ".join(cells) + " |"


def section(run_dir: Path) -> list[str]:
    """Lines for the index: one row per part record, and the whole run's where one exists; none where neither does."""
    rows = [_row(path.parent.name, json.loads(path.read_text(encoding="utf-8")))
            for path in sorted(run_dir.glob(PART_RECORDS))]
    if not rows:
        return []
    whole = run_dir / "numbers" / "run.json"
    if whole.is_file():
        rows.append(_row("whole run (tables no part has remade)", json.loads(whole.read_text(encoding="utf-8"))))
    return ["Made in parts, each one job on a fresh clone (`make run PART=<name>`, then `make promote PART=<name>`); "
            "a table is its part's, and a table whose jobs changed since reads pending:", "",
            "| part | command | wall clock | jobs | machine | commit | started |", "|---|---|---:|---:|---|---|---|",
            *rows, ""]
