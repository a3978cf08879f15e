"""Source cells checked against the table they are shown in, where no catalog says what exists: a cell beside one of
our rows must name a column that can be ours."""

from __future__ import annotations

from typing import Any

from reranker.formats.catalog import near
from reranker.measures import MEASURES, is_measure
from reranker.report.labels import TableError


def check_source_columns(table: Any, sources: str) -> None:
    """`table`: a reranker.report.table.Table, its rows filled. A source cell beside one of our rows whose column is
    written as a measure (`name@cutoff`) must name one: a misspelt measure would leave the cell beside no number of
    ours, without a word. Other columns (a loss, a speed, the source's own words) are the source's and need not be
    ours."""
    for cell in table.source.cells if table.source else ():
        if cell.row in table.rows and "@" in cell.column and not is_measure(cell.column):
            known = list(dict.fromkeys([*MEASURES, *(m for m in table.measures if is_measure(m))]))
            raise TableError(f"{sources}: tables.{table.source.table_id}: the cell of {cell.source_row!r} beside our row "
                             f"{cell.row!r} names column {cell.column!r}, which is no measure{near(cell.column, known)}: "
                             "fix its `column`")
