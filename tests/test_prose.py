"""No number typed by hand can drift: every table-precision number in the README and the hand-written
result notes must be one the stored results hold (or one the sources print, transcribed once).

Scanned: README.md and the hand-written results/*.md. The run READMEs (results/README.md,
results/quick/README.md) are generated from the stored numbers by `tables index`; the last test makes
them again and requires them unchanged. A number counts when it is written like the tables print
them (0.dddd, and 0.ddd for losses and MRRs the notes round) or as "N queries/min"; it is found when
some stored value (any number in results/**/*.json, or a cell of workflow/config/source_numbers.yaml)
rounds to it at its printed precision. Numbers measured outside a stored run belong in a stored file
first.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GENERATED = [ROOT / "results", ROOT / "results" / "quick"]  # run folders whose README.md `tables index` writes
DOCUMENTS = [ROOT / "README.md", *sorted(p for p in (ROOT / "results").glob("*.md") if p.name != "README.md")]
DECIMAL = re.compile(r"(?<![\w.])(0\.\d{3,4})(?![\d])")
SPEED = re.compile(r"(?<![\w.,])(\d[\d,]*)(?=\)? queries/min)")


def _leaves(value) -> Iterator[float]:
    if isinstance(value, dict):
        for item in value.values():
            yield from _leaves(item)
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


def stored_values() -> set[float]:
    values: set[float] = set()
    for path in (ROOT / "results").rglob("*.json"):
        values.update(_leaves(json.loads(path.read_text(encoding="utf-8"))))
    sources = yaml.safe_load((ROOT / "workflow" / "config" / "source_numbers.yaml").read_text(encoding="utf-8"))
    values.update(float(cell["value"]) for table in sources["tables"].values() for cell in table["cells"])
    return values


def unmatched(text: str, values: set[float]) -> list[tuple[str, int]]:
    """(number, line) of every table-precision number in `text` that no stored value rounds to."""
    rounded = {places: {round(v, places) for v in values} for places in (0, 3, 4)}
    missing = []
    for match in DECIMAL.finditer(text):
        places = len(match.group(1).split(".")[1])
        if round(float(match.group(1)), places) not in rounded[places]:
            missing.append((match.group(1), text.count("\n", 0, match.start()) + 1))
    for match in SPEED.finditer(text):
        if float(match.group(1).replace(",", "")) not in rounded[0]:
            missing.append((match.group(1) + " queries/min", text.count("\n", 0, match.start()) + 1))
    return missing


@pytest.fixture(scope="module")
def values() -> set[float]:
    return stored_values()


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_number_in_the_prose_is_a_stored_one(document, values):
    missing = unmatched(document.read_text(encoding="utf-8"), values)
    assert not missing, f"{document.relative_to(ROOT)}: numbers no stored result holds: " + ", ".join(
        f"{number} (line {line})" for number, line in missing)


def test_the_check_fails_on_a_drifted_number(values):
    """The README once said the titles checkpoint's 1S row scored 0.3252 on Cranfield where the table held 0.3217.
    That number is now held by another stored value, so the drifted number is one that none rounds to."""
    stored = {round(v, 4) for v in values}
    drifted = next(f"0.{n:04d}" for n in range(3252, 10000) if round(n / 10000, 4) not in stored)
    assert unmatched(f"Cranfield {drifted}, in 98,765 queries/min", values) == [(drifted, 1), ("98,765 queries/min", 1)]
    assert unmatched("BM25+RM3 AP 0.3131", values) == []


@pytest.mark.parametrize("run_dir", GENERATED, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_run_readmes_are_what_the_index_makes_of_the_stored_numbers(run_dir, tmp_path):
    from reranker.claims import index, load_seeds

    stored = (run_dir / "README.md").read_text(encoding="utf-8")
    command = re.search(r"Made by `([^`]+)`", stored).group(1)
    made = index(load_seeds(ROOT / "workflow" / "config" / "seed_tables.yaml"), run_dir, command)
    assert made == stored, f"{run_dir.relative_to(ROOT)}/README.md is not what `tables index` makes of its numbers: rerun it"
