"""`python tools/rerender.py [REFERENCE ...]`: every stored table rendered anew from its numbers document.

A table's files (Markdown, LaTeX, HTML, CSV) are renderings of its numbers document, which holds every cell, its
per-query values and the layout. When the way tables render changes (a note computed from the per-query values,
a mark), the stored renderings are made again here so that they are what `tables rerender` gives today
(tests/test_tables_stored.py checks results/quick byte for byte). The numbers are not touched: a number changes
only by a run. Default: results/ and results/quick/.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from reranker.report.rerender import rerender  # noqa: E402

SOURCES = REPO / "workflow" / "config" / "source_numbers.yaml"
OWN_WRITERS = {"resources", "dataset_stats"}  # their writers keep their own number formats: not renderings of a layout


def tables(reference: Path) -> list[tuple[Path, list[str]]]:
    """The numbers documents with a layout, each with the formats its table is stored in."""
    found = []
    for numbers in sorted((reference / "numbers").glob("*.json")):
        if numbers.stem in OWN_WRITERS or "layout" not in json.loads(numbers.read_text(encoding="utf-8")):
            continue
        formats = [f for f in ("md", "csv", "tex", "html") if (reference / "tables" / f"{numbers.stem}.{f}").exists()]
        if formats:
            found.append((numbers, formats))
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("references", nargs="*", type=Path, default=[REPO / "results", REPO / "results" / "quick"])
    args = parser.parse_args(argv)
    for reference in args.references:
        for numbers, formats in tables(reference):
            before = {f: (reference / "tables" / f"{numbers.stem}.{f}").read_bytes() for f in formats}
            rerender(numbers, reference / "tables" / numbers.stem, formats, sources=str(SOURCES))
            moved = [f for f in formats if (reference / "tables" / f"{numbers.stem}.{f}").read_bytes() != before[f]]
            if moved:
                print(f"{reference.name}/tables/{numbers.stem}: {', '.join(moved)} rendered anew")
    return 0


if __name__ == "__main__":
    sys.exit(main())
