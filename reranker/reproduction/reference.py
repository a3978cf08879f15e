"""A run's numbers and table files against the stored reference's, and the Markdown report of the differences.

Every number in the run's `numbers/*.json` is matched with the reference's, within a tolerance per
kind: numbers made by Lucene alone (first-stage rows, dataset statistics) must match exactly
(`compare.lucene`), numbers that involve a model within `compare.model`. Numbers only one side has
are listed, not failed: a changed configuration adds or drops rows.
"""

from __future__ import annotations

import json
import math
from collections.abc import Collection, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from reranker.core.registry import FIRST_STAGES
from reranker.formats.errors import FormatError
from reranker.reproduction.tolerance import within

LUCENE_TABLES = {"baselines", "dataset_stats"}
LUCENE_ROWS = {stage.label for stage in FIRST_STAGES.values()}  # provided runs sit in the baselines table
# Built after the comparison, from the run's own timings (what every stage cost): promoted, never compared.
AFTER_COMPARISON = {"resources"}


@dataclass(frozen=True)
class Difference:
    table: str
    key: str
    kind: str  # lucene | model | machine
    run: float | None
    reference: float | None
    tolerance: float
    stale: bool = False  # the reference prints it pending: made by jobs that have changed since (tools/stale.py)

    @property
    def status(self) -> str:
        if self.kind == "machine":
            return "machine"  # a speed of the machine that ran it: shown, never a drift
        if self.reference is None:
            return "new"
        if self.run is None:
            return "missing"
        if self.stale:
            return "remade"  # the reference knew it was not today's: a run of today's code replaces it, never a drift
        if math.isnan(self.run) and math.isnan(self.reference):
            return "match"
        return "match" if within(self.run, self.reference, self.tolerance) else "drift"


def leaves(numbers: Mapping, path: Path, measures: Collection[str] = (),
           prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], float]]:
    """Every number below `numbers` with its key path. A text cell (a column such as L/H: "6/384") is skipped; a
    number stored as text, text in a measure's column, or anything else is a FormatError naming `path` and the key:
    skipped, it would read as "new" or "missing", never as a drift."""
    for key, value in numbers.items():
        here = prefix + (str(key),)
        if isinstance(value, Mapping):
            yield from leaves(value, path, measures, here)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            yield here, float(value)
        elif value is None and key == "sd" and "mean" in numbers:
            continue  # a summary of one row has no standard deviation
        elif not isinstance(value, str) or _numeric(value) or key in measures:
            raise FormatError(path, None, f"{' / '.join(here)}: expected a number, found {json.dumps(value)}; the file is "
                                          "damaged: make it again (rerun its table, or restore the reference's copy with git checkout)")


def _numeric(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def kind_of(table: str, key: tuple[str, ...]) -> str:
    """Lucene alone: the baselines and statistics tables, and first-stage rows of any table."""
    return "lucene" if table in LUCENE_TABLES or LUCENE_ROWS & set(key) else "model"


def read_from(reference: str | Path) -> list[str]:
    """The reference's files a comparison reads, as absolute paths: its numbers and its table files (those made
    after the comparison left out). The compare rule's inputs, so that a changed reference (a promote, a
    checkout) is compared again."""
    folder = Path(reference).absolute()
    return sorted(str(p) for pattern in ("numbers/*.json", "tables/*") for p in folder.glob(pattern)
                  if p.is_file() and p.stem not in AFTER_COMPARISON)


def compare_numbers(run_dir: Path, reference: Path, tolerances: Mapping[str, float], only_run: bool = False) -> list[Difference]:
    """Every number of either side (`only_run`: of the tables the run made, as a part of a run compares)."""
    differences = []
    ours = {p.stem for p in (run_dir / "numbers").glob("*.json")}
    names = sorted((ours if only_run else ours | {p.stem for p in (reference / "numbers").glob("*.json")}) - AFTER_COMPARISON)
    for table in names:
        (run, run_machine, _), (ref, ref_machine, stale) = (_numbers(folder / "numbers" / f"{table}.json")
                                                            for folder in (run_dir, reference))
        for key in sorted(run.keys() | ref.keys()):
            kind = "machine" if key[-1] in run_machine | ref_machine else kind_of(table, key)
            differences.append(Difference(table, " / ".join(key), kind, run.get(key), ref.get(key),
                                          tolerances.get(kind, math.inf), key[:3] in stale))
    return differences


def _numbers(path: Path) -> tuple[dict[tuple[str, ...], float], set[str], set[tuple[str, ...]]]:
    """A numbers file's leaves, its machine-dependent columns (timings), and the (group, row, column) cells its
    layout prints pending. `per_query`, beside `numbers`, is not compared and not read."""
    if not path.exists():
        return {}, set(), set()
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FormatError(path, None, f"not valid JSON (empty?) ({err}); make it again: promote the run, "
                                      "or git checkout the reference's copy") from None
    if not isinstance(document, dict) or not isinstance(document.get("numbers", {}), dict):
        raise FormatError(path, None, "expected a JSON object with a `numbers` object (a table's numbers); "
                                      "make it again: promote the run, or git checkout the reference's copy")
    layout = document.get("layout")
    measures = (layout.get("measures") or ()) if isinstance(layout, dict) else ()
    pending = (layout.get("pending") or []) if isinstance(layout, dict) else []
    stale = {(cell[1], cell[0], cell[2]) for cell in pending if isinstance(cell, list) and len(cell) == 3}  # stored (row, group, column)
    machine = document.get("machine_dependent", [])  # run.json has none
    return dict(leaves(document.get("numbers", {}), path, measures)), set(machine if isinstance(machine, list) else []), stale


def compare_files(run_dir: Path, reference: Path, only_run: bool = False) -> list[tuple[str, str]]:
    """(path, identical | differs | new | missing) for every published table file (`only_run`: the run's)."""
    rows = []
    run_files = {p.relative_to(run_dir) for p in (run_dir / "tables").glob("*") if p.is_file() and p.stem not in AFTER_COMPARISON}
    made = {r.stem for r in run_files}  # a part's tables, each in every format it wrote
    ref_files = {p.relative_to(reference) for p in (reference / "tables").glob("*") if p.is_file() and p.stem not in AFTER_COMPARISON
                 and (not only_run or p.stem in made)}
    for rel in sorted(run_files | ref_files):
        if rel not in ref_files:
            rows.append((str(rel), "new"))
        elif rel not in run_files:
            rows.append((str(rel), "missing"))
        else:
            same = (run_dir / rel).read_bytes() == (reference / rel).read_bytes()
            rows.append((str(rel), "identical" if same else "differs"))
    return rows


def report(differences: list[Difference], files: list[tuple[str, str]], run_dir: Path, reference: Path,
           tolerances: Mapping[str, float]) -> str:
    counts = {status: sum(d.status == status for d in differences)
              for status in ("match", "drift", "remade", "new", "missing", "machine")}
    lines = [f"# {run_dir} against {reference}", "",
             f"{counts['match']} numbers match, {counts['drift']} drift beyond tolerance, "
             f"{counts['remade']} remade (the reference printed them pending: not today's code's), "
             f"{counts['new']} new, {counts['missing']} missing. Tolerances (absolute): "
             f"Lucene alone {tolerances['lucene']}, with a model {tolerances['model']}. "
             f"{counts['machine']} speeds of the machine are shown, not compared.", "",
             "| table | number | kind | run | reference | difference | status |", "|---|---|---|---:|---:|---:|---|"]
    for d in differences:
        if d.status == "match" and d.run == d.reference:
            continue  # exact matches are counted, not listed
        diff = f"{d.run - d.reference:+.6f}" if d.run is not None and d.reference is not None else ""
        lines.append(f"| {d.table} | {d.key} | {d.kind} | {_fmt(d.run)} | {_fmt(d.reference)} | {diff} | {d.status} |")
    lines += ["", "| table file | bytes |", "|---|---|"] + [f"| {path} | {status} |" for path, status in files]
    return "\n".join(lines) + "\n"


def _fmt(value: float | None) -> str:
    return "" if value is None else f"{value:.6f}"
