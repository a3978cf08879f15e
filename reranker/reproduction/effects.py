"""The sources' own numbers, and how far our effects reproduce theirs.

`workflow/config/source_numbers.yaml` holds the cells the source works print, each with where it is
stated:

    sources:
      radboud: {work: "Verbrugge 2021, MSc thesis", where: "..."}
    tables:
      radboud_2_1:                      # our table's name
        source: radboud                 # a key of `sources`
        table: "Table 2.1"              # the source's table
        at: "lr 3e-5, 1 epoch"          # optional: the setting of every cell that names none, and of those beside ours
        ours: "lr 1e-4, 1 epoch"        # optional: our rows' setting where the source never ran it (§ cells then name theirs)
        note: "..."                     # optional
        cells:
          - {row: "BERT baseline", source_row: "BM25@100", column: RadboudNDCG@20, value: 0.5445,
             where: "002_....txt, Table 2.1, line 279", at: "lr 2e-5, 1 epoch"}
            # row: our row (or null); optional: group, at, unit

A compare claim's `source: {rows, than, column, at, group}` names cells of its table there (`at`
defaults to the table's); the
reproduction measures of Breuer et al., "How to Measure the Reproducibility of System-oriented IR
Experiments" (SIGIR 2020), compare the source's effect (baseline `than`, advanced `rows`) with ours:

- effect ratio ER = mean per-topic improvement reproduced / mean per-topic improvement original;
- delta relative improvement ΔRI = RI_orig - RI_rep, with RI = (advanced - baseline) / baseline.

Both come from `repro_eval.measure.overall_effects` (ER, DRI; package repro-eval). The sources print
means only; the mean of per-topic differences is the difference of the means (over the same topics),
so each side enters as one topic holding its mean, and the values are those of the per-topic inputs
(tests/test_reproduction.py checks this against the package).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from reranker.formats.source_numbers import DEFAULT_SOURCE_NUMBERS, SourceNumbersError, cell_setting, check_keys, load_source_numbers  # noqa: F401

REF_KEYS = {"rows", "than", "column", "at", "group"}  # a compare claim's `source`
_MEASURE = "m"  # the one measure key handed to repro-eval


def _table(numbers: Mapping, table: str) -> Mapping:
    if table not in numbers["tables"]:
        raise SourceNumbersError(f"no table {table!r} (tables: {', '.join(numbers['tables']) or 'none'})")
    return numbers["tables"][table]


def source_cell(numbers: Mapping, table: str, source_row: str, column: str, at: str | None = None,
                group: str | None = None) -> float:
    """The value of the one cell of `table` with this source row and column, at setting `at` (by default the table's
    `at`, the setting beside ours, where it names one) and in group `group` (where given). No such cell, or several
    (name `at` or `group`): a SourceNumbersError that lists what is there."""
    entry = _table(numbers, table)
    at = entry.get("at") if at is None else at
    cells = [c for c in entry["cells"] if c["source_row"] == source_row and c["column"] == column]
    matches = [c for c in cells if (at is None or cell_setting(entry, c) == at) and (group is None or c.get("group") == group)]
    wanted = f"source_row {source_row!r}, column {column!r}" + (f", at {at!r}" if at is not None else "") + (
        f", group {group!r}" if group is not None else "")
    if not matches:
        near = sorted({f"{c['source_row']!r} at {cell_setting(entry, c)!r}" + (f" ({c['group']})" if c.get("group") else "")
                       for c in entry["cells"] if c["column"] == column})
        raise SourceNumbersError(f"tables.{table}: no cell with {wanted} (in column {column!r}: {'; '.join(near) or 'none'})")
    if len(matches) > 1:
        settings = "; ".join(f"at {cell_setting(entry, c)!r}" + (f", group {c['group']!r}" if c.get("group") else "") for c in matches)
        raise SourceNumbersError(f"tables.{table}: {len(matches)} cells with {wanted} ({settings}): name `at` or `group`")
    return float(matches[0]["value"])


def cells_beside(numbers: Mapping, table: str) -> list[dict]:
    """The cells of `table` that name our row (to show beside ours), each with its setting resolved (`at`) and its
    source table's name (`source_table`)."""
    entry = _table(numbers, table)
    return [{**cell, "at": cell_setting(entry, cell), "source_table": entry["table"]} for cell in entry["cells"] if cell["row"] is not None]


def check_ref(ref: Any, numbers: Mapping, tables: Sequence[str]) -> None:
    """A compare claim's `source`, checked: its keys, and every cell it names found once (`rows` in the first of
    `tables`, the claim's; `than` in the first of them that has it, then its `than_table`'s). Errors name the cell."""
    check_keys(ref, REF_KEYS, {"rows", "than", "column"}, "source")
    rows = [ref["rows"]] if isinstance(ref["rows"], str) else ref["rows"]
    if not isinstance(rows, list) or not rows or not all(isinstance(r, str) for r in rows):
        raise SourceNumbersError(f"source.rows: expected a source row or a list of them, found {ref['rows']!r}")
    for key in ("than", "column", "at", "group"):
        if key in ref and not isinstance(ref[key], str):
            raise SourceNumbersError(f"source.{key}: expected a string, found {ref[key]!r}")
    source_pair(ref, numbers, tables)


def _lookup(ref: Mapping, numbers: Mapping, tables: Sequence[str], source_row: str) -> float:
    named = [t for t in tables if t in numbers["tables"]]
    if not named:
        raise SourceNumbersError(f"no table {' or '.join(map(repr, tables))} (tables: {', '.join(numbers['tables']) or 'none'})")
    first_error = None
    for table in named:
        try:
            return source_cell(numbers, table, source_row, ref["column"], ref.get("at"), ref.get("group"))
        except SourceNumbersError as err:
            first_error = first_error or err
    raise first_error


def source_pair(ref: Mapping, numbers: Mapping, tables: Sequence[str]) -> tuple[float, float]:
    """The source's (baseline, advanced) values for a claim's `source`: `than`'s cell (in the first of `tables` that
    has it: the claim's table, then its `than_table`'s), and the best (largest) of `rows`' cells in the claim's
    table, as the claim takes the best of our rows."""
    rows = [ref["rows"]] if isinstance(ref["rows"], str) else ref["rows"]
    return _lookup(ref, numbers, tables, ref["than"]), max(_lookup(ref, numbers, tables[:1], row) for row in rows)


def _one_topic(value: float) -> dict[str, dict[str, float]]:
    return {"mean": {_MEASURE: float(value)}}


def effect_ratio(orig_base: float, orig_adv: float, rep_base: float, rep_adv: float) -> float | None:
    """ER (repro_eval's ER) from the means: None where the source shows no difference (the ratio is undefined)."""
    from repro_eval.measure.overall_effects import ER

    if orig_adv == orig_base:
        return None
    return ER(_one_topic(orig_adv), _one_topic(orig_base), _one_topic(rep_adv), _one_topic(rep_base))[_MEASURE]


def delta_ri(orig_base: float, orig_adv: float, rep_base: float, rep_adv: float) -> float | None:
    """ΔRI (repro_eval's DRI) from the means: None where either baseline is 0 (no relative improvement)."""
    from repro_eval.measure.overall_effects import DRI

    if orig_base == 0 or rep_base == 0:
        return None
    return DRI(_one_topic(orig_adv), _one_topic(orig_base), _one_topic(rep_adv), _one_topic(rep_base))[_MEASURE]


@dataclass(frozen=True)
class Reproduction:
    """One group's reproduction of a source effect: ours (baseline, advanced) against the source's."""

    orig_base: float
    orig_adv: float
    rep_base: float
    rep_adv: float

    @property
    def er(self) -> float | None:
        return effect_ratio(self.orig_base, self.orig_adv, self.rep_base, self.rep_adv)

    @property
    def dri(self) -> float | None:
        return delta_ri(self.orig_base, self.orig_adv, self.rep_base, self.rep_adv)

    def text(self) -> str:
        er, dri = self.er, self.dri
        return ("ER " + ("undefined" if er is None else f"{er:.2f}") + ", ΔRI " + ("undefined" if dri is None else f"{dri:.3f}"))


def describe(source: tuple[float, float], ours: Mapping[str, tuple[float, float]], fmt=lambda v: f"{v:.4f}") -> str:
    """ER and ΔRI per group (named when there are several), then the source's baseline -> advanced:
    "ER 0.42, ΔRI 0.031 (source: 0.5439 -> 0.5486)"."""
    parts = [Reproduction(*source, *pair).text() + (f" on {group}" if len(ours) > 1 else "") for group, pair in ours.items()]
    return "; ".join(parts) + f" (source: {fmt(source[0])} -> {fmt(source[1])})"
