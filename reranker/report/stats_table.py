"""The dataset statistics table (`tables stats`): one row per collection from `collections export` stats.json
files; counts as integers, means with two decimals, in a Markdown layout of its own (`write_stats`)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from reranker.formats.table_spec import STATS_TABLE, Spec
from reranker.report.outputs import Outputs, add_notes_and_source, write_outputs
from reranker.report.table import Table


def stats_table(stats: Mapping[str, Mapping[str, float]], caption: str) -> Table:
    """Dataset statistics: one row per collection."""
    group, columns = STATS_TABLE[0], list(STATS_TABLE[1])
    table = Table(caption, [group], columns, bold_best=False,
                  number_format=lambda column, value: f"{value:.2f}" if column.startswith("mean") else f"{int(value)}")
    for collection, values in stats.items():
        for column in columns:
            if values.get(column) is not None:
                table.add(collection, group, column, float(values[column]))
    return table


def stats_markdown(table: Table) -> str:
    """Counts as integers, means with two decimals."""
    header = ["Collection", "Docs", "Queries", "Judged queries", "Qrels", "Rel./query", "Doc length (words)"]
    lines = [f"**{table.caption}**", "", "| " + " | ".join(header) + " |", "|---|" + "---:|" * (len(header) - 1)]
    for row in table.rows:
        cells = []
        for column in table.measures:
            value = table.cells.get((row, "statistics", column))
            cells.append("–" if value is None else (f"{value:.2f}" if column.startswith("mean") else f"{int(value)}"))
        lines.append("| " + " | ".join([row] + cells) + " |")
    return "\n".join(lines + [""] + [f"{note}  " for note in table.notes]).rstrip() + "\n"


def write_stats(cells: Spec, outputs: Outputs, caption: str = "") -> list[Path]:
    """`tables stats`: the table of the spec's `stats` records (collection, stats.json) and `note`s; the paths written."""
    collected, inputs = {}, []
    for record in cells["stats"]:
        collected[record["group"]] = json.loads(Path(record["path"]).read_text())
        inputs.append(record["path"])
    table = stats_table(collected, caption)
    add_notes_and_source(table, outputs, cells.get("note", []), inputs)
    return write_outputs(table, outputs, inputs, markdown=stats_markdown)
