"""A stored table rendered anew from its numbers document (`tables rerender`): with the source's numbers beside
it, with measure columns the stored run did not compute, or with cells no longer valid printed "pending"."""

from __future__ import annotations

import fnmatch
import json
import os
from collections.abc import Sequence
from pathlib import Path

from reranker.formats.atomic import write_json
from reranker.formats.source_numbers import read_source_numbers
from reranker.report.labels import TableError
from reranker.report.table import Table


def mark_pending(table: Table, measures: Sequence[str] | None, pending: Sequence[str], why: str) -> None:
    """`measures`: the measure columns in this order (one not stored has every cell but the summaries' pending);
    `pending`: GROUP:ROW_GLOB:MEASURE fnmatch globs of cells printed pending, `why` they are."""
    if measures:
        unknown = [m for m in measures if m not in table.measures]
        dropped = [m for m in table.measures if m not in measures]
        if dropped:
            raise TableError(f"--measures leaves out stored measures: {', '.join(dropped)}")
        table.measures = list(measures)
        summaries = {row for row, _, _ in table.summaries}
        table.pending |= {(r, g, m) for m in unknown for r in table.rows for g in table.groups if r not in summaries}
    for spec in pending:
        group, row, measure = spec.rsplit(":", 2) if spec.count(":") >= 2 else (None, None, None)
        if group is None:
            raise TableError(f"--pending {spec!r}: expected GROUP:ROW_GLOB:MEASURE")
        table.pending |= {(r, g, m) for r in table.rows for g in table.groups for m in table.measures + table.extra_columns
                          if fnmatch.fnmatchcase(g, group) and fnmatch.fnmatchcase(r, row) and fnmatch.fnmatchcase(m, measure)}
    if why:
        table.pending_why = why


def rerender(numbers: str | os.PathLike, out: str | os.PathLike, formats: Sequence[str], sources: str | None = None,
             source_table: str | None = None, measures: Sequence[str] | None = None, pending: Sequence[str] = (),
             why: str = "") -> list[Path]:
    """The table of `numbers` written anew under `out`, and its layout stored back in `numbers`; the paths written."""
    path = Path(numbers)
    document = json.loads(path.read_text(encoding="utf-8"))
    table = Table.from_document(document)
    mark_pending(table, measures, pending, why)
    if sources:
        table.source = read_source_numbers(sources).get(source_table or path.stem)
    written = table.write(out, formats)
    document["layout"] = table.layout_record()
    write_json(path, document, indent=1, sort_keys=True, ensure_ascii=False)
    return written + [path]
