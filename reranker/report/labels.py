"""What the table and figure builders share: measure labels, their input error, how they read the inputs typed by
hand (provenance: reranker.core.provenance)."""

from __future__ import annotations

from collections.abc import Sequence

from reranker.formats.errors import InputError
from reranker.measures import MEASURES

MEASURE_LABELS = {"AP@1000": "AP", "P@20": "P@20", "nDCG@20": "nDCG@20", "RR@10": "MRR@10",
                  **{name: measure.label for name, measure in MEASURES.items()}}


class TableError(InputError):
    """A bad argument or input file; main prints it prefixed `tables:` and exits 2 before writing anything."""


def split_labelled(spec: str, option: str, form: str, parts: int) -> list[str]:
    """`A:PATH` or `A:B:PATH`, the path last (it may hold colons); TableError naming the option otherwise."""
    fields = spec.split(":", parts - 1)
    if len(fields) != parts or not all(fields):
        raise TableError(f"{option} {spec!r}: expected {form}")
    return fields


def spec_or_options(spec: str | None, given: Sequence[str], required: str, gives: str, command: str) -> None:
    """Inputs from `--spec FILE` (what rules give) or from the options typed by hand (`given`: those present),
    never both; without a spec, `required` must be among them. TableError otherwise: `gives` says what the spec
    gives (the cells, the points), `command` names the subcommand."""
    if spec and given:
        raise TableError(f"--spec {spec} gives the {gives}: leave out {', '.join(given)}")
    if not spec and required not in given:
        raise TableError(f"{command}: give --spec FILE or {required}")
