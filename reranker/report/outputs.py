"""Where a table goes and what it says besides its cells (`Outputs`): its files in each format, its numbers
document with their provenance, the lines under it and the source's numbers beside it. Every command that
makes a table takes these (the tables stage's --out, --formats, --numbers, --command, --note, --sources and
--source-table; reranker.workflow.finish for the resources table)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from reranker.core.provenance import provenance
from reranker.formats.atomic import write_text
from reranker.formats.source_numbers import read_source_numbers
from reranker.report.source_cells import check_source_columns
from reranker.report.table import Table, write_numbers


@dataclass(frozen=True)
class Outputs:
    """`out`: the path without suffix, written in each of `formats`; `numbers`: also a numbers document with their
    provenance, naming `command`; `notes`: lines under the table; `sources`: the sources' numbers file, whose table
    `source_table` (default: `out`'s name) is shown beside ours."""

    out: str
    formats: tuple[str, ...] = ("md", "csv")
    numbers: str | None = None
    command: str = ""
    notes: tuple[str, ...] = ()
    sources: str | None = None
    source_table: str | None = None


def add_notes_and_source(table: Table, outputs: Outputs, notes: Sequence[Mapping], inputs: list[str]) -> None:
    """The output's notes, then the spec's `note` records, under the table; with `sources`, the source's numbers
    beside ours, and the file among the inputs."""
    table.notes += [*outputs.notes, *(record["text"] for record in notes)]
    if outputs.sources:
        table.source = read_source_numbers(outputs.sources).get(outputs.source_table or Path(outputs.out).name)
        inputs.append(outputs.sources)
        check_source_columns(table, outputs.sources)


def write_outputs(table: Table, outputs: Outputs, inputs: Sequence[str] = (), extra: Callable[[], Mapping] = dict,
                  machine_dependent: Sequence[str] = (), markdown: Callable[[Table], str] | None = None) -> list[Path]:
    """The table under `out` in each of `formats` (`markdown`: a Markdown layout of its own, written last), then
    with `numbers` its numbers and their provenance: `command`, the inputs' checksums and `extra()`, read only then."""
    written = table.write(outputs.out, [f for f in outputs.formats if not (markdown and f == "md")])
    if markdown and "md" in outputs.formats:
        md = Path(outputs.out).with_suffix(".md")
        write_text(md, markdown(table))
        written.append(md)
    if outputs.numbers:
        write_numbers(table, outputs.numbers, provenance(outputs.command, sorted(set(inputs)), extra()), machine_dependent)
        written.append(Path(outputs.numbers))
    return written
