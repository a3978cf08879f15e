"""The seed file (workflow/config/seed_tables.yaml): per source work, each of its tables, our table, the effect
the source reports, its claims and the statements no claim can test here; loaded and checked, its claims'
source cells checked against workflow/config/source_numbers.yaml (beside it).

What each claim kind means and how it is judged: reranker.reproduction.claims; the index made of them: reranker.report.seed_index.
A compare claim's `source: {rows, than, column, at, group, table, replicability}` names the source's cells; each
must exist once and map (its `row`) to a row the claim compares: an ER between rows the claim does not map is
refused here, before any run is read.
"""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranker.formats import strict_yaml
from reranker.formats.catalog import Catalog, catalog_beside, matches, near, read_catalog
from reranker.formats.errors import ConfigError, InputError, keys_checked
from reranker.formats.source_numbers import cell_setting
from reranker.measures import MEASURES, is_measure
from reranker.reproduction import verdicts as v
from reranker.reproduction.effects import SourceNumbersError, check_ref, load_source_numbers

DEFAULT_SEEDS = Path(__file__).resolve().parents[2] / "workflow" / "config" / "seed_tables.yaml"
SOURCE_NUMBERS = "source_numbers.yaml"  # beside the seed file
KINDS = ("compare", "monotone", "equal", "flat_after", "best_at", "value")
EXPECT = {"compare": v.EXPECT, "monotone": ("increasing", "decreasing"), "equal": ("equal", "differ")}
WORK_KEYS = {"title", "details", "tables", "note", "spread", "untested"}
TABLE_KEYS = {"source", "table", "files", "effect", "claims", "context", "untested"}
COMMON = {"kind", "cite", "says", "measure", "rests_on", "margin", "stated_at", "note"}
CLAIM_KEYS = {
    "compare": COMMON | {"rows", "than", "than_table", "than_group", "groups", "expect", "source"},
    "monotone": COMMON | {"rows", "by", "figure", "label", "groups", "expect"},
    "equal": COMMON | {"rows", "groups", "expect"},
    "flat_after": COMMON | {"figure", "label", "after"},
    "best_at": COMMON | {"figure", "label", "at"},
    "value": COMMON | {"group", "row", "equals", "tolerance"},
}
NEEDS = {"compare": {"rows", "than", "expect", "measure"}, "monotone": {"expect", "measure"},
         "equal": {"rows", "expect", "measure", "margin"}, "flat_after": {"figure", "label", "after", "measure", "margin"},
         "best_at": {"figure", "label", "at", "measure"}, "value": {"group", "row", "measure", "equals"}}
UNTESTED_KEYS = {"says", "cite", "why"}


class ClaimError(InputError):
    """A seed file or a run folder that cannot be judged: the message names the file and the entry."""


# ---------------------------------------------------------------------------------------------------------
# The seed file


def _number(value: object) -> bool:
    """A finite int or float (YAML's `yes` is a bool, which Python counts as an int)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _bounded(measure: object) -> bool:
    """Whether a claim's measure is a ranking measure in [0, 1] (Queries/min is not one)."""
    return isinstance(measure, str) and is_measure(measure)


def load_seeds(path: str | Path, source_numbers: str | Path | None = None, catalog: str | Path | None = None) -> dict:
    """The seed file, checked: every work, table and claim has the keys its kind needs and no other, every
    source cell a claim names exists once, and maps to a row the claim compares; every measure is a measure (or,
    for a claim that rests on something else, a column); every table, figure, row, group and column a claim names
    is one that some configuration makes (the catalog, reranker.formats.catalog: `catalog`, else the one beside
    the seed file, where there is one). Where the source numbers exist they are loaded (checked against the same
    catalog) and returned under `source_numbers`."""
    path = Path(path)
    known = read_catalog(catalog) if catalog is not None else catalog_beside(path)
    numbers_path = Path(source_numbers) if source_numbers is not None else path.parent / SOURCE_NUMBERS
    numbers = load_source_numbers(numbers_path, catalog) if source_numbers is not None or numbers_path.exists() else None
    try:
        seeds = strict_yaml.load(path)
    except (OSError, ConfigError) as err:
        raise ClaimError(str(err) if isinstance(err, ConfigError) else f"{path}: {err}") from None
    if not isinstance(seeds, dict) or not isinstance(seeds.get("works"), list):
        raise ClaimError(f"{path}: expected a mapping with a list `works`")
    _keys(seeds, {"heading", "intro", "works", "outro"}, {"works"}, str(path))
    for i, work in enumerate(seeds["works"]):
        where = f"{path}: works[{i}]"
        _keys(work, WORK_KEYS, {"title", "tables"}, where)
        if "spread" in work:
            _keys(work["spread"], {"table", "rows"}, {"table", "rows"}, f"{where}.spread")
            _known_rows(known, work["spread"]["table"], patterns(work["spread"]["rows"]), f"{where}.spread", "rows")
        _check_untested(work.get("untested"), f"{where}.untested")
        for j, entry in enumerate(work["tables"]):
            here = f"{where}.tables[{j}]"
            _keys(entry, TABLE_KEYS, {"source", "effect"}, here)
            _check_untested(entry.get("untested"), f"{here}.untested")
            if "table" in entry:
                _known_table(known, entry["table"], f"{here}.table")
            for k, claim in enumerate(entry.get("claims") or []):
                _check_claim(claim, f"{here}.claims[{k}]", has_table="table" in entry)
                _check_names(claim, entry, known, f"{here}.claims[{k}]")
                if "source" in claim:
                    _check_source(claim, entry, numbers, numbers_path, f"{here}.claims[{k}].source")
    if numbers is not None:
        seeds["source_numbers"] = numbers
    return seeds


def _keys(entry: Any, allowed: set[str], required: set[str], where: str) -> None:
    keys_checked(entry, allowed, required, where, ClaimError)


def _check_untested(items: Any, where: str) -> None:
    if items is None:
        return
    if not isinstance(items, list):
        raise ClaimError(f"{where}: expected a list of {{says, cite, why}}")
    for i, item in enumerate(items):
        _keys(item, UNTESTED_KEYS, UNTESTED_KEYS, f"{where}[{i}]")
        for key in UNTESTED_KEYS:
            if not isinstance(item[key], str) or not item[key].strip():
                raise ClaimError(f"{where}[{i}]: {key} must be a non-empty string")


def _check_claim(claim: Any, where: str, has_table: bool) -> None:
    kind = claim.get("kind") if isinstance(claim, dict) else None
    if kind not in KINDS:
        raise ClaimError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    _keys(claim, CLAIM_KEYS[kind], NEEDS[kind] | {"kind", "cite"}, where)
    for key in ("cite", "says", "rests_on"):
        if key in claim and (not isinstance(claim[key], str) or not claim[key].strip()):
            raise ClaimError(f"{where}: {key} must be a non-empty string")
    if "stated_at" in claim:
        _check_setting(claim["stated_at"], f"{where}.stated_at")
    if kind in EXPECT and claim["expect"] not in EXPECT[kind]:
        raise ClaimError(f"{where}: expect {claim['expect']!r} is not one of {', '.join(EXPECT[kind])}")
    needs_margin = (kind == "compare" and claim["expect"] in ("near", "no_better")) or "rests_on" in claim
    if needs_margin and not _number(claim.get("margin")):
        what = f"claim resting on {claim['rests_on']!r}" if "rests_on" in claim else f"{claim['expect']} claim"
        raise ClaimError(f"{where}: a {what} needs a numeric margin")
    if "margin" in claim and (not _number(claim["margin"]) or claim["margin"] < 0
                              or (claim["margin"] == 0 and "rests_on" not in claim)):
        raise ClaimError(f"{where}: margin must be a positive number (zero only for a claim that rests on exact values)")
    if "tolerance" in claim and (not _number(claim["tolerance"]) or claim["tolerance"] < 0):
        raise ClaimError(f"{where}: tolerance must be a finite number of at least 0, found {claim['tolerance']!r}")
    for key in ("margin", "tolerance"):  # a measure in [0, 1] never differs by 1 or more: such a bound decides nothing
        if key in claim and claim[key] >= 1 and _bounded(claim.get("measure")):
            raise ClaimError(f"{where}: {key} {claim[key]} is not below 1, the whole range of {claim['measure']}: "
                             "no difference could exceed it")
    if kind == "monotone" and not ({"rows", "by"} <= set(claim) and "figure" not in claim
                                   or {"figure", "label"} <= set(claim) and "rows" not in claim):
        raise ClaimError(f"{where}: a monotone claim orders table rows by a column (`rows`, `by`) or a figure's label by its x "
                         "(`figure`, `label`)")
    if kind in ("compare", "monotone", "equal", "value") and "figure" not in claim and not has_table:
        raise ClaimError(f"{where}: a {kind} claim needs the entry's `table`")


def _check_setting(stated: Any, where: str) -> None:
    """A setting as data: a grid point's values (a key left out: each of its values), or {select: best}."""
    if not isinstance(stated, dict) or not stated:
        raise ClaimError(f"{where}: expected a mapping such as {{learning_rate: 2.0e-5, epochs: 1}}, {{epochs: 2}} "
                         f"or {{select: best}}; found {stated!r}")
    _keys(stated, {"learning_rate", "epochs", "select"}, set(), where)
    if "select" in stated and (stated["select"] != "best" or len(stated) > 1):
        raise ClaimError(f"{where}: select may only be `best` (each row at its own best grid point), alone")
    for key in ("learning_rate", "epochs"):
        value = stated.get(key)
        if key in stated and (isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf):
            raise ClaimError(f"{where}.{key}: must be a positive number; found {value!r}")
    if "epochs" in stated and not float(stated["epochs"]).is_integer():
        raise ClaimError(f"{where}.epochs: must be a whole number; found {stated['epochs']!r}")


# The names a claim uses: none that no configuration makes (a misspelt row would read "not run" for ever)

COMMON_MEASURES = ("AP@1000", "P@20", "nDCG@20", "RR@10", "R@10")  # suggested beside the registered ones


def _check_names(claim: Mapping, entry: Mapping, known: Catalog | None, where: str) -> None:
    """The claim's measure is a measure (a column, for a claim resting on something else: `rests_on`), and its
    tables, figure, rows, groups and columns are in the catalog (where there is one)."""
    measure, tables = claim["measure"], [entry.get("table"), claim.get("than_table")]
    columns = {c for t in tables if known is not None and t in known.tables for c in known.tables[t]["columns"]}
    if not is_measure(str(measure)) and not ("rests_on" in claim and (known is None or measure in columns)):
        what = (f"nor a column of {' or '.join(t for t in tables if t)} {known.where()}" if "rests_on" in claim else
                "(a column without per-query values needs `rests_on`)")
        raise ClaimError(f"{where}: measure {measure!r} is not a measure (ir_measures syntax, or one of "
                         f"{', '.join(MEASURES)}) {what}{near(str(measure), [*MEASURES, *COMMON_MEASURES, *sorted(columns)])}")
    if known is None:
        return
    if "figure" in claim:
        if claim["figure"] not in known.figures:
            raise ClaimError(f"{where}.figure: {claim['figure']!r} is made by no configuration ({known.path})"
                             f"{near(claim['figure'], known.figures)}")
        if not matches(claim["label"], known.figures[claim["figure"]]):
            raise ClaimError(f"{where}.label: {claim['label']!r} is no line of {claim['figure']} {known.where()}"
                             f"{near(claim['label'], known.figures[claim['figure']])}")
        return
    table, than_table = entry["table"], claim.get("than_table") or entry["table"]
    _known_table(known, than_table, f"{where}.than_table")
    def one(key: str) -> list:
        return [claim[key]] if key in claim else []
    by = one("by") if not is_measure(str(claim.get("by"))) else []
    checks = [("rows", table, "rows", True, patterns(claim["rows"]) if "rows" in claim else []),  # globs, as judged
              ("than", than_table, "rows", True, one("than")),
              ("row", table, "rows", False, one("row")), ("groups", table, "groups", False, list(claim.get("groups") or [])),
              ("group", table, "groups", False, one("group")), ("than_group", than_table, "groups", False, one("than_group")),
              ("by", table, "columns", False, by)]
    for key, name, field, glob, values in checks:
        names = known.tables[name][field]
        for value in values:
            if not (matches(value, names) if glob else value in names):
                raise ClaimError(f"{where}.{key}: {value!r} {'matches' if glob else 'is'} no {field[:-1]} of {name} "
                                 f"{known.where()}{near(str(value), names)}")


def _known_table(known: Catalog | None, table: str, where: str) -> None:
    if known is not None and table not in known.tables:
        raise ClaimError(f"{where}: {table!r} is a table no configuration makes ({known.path}){near(table, known.tables)}")


def _known_rows(known: Catalog | None, table: str, rows: Sequence[str], where: str, key: str) -> None:
    _known_table(known, table, f"{where}.table")
    for row in rows if known is not None else []:
        if not matches(row, known.tables[table]["rows"]):
            raise ClaimError(f"{where}.{key}: {row!r} matches no row of {table} {known.where()}{near(row, known.tables[table]['rows'])}")


def source_tables(claim: Mapping, entry: Mapping) -> list[str]:
    """Where a claim's source cells are looked up: its table's, then (for `than`) its `than_table`'s."""
    return [entry["table"]] + ([claim["than_table"]] if claim.get("than_table") else [])


def patterns(value: str | Sequence[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def _check_source(claim: Mapping, entry: Mapping, numbers: Mapping | None, numbers_path: Path, where: str) -> None:
    """The claim's source cells exist, and each maps (its `row`) to a row the claim compares: `rows`' to one of
    its rows, `than`'s to its `than` (like with like: an ER between rows the claim does not map is an error)."""
    if numbers is None:
        raise ClaimError(f"{where}: names source cells, but {numbers_path} does not exist")
    ref, replicability, tables = ref_of(claim, entry)
    if not isinstance(replicability, bool):
        raise ClaimError(f"{where}: replicability must be true or false")
    try:
        check_ref(ref, numbers, tables)
    except SourceNumbersError as err:
        raise ClaimError(f"{where}: {str(err).removeprefix('source: ').removeprefix('source.')} (in {numbers_path})") from None
    for side, ours in (("rows", patterns(claim["rows"])), ("than", [claim["than"]])):
        for source_row in patterns(ref[side]):
            cells = ref_cells(ref, numbers, tables if side == "than" else tables[:1], source_row)
            mapped = {c.get("row") for c in cells} - {None}  # no row of ours: the source's direction only, no ER
            if mapped and not any(any(row_matches(row, p) for p in ours) for row in mapped):
                raise ClaimError(f"{where}: source row {source_row!r} maps to our row {', '.join(map(repr, sorted(mapped)))}, "
                                 f"which is not the claim's {side} ({', '.join(map(repr, ours))}): an ER must pair the rows "
                                 "the claim compares")


def ref_of(claim: Mapping, entry: Mapping) -> tuple[dict, Any, list[str]]:
    """A claim's `source` for reranker.reproduction.effects (without this module's keys), whether it is a replicability
    reading, and the source tables its cells are looked up in (`source.table`, else the claim's tables)."""
    ref = dict(claim["source"])
    replicability = ref.pop("replicability", False)
    table = ref.pop("table", None)
    return ref, replicability, [table] if table else source_tables(claim, entry)


def row_matches(row: str, pattern: str) -> bool:
    return fnmatch.fnmatchcase(row, pattern.replace("{row}", "*"))


def ref_cells(ref: Mapping, numbers: Mapping, tables: Sequence[str], source_row: str) -> list[Mapping]:
    out = []
    for table in tables:
        entry = numbers["tables"].get(table)
        if entry is None:
            continue
        at = ref.get("at", entry.get("at"))
        out += [c for c in entry["cells"] if c["source_row"] == source_row and c["column"] == ref["column"]
                and (at is None or cell_setting(entry, c) == at) and ("group" not in ref or c.get("group") == ref["group"])]
        if out:
            break
    return out
