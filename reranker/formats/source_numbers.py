"""The sources' own numbers (workflow/config/source_numbers.yaml): transcribed once, read by the tables
(shown beside ours) and by the claims (effect ratios against the source's cells).

A file holds `sources` (work id -> {work, where}) and `tables` (our table id -> {source, table, at,
note, cells}); each cell is {row, source_row, column, value, where} with optional `group` (a
collection of the source's that is not ours), `at` (the source's setting, e.g. a grid point) and
`unit`. `row` is our row label, or null where we have no such row.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import yaml

from reranker.formats.errors import InputError

DEFAULT_PATH = Path(__file__).resolve().parents[2] / "workflow" / "config" / "source_numbers.yaml"
TABLE_KEYS = {"source", "table", "at", "note", "cells"}
CELL_KEYS = {"row", "source_row", "column", "value", "where", "group", "at", "unit"}
CELL_REQUIRED = {"row", "source_row", "column", "value", "where"}


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


@dataclass(frozen=True)
class SourceTable:
    table_id: str
    work: str  # the source work, in words
    table: str  # the source's own table name
    at: str | None
    note: str
    cells: tuple[SourceCell, ...]

    def beside(self, row: str, group: str, column: str, groups: tuple[str, ...] | list[str]) -> float | None:
        """The source's value for our cell, where the source has one at our setting."""
        for cell in self.cells:
            if (cell.row == row and cell.column == column and (cell.group is None or cell.group == group)
                    and (cell.group is not None or group in groups) and (cell.at is None or cell.at == self.at)):
                return cell.value
        return None


def _fail(path: Path, where: str, message: str) -> None:
    raise InputError(f"{path}: {where}: {message}")


def read_source_numbers(path: str | os.PathLike = DEFAULT_PATH) -> dict[str, SourceTable]:
    """Our table id -> the source's numbers for it, checked: every cell has its keys and a number."""
    path = Path(path)
    try:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise InputError(f"{path}: {err}") from None
    if not isinstance(document, Mapping) or not isinstance(document.get("sources"), Mapping) \
            or not isinstance(document.get("tables"), Mapping):
        raise InputError(f"{path}: expected mappings `sources` and `tables`")
    out = {}
    for table_id, entry in document["tables"].items():
        where = f"tables.{table_id}"
        if not isinstance(entry, Mapping) or set(entry) - TABLE_KEYS or not {"source", "table", "cells"} <= set(entry):
            _fail(path, where, f"needs source, table and cells (allowed: {', '.join(sorted(TABLE_KEYS))})")
        if entry["source"] not in document["sources"]:
            _fail(path, where, f"unknown source {entry['source']!r} (sources: {', '.join(document['sources'])})")
        cells = []
        for i, cell in enumerate(entry["cells"] or []):
            here = f"{where}.cells[{i}]"
            if not isinstance(cell, Mapping):
                _fail(path, here, "expected a mapping")
            if missing := CELL_REQUIRED - set(cell):
                _fail(path, here, f"missing {', '.join(sorted(missing))}")
            if unknown := set(cell) - CELL_KEYS:
                _fail(path, here, f"unknown keys {', '.join(sorted(unknown))}")
            value = cell["value"]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
                _fail(path, here, f"value {value!r} is not a number")
            cells.append(SourceCell(**{key: cell.get(key) for key in CELL_KEYS} | {"value": float(value)}))
        source = document["sources"][entry["source"]]
        out[str(table_id)] = SourceTable(str(table_id), str(source.get("work", entry["source"])), str(entry["table"]),
                                         entry.get("at"), str(entry.get("note") or ""), tuple(cells))
    return out
