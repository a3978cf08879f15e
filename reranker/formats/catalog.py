"""The tables and figures that some configuration of the suite makes, with their groups, rows and columns
(`workflow/config/table_catalog.json`, beside the seed file and the source numbers): what a claim or a source
cell may name. Where a name is in no configuration, a claim on it would read "not run" for ever and a source
cell would never be shown: the readers refuse it instead.

Made from the plugins' table specs over the default experiment and every profile's configuration by
`python -m reranker.workflow.catalog` (tests/test_claims.py checks that the stored file is what that
makes); read here, since stages never import the plugins. One JSON object:

    {"configurations": ["workflow/config/config.yaml", "workflow/config/quick.yaml", ...],
     "tables": {"birch_main": {"groups": [...], "rows": [...], "columns": [...]}, ...},
     "figures": {"figures/ntnu_candidates.json": {"labels": [...]}}}

`columns` are a table's columns beyond its measures (a loss, a speed, parameters); measures are any of the
measure registry's (reranker.measures, ir_measures).
"""

from __future__ import annotations

import difflib
import fnmatch
import json
import os
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from reranker.formats.errors import FormatError

CATALOG = "table_catalog.json"  # its name, beside the seed file and the source numbers
DEFAULT_CATALOG = Path(__file__).resolve().parents[2] / "workflow" / "config" / CATALOG
FIELDS = ("groups", "rows", "columns")
REMAKE = "python -m reranker.workflow.catalog"


@dataclass(frozen=True)
class Catalog:
    path: Path
    tables: dict[str, dict[str, tuple[str, ...]]]  # table -> groups, rows, columns
    figures: dict[str, tuple[str, ...]]  # a figure's JSON, relative to the run folder -> its labels
    # table -> row -> its passage aggregation(s), for the rows scored from passages
    aggregations: dict[str, dict[str, tuple[str, ...]]] = field(default_factory=dict)

    def where(self) -> str:
        return f"in any configuration ({self.path})"


def matches(pattern: str, names: Iterable[str]) -> bool:
    """Whether the glob `pattern` (`{row}` in it stands for any row) matches one of `names`."""
    return any(fnmatch.fnmatchcase(name, pattern.replace("{row}", "*")) for name in names)


def near(name: str, names: Iterable[str]) -> str:
    """"; near: 'a', 'b'" for the names most like `name`, else the names known (the first few)."""
    names = list(names)
    close = difflib.get_close_matches(name, names, n=5, cutoff=0.5)
    if close:
        return "; near: " + ", ".join(map(repr, close))
    return "; known: " + ", ".join(map(repr, names[:8])) + (f" and {len(names) - 8} more" if len(names) > 8 else "")


def read_catalog(path: str | os.PathLike = DEFAULT_CATALOG) -> Catalog:
    path = Path(path)
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise FormatError(path, err.lineno, f"not JSON ({err.msg}); make it again: {REMAKE}") from None
    if not isinstance(document, dict) or not all(isinstance(document.get(key), dict) for key in ("tables", "figures")):
        raise FormatError(path, None, f"expected an object with `tables` and `figures`; make it again: {REMAKE}")
    tables, aggregations = {}, {}
    for name, entry in document["tables"].items():
        if not isinstance(entry, dict) or not all(_texts(entry.get(field)) for field in FIELDS):
            raise FormatError(path, None, f"tables.{name}: expected lists of strings {', '.join(FIELDS)}")
        tables[name] = {field: tuple(entry[field]) for field in FIELDS}
        rows = entry.get("aggregations", {})
        if not isinstance(rows, dict) or not all(_texts(a) for a in rows.values()):
            raise FormatError(path, None, f"tables.{name}.aggregations: expected an object of row -> list of strings")
        aggregations[name] = {row: tuple(a) for row, a in rows.items()}
    figures = {}
    for name, entry in document["figures"].items():
        if not isinstance(entry, dict) or not _texts(entry.get("labels")):
            raise FormatError(path, None, f"figures.{name}: expected a list of strings labels")
        figures[name] = tuple(entry["labels"])
    return Catalog(path, tables, figures, aggregations)


def _texts(value: object) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def catalog_beside(path: str | os.PathLike) -> Catalog | None:
    """The catalog beside `path` (a seed file, a source numbers file), or None where there is none (a test's own
    files): names are then checked against nothing but the run."""
    beside = Path(path).parent / CATALOG
    return read_catalog(beside) if beside.exists() else None
