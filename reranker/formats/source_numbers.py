"""The sources' own numbers (workflow/config/source_numbers.yaml): transcribed once, read by the tables
(shown beside ours) and by the claims (effect ratios against the source's cells).

A file holds `sources` (work id -> {work, where}) and `tables` (our table id -> {source, table, at,
ours, note, cells}); each cell is {row, source_row, column, value, where} with optional `group` (a
collection of the source's that is not ours), `at` (the source's setting, e.g. a grid point) and
`unit`. `row` is our row label, or null where we have no such row. A table's `at` is the setting of
the cells shown beside ours (and of every cell that names none); `ours` is our rows' setting in the
source's terms, where it is not `at` (the source never ran ours): a cell beside ours whose setting is
not ours is printed with its setting.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from reranker.formats import strict_yaml
from reranker.formats.catalog import DEFAULT_CATALOG, catalog_beside, near, read_catalog
from reranker.formats.errors import ConfigError, InputError, keys_checked

DEFAULT_SOURCE_NUMBERS = Path(__file__).resolve().parents[2] / "workflow" / "config" / "source_numbers.yaml"
SOURCE_KEYS = {"work", "where", "note"}
TABLE_KEYS = {"source", "table", "at", "ours", "note", "cells", "aggregation"}
CELL_KEYS = {"row", "source_row", "column", "at", "value", "where", "group", "unit", "aggregation"}
CELL_STRINGS = ("source_row", "column", "where", "at", "group", "unit", "aggregation")


class SourceNumbersError(InputError):
    """A source numbers file, or a reference into it, that cannot be used: the message names the file and entry."""


def check_keys(entry: Any, allowed: set[str], required: set[str], where: str) -> None:
    keys_checked(entry, allowed, required, where, SourceNumbersError)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def load_source_numbers(path: str | Path = DEFAULT_SOURCE_NUMBERS, catalog: str | Path | None = None) -> dict:
    """The source numbers file, checked: every source, table and cell has the keys it needs and no other, every
    value is a finite number, every table names a listed source, and no two cells share row, column, setting, group.
    Every table id, and every cell's row of ours, is one that some configuration makes (the catalog,
    reranker.formats.catalog: `catalog`, else the one beside the file, where there is one): a misspelt id would drop
    the source's column from its table without a word."""
    path = Path(path)
    known = read_catalog(catalog) if catalog is not None else catalog_beside(path)
    try:
        numbers = strict_yaml.load(path)  # a table given twice would keep only its second
    except (OSError, ConfigError) as err:
        raise SourceNumbersError(str(err) if isinstance(err, ConfigError) else f"{path}: {err}") from None
    check_keys(numbers, {"sources", "tables"}, {"sources", "tables"}, str(path))
    if not isinstance(numbers["sources"], dict) or not isinstance(numbers["tables"], dict):
        raise SourceNumbersError(f"{path}: `sources` and `tables` are mappings (by name)")
    for name, source in numbers["sources"].items():
        where = f"{path}: sources.{name}"
        check_keys(source, SOURCE_KEYS, {"work"}, where)
        for key in set(source) & SOURCE_KEYS:
            if not isinstance(source[key], str):
                raise SourceNumbersError(f"{where}.{key}: expected a string, found {source[key]!r}")
    ours = {row for entry in known.tables.values() for row in entry["rows"]} if known is not None else set()
    # With no catalog beside the file, the suite's own table ids, read once, tell a slip from one's own id.
    suite = read_catalog(DEFAULT_CATALOG).tables if known is None and DEFAULT_CATALOG.exists() else {}
    for name, table in numbers["tables"].items():
        where = f"{path}: tables.{name}"
        check_keys(table, TABLE_KEYS, {"source", "table", "cells"}, where)
        if known is not None and name not in known.tables:
            raise SourceNumbersError(f"{where}: {name!r} is a table no configuration makes ({known.path}){near(str(name), known.tables)}")
        if known is None:
            _not_a_misspelt_table(str(name), where, suite)
        if table["source"] not in numbers["sources"]:
            raise SourceNumbersError(f"{where}.source: {table['source']!r} is not one of the sources "
                                     f"({', '.join(map(str, numbers['sources'])) or 'none'})")
        for key in ("table", "at", "ours", "note", "aggregation"):
            if key in table and not isinstance(table[key], str):
                raise SourceNumbersError(f"{where}.{key}: expected a string, found {table[key]!r}")
        if not isinstance(table["cells"], list) or not table["cells"]:
            raise SourceNumbersError(f"{where}.cells: expected a non-empty list of cells")
        seen: dict[tuple, int] = {}
        for i, cell in enumerate(table["cells"]):
            here = f"{where}.cells[{i}]"
            check_keys(cell, CELL_KEYS, {"row", "source_row", "column", "value", "where"}, here)
            for key in CELL_STRINGS:
                if key in cell and not isinstance(cell[key], str):
                    raise SourceNumbersError(f"{here}.{key}: expected a string (quote it), found {cell[key]!r}")
            if cell["row"] is not None and not isinstance(cell["row"], str):
                raise SourceNumbersError(f"{here}.row: expected our row's name or null, found {cell['row']!r}")
            if known is not None and cell["row"] is not None and cell["row"] not in ours:  # a claim on another table may read it
                raise SourceNumbersError(f"{here}.row: {cell['row']!r} is a row of no table {known.where()}"
                                         f"{near(cell['row'], known.tables.get(name, {}).get('rows', ours))}")
            _like_with_like(known, name, table, cell, here)
            if not _is_number(cell["value"]):
                raise SourceNumbersError(f"{here}.value: expected a finite number, found {cell['value']!r}")
            key = (cell["source_row"], cell["column"], cell_setting(table, cell), cell.get("group"))
            if key in seen:
                raise SourceNumbersError(f"{here}: the same source_row, column, at and group as cells[{seen[key]}]")
            seen[key] = i
    return numbers


def _not_a_misspelt_table(name: str, where: str, suite: Mapping) -> None:
    """With no catalog beside the file (a file of one's own: a plugin's tables, a test's), any table id may be one's
    own; one that is not the suite's but all but spells one of them is taken for a slip, since its cells would be
    shown beside no table."""
    import difflib

    close = difflib.get_close_matches(name, suite, n=3, cutoff=0.85)
    if name not in suite and close:
        raise SourceNumbersError(f"{where}: {name!r} is no table of the suite's, near {', '.join(map(repr, close))}: fix the "
                                 "id, or, for a table of your own, put the catalog of your configuration beside the file "
                                 "(python -m reranker.workflow.catalog)")


def _like_with_like(known: Any, name: str, table: Mapping, cell: Mapping, here: str) -> None:
    """A cell mapped to a row of ours names a row scored as the source's was: where the source's row aggregates passage
    scores (the cell's or its table's `aggregation`), ours must aggregate the same way in every configuration (the
    catalog's), or an ER and ΔRI would compare MaxP with a mean."""
    theirs = cell.get("aggregation", table.get("aggregation"))
    if known is None or theirs is None or cell["row"] is None:
        return
    ours = known.aggregations.get(name, {}).get(cell["row"])
    if ours is not None and set(ours) != {theirs}:
        raise SourceNumbersError(f"{here}.row: {cell['source_row']!r} aggregates passages by {theirs}, our {cell['row']!r} by "
                                 f"{', '.join(ours)} in {name}: not like with like; map it to a row aggregated by {theirs}, "
                                 "or to none (row: null)")


def cell_setting(table: Mapping, cell: Mapping) -> str | None:
    """A cell's setting: its own `at`, else its table's."""
    return cell.get("at", table.get("at"))



@dataclass(frozen=True)
class SourceCell:
    row: str | None  # our row, or None
    source_row: str
    column: str
    value: float
    where: str
    group: str | None = None
    at: str | None = None
    unit: str | None = None
    aggregation: str | None = None  # the cell's own; its table's is SourceTable's


@dataclass(frozen=True)
class SourceTable:
    table_id: str
    work: str  # the source work, in words
    table: str  # the source's own table name
    at: str | None  # the setting of the cells beside ours
    note: str
    cells: tuple[SourceCell, ...]
    ours: str | None = None  # our rows' setting in the source's terms (the table's `ours`, else its `at`)

    @cached_property
    def _ours(self) -> dict[tuple[str, str | None, str], SourceCell]:
        """(our row, the source's group or None, column) -> the cell beside ours, at `at`; the first cell wins."""
        ours: dict[tuple[str, str | None, str], SourceCell] = {}
        for cell in self.cells:
            if cell.row is not None and (cell.at is None or cell.at == self.at):
                ours.setdefault((cell.row, cell.group, cell.column), cell)
        return ours

    def beside_cell(self, row: str, group: str, column: str, groups: tuple[str, ...] | list[str]) -> SourceCell | None:
        """The source's cell for our cell, where the source has one at `at`: a cell naming our group, else one
        naming no group (when `group` is one of ours)."""
        cell = self._ours.get((row, group, column))
        if cell is None and group in groups:
            cell = self._ours.get((row, None, column))
        return cell

    def beside(self, row: str, group: str, column: str, groups: tuple[str, ...] | list[str]) -> float | None:
        """The value of `beside_cell`, or None."""
        cell = self.beside_cell(row, group, column, groups)
        return None if cell is None else cell.value

    def other_setting(self, cell: SourceCell) -> str | None:
        """The cell's setting where it is not our rows' (`ours`), else None: what a cell beside ours must say."""
        return cell.at if cell.at is not None and self.ours is not None and cell.at != self.ours else None

    def foreign_groups(self, groups: tuple[str, ...] | list[str]) -> list[str]:
        """The source's groups (collections) that are none of ours but hold a cell beside one of our rows, in the
        order the cells give them: shown as columns of their own, never in place of ours."""
        return list(dict.fromkeys(g for _, g, _ in self._ours if g is not None and g not in groups))

    def foreign_columns(self, group: str) -> list[str]:
        """The columns of a foreign group's cells beside our rows, in the order the cells give them."""
        return list(dict.fromkeys(c for _, g, c in self._ours if g == group))


def read_source_numbers(path: str | os.PathLike = DEFAULT_SOURCE_NUMBERS) -> dict[str, SourceTable]:
    """Our table id -> the source's numbers for it (the file checked by `load_source_numbers`)."""
    document = load_source_numbers(path)
    out = {}
    for table_id, entry in document["tables"].items():
        cells = tuple(SourceCell(**{key: cell.get(key) for key in CELL_KEYS} | {"value": float(cell["value"]),
                                                                                "at": cell_setting(entry, cell)})
                      for cell in entry["cells"])
        source = document["sources"][entry["source"]]
        out[str(table_id)] = SourceTable(str(table_id), source["work"], entry["table"], entry.get("at"),
                                         entry.get("note") or "", cells, entry.get("ours", entry.get("at")))
    return out
