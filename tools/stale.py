"""`python tools/stale.py PROFILE [--reference DIR] [--mark] [--configfile F ...]`: the stored numbers whose jobs
changed since they were made.

`make promote` records, beside a reference's numbers (`jobs.json`, by tools/dag_jobs.py), every job each
numbers file rests on with the digest of its shell, params and inputs, as Snakemake would rerun it. Here today's DAG
(a dry run of the profile, with `--configfile` overlays) is set against that record: a numbers file one of whose
jobs moved, was added or is gone is not today's result. It is listed; with `--mark`, every cell of its table is
printed "pending" with what changed (the table rendered anew from its numbers: reranker.report.rerender), so that
no table and no claim of the index (which reads pending cells as "pending") rests on it. Exit 1 where a changed
file is not marked (without `--mark`), so that a check can fail on it.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import dag_jobs

# Tables whose writers keep their own header and number formats (tables rerender cannot remake them) and that judge
# no claim: what the stored run cost, and the collections' statistics. Listed when their jobs changed, not marked.
OWN_WRITERS = {"resources", "dataset_stats"}
JOBS = "jobs.json"  # beside numbers/ (not in it: every file there is a table's): what each numbers file rests on
SOURCES = dag_jobs.REPO / "workflow" / "config" / "source_numbers.yaml"


def changed(record: dict, today: dict[str, dict[str, str]]) -> dict[str, list[str]]:
    """numbers name -> the jobs behind it that moved, appeared or went since `record` (none: it is current)."""
    out = {}
    for name, jobs in record["numbers"].items():
        now = today.get(name)
        if now is None:
            out[name] = ["(no job of today's DAG makes it)"]
            continue
        moved = sorted({job for job in jobs if now.get(job) != jobs[job]} | {job for job in now if job not in jobs})
        if moved:
            out[name] = moved
    return out


def reason(record: dict, name: str, jobs: list[str]) -> str:
    """Why a numbers file is pending: its commit, and how many jobs behind it moved, appeared or went, by rule."""
    rules = Counter(job.split(" ", 1)[0] for job in jobs).most_common()
    shown = ", ".join(f"{rule} {n}" for rule, n in rules[:6]) + (f" and {len(rules) - 6} more" if len(rules) > 6 else "")
    made_at = (record.get("made_at") or {}).get(name) or record["commit"]  # a part promoted on its own has its commit
    return (f"made at {made_at[:12]}, since when {len(jobs)} jobs behind it changed, appeared or went "
            f"({shown}): a run of today's code remakes it")


def stored_file(reference: Path, name: str) -> Path:
    """A table's numbers (numbers/<name>.json) or a figure's points (figures/<name>.json, named with its folder)."""
    return reference / f"{name}.json" if name.startswith("figures/") else reference / "numbers" / f"{name}.json"


def is_marked(numbers: Path) -> bool:
    """Every cell of the table pending, or the figure's points (`pending_why`); a table with no layout has no cells
    to mark: it counts as marked."""
    document = json.loads(numbers.read_text(encoding="utf-8"))
    if numbers.parent.name == "figures":
        return bool(document.get("pending_why"))
    layout = document.get("layout")
    if not layout or not layout.get("measures"):
        return True
    columns = layout["measures"] + layout.get("extra_columns", [])
    cells = {(r, g, m) for r in layout["rows"] for g in layout["groups"] for m in columns} - {
        (r, g, m) for r in layout.get("summaries", []) for g in layout["groups"] for m in columns}
    return cells <= {tuple(cell) for cell in layout.get("pending", [])}


def mark(reference: Path, name: str, why: str) -> None:
    from reranker.formats.atomic import write_json
    from reranker.report.rerender import rerender

    numbers = stored_file(reference, name)
    document = json.loads(numbers.read_text(encoding="utf-8"))
    if numbers.parent.name == "figures":  # a figure's points: the claims that read them read "pending"
        if document.get("pending_why") != why:
            write_json(numbers, {**document, "pending_why": why}, indent=1, sort_keys=True, ensure_ascii=False)
        return
    layout = document.get("layout") or {}
    if not layout.get("measures") or (is_marked(numbers) and layout.get("pending_why") == why):
        return
    formats = sorted({p.suffix.lstrip(".") for p in (reference / "tables").glob(f"{name}.*")} & {"md", "csv", "tex", "html"})
    rerender(numbers, reference / "tables" / name, formats or ["md"], sources=str(SOURCES), pending=["*:*:*"], why=why)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("profile", choices=dag_jobs.PROFILES)
    parser.add_argument("--reference", type=Path, help="the stored run (default: results, or results/quick for quick)")
    parser.add_argument("--configfile", nargs="*", default=[], help="configuration files over the profile's (a test's change)")
    parser.add_argument("--mark", action="store_true", help="print every cell of a changed table pending, with why")
    args = parser.parse_args(argv)
    reference = args.reference or dag_jobs.REPO / ("results/quick" if args.profile == "quick" else "results")
    record_path = reference / JOBS
    if not record_path.exists():
        print(f"stale: {record_path} does not exist; `make promote` writes it (tools/dag_jobs.py --behind-numbers)", file=sys.stderr)
        return 2
    record = json.loads(record_path.read_text(encoding="utf-8"))
    layers = ([str(dag_jobs.REPO / "workflow" / "config" / "quick.yaml")] if args.profile == "quick" else [])
    today = dag_jobs.traced_jobs(args.profile, configfiles=[*layers, *args.configfile] if args.configfile else ())[1]
    found = changed(record, today)
    unmarked = []
    for name, jobs in found.items():
        numbers = stored_file(reference, name)
        if not numbers.exists() or name in OWN_WRITERS:
            print(f"{name}: {reason(record, name, jobs)} (listed, not marked: its writer owns its format)")
            continue
        if args.mark:
            mark(reference, name, reason(record, name, jobs))
        if not is_marked(numbers):
            unmarked.append(name)
        print(f"{name}: {reason(record, name, jobs)}{'' if is_marked(numbers) else ' (not marked pending)'}")
    print(f"{len(found)} of {len(record['numbers'])} numbers files rest on changed jobs; {len(unmarked)} not marked pending")
    return 1 if unmarked else 0


if __name__ == "__main__":
    sys.exit(main())
