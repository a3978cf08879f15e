"""The queries behind a table's cells: which a column's rows average over, the cells over other queries (marked with
their count, never bold), and the note saying how many. Read from the per-query values a table holds, so a stored
table rendered anew from its numbers says the same."""

from __future__ import annotations

from collections import Counter
from typing import Any

Table = Any  # reranker.report.table.Table, which imports this module: its cells, per-query values, pending cells


def compares_rows(table: Table) -> bool:
    """Whether the rows compete (bold best, or tested against a reference): then a column's rows must average
    over the same queries. Rows that are not compared (the baselines' collections) may each have their own."""
    return table.bold_best or bool(table.references)


def column_queries(table: Table, group: str, measure: str) -> frozenset[str] | None:
    """The queries a column's rows average over: those most of its rows have (ties: the most queries); None
    without per-query values."""
    sets = [frozenset(values) for (r, g, m), values in table.per_query.items() if (g, m) == (group, measure)
            and (r, g, m) not in table.pending]
    if not sets:
        return None
    counted = Counter(sets)
    return max(counted, key=lambda s: (counted[s], len(s), sorted(s)))


def other_queries(table: Table) -> set[tuple[str, str, str]]:
    """Cells of a table that compares rows whose mean is over other queries than their column's: marked with
    their count, never bold."""
    if not compares_rows(table):
        return set()
    key = (tuple(table.groups), tuple(table.measures), frozenset(table.pending),
           tuple((cell, len(values)) for cell, values in table.per_query.items()))
    if table.other_cache is not None and table.other_cache[0] == key:  # every cell's text asks: computed once a render
        return table.other_cache[1]
    found = set()
    for g in table.groups:
        for m in table.measures:
            common = column_queries(table, g, m)
            found |= {(r, g, m) for (r, gg, mm), values in table.per_query.items()
                      if (gg, mm) == (g, m) and common is not None and frozenset(values) != common
                      and (r, g, m) not in table.pending}
    table.other_cache = (key, found)
    return found


def query_note(table: Table) -> list[str]:
    """How many queries each cell averages over (from the per-query values; none without them), and what a
    cell over other queries means."""
    def joined(counts: set[int]) -> str:
        return "/".join(str(n) for n in sorted(counts))

    cells: dict[str, dict[str, set[int]]] = {}  # row -> group -> its measures' query counts
    for (r, g, m), values in table.per_query.items():
        if (r, g, m) not in table.pending and m in table.measures:
            cells.setdefault(r, {}).setdefault(g, set()).add(len(values))
    if not cells:
        return []
    if compares_rows(table):  # a column's rows over its queries; other cells are marked
        columns = {g: {len(q) for m in table.measures if (q := column_queries(table, g, m)) is not None} for g in table.groups}
        named = {g: joined(n) for g, n in columns.items() if n}
    else:  # rows that are not compared (the baselines' collections), each over its own queries
        named = {r: " · ".join(f"{g} {joined(by[g])}" for g in table.groups if g in by) if len({joined(n) for n in by.values()}) > 1
                 else joined(next(iter(by.values()))) for r in table.rows if (by := cells.get(r))}
    if len(set(named.values())) == 1:
        text = f"Queries: every cell averages over {next(iter(named.values()))} queries"
    else:
        text = "Queries per cell: " + ", ".join(f"{name} {n}" for name, n in named.items())
    if other_queries(table):
        text += ("; a cell marked (n=K) averages over K queries other than its column's: it is never bold, and "
                 "its mean is not comparable with the column's (a † test pairs the queries both have)")
    return [text + "."]
