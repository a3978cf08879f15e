"""A run's numbers documents (`numbers/<table>.json`, written by reranker.report.table.write_numbers, and a sweep
figure's JSON) as a claim reads them: a cell's value, its per-query values, groups and rows in the table's order."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reranker.formats.errors import FormatError
from reranker.formats.learning import grouped_label


def read_numbers(run_dir: Path, name: str) -> dict | None:
    path = run_dir / ("numbers" if not name.endswith(".json") else "") / (name if name.endswith(".json") else f"{name}.json")
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise FormatError(path, None, f"not JSON ({err})") from None


def number(value: Any) -> float | None:
    if isinstance(value, dict):  # a summary row: its mean
        value = value.get("mean")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(float(value)) else None


@dataclass
class Side:
    """One row's values in one group of a document: its aggregate and, where stored, its per-query values."""

    row: str
    group: str
    value: float
    per_query: Mapping[str, float] | None
    measure: str = ""

    def label(self, groups_differ: bool) -> str:
        return grouped_label(self.row, self.group) if groups_differ else self.row


def groups(document: Mapping) -> list[str]:
    """The document's groups in the table's order (its layout), else as stored."""
    numbers = document.get("numbers") or {}
    return [g for g in (document.get("layout") or {}).get("groups", []) if g in numbers] or list(numbers)


def rows(document: Mapping, group: str) -> list[str]:
    """The group's rows in the table's order (its layout), else as stored."""
    rows = ((document.get("numbers") or {}).get(group) or {})
    return [r for r in (document.get("layout") or {}).get("rows", []) if r in rows] + [
        r for r in rows if r not in (document.get("layout") or {}).get("rows", [])]


def side(document: Mapping, group: str, row: str, measure: str) -> Side | None:
    value = number(((document.get("numbers") or {}).get(group) or {}).get(row, {}).get(measure))
    if value is None:
        return None
    per_query = (((document.get("per_query") or {}).get(group) or {}).get(row) or {}).get(measure)
    return Side(row, group, value, per_query, measure)
