"""Unit scores TSV: `qid<TAB>doc_id<TAB>unit<TAB>score`, one line per scored (query, unit) pair."""

from __future__ import annotations

import math
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Sequence
from typing import Any

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError
from reranker.formats.ids import check_id
from reranker.formats.sidecar import Tally, check_sidecar, describe, read_sidecar, record_sidecar, write_sidecar
from reranker.formats.text import text_lines

UnitScores = dict[str, dict[str, list[float]]]  # qid -> doc_id -> unit scores in document order
UnitIds = dict[str, dict[str, list[int]]]  # qid -> doc_id -> the units' positions, in the same order

_TRAILING_INT = re.compile(r"(\d+)$")


def write_unit_scores(rows: Iterable[tuple[str, str, int | str, float]], path: str | os.PathLike,
                      record: bool = True) -> None:
    """(qid, doc_id, unit, score) rows; 9 significant digits round-trip float32 scores. `record`: the sidecar its
    readers check (`output` only; score's own adds how it was made); a shard has its checksum file instead."""
    seal = (lambda tmp: write_sidecar(path, {"output": describe(tmp)})) if record else None
    with atomic_write(path, before_rename=seal) as f:
        f.writelines(f"{qid}\t{doc_id}\t{unit}\t{score:.9g}\n" for qid, doc_id, unit, score in rows)


def join_unit_scores(parts: Sequence[str | os.PathLike], path: str | os.PathLike) -> dict[str, Any]:
    """Concatenate unit-score files (shards) into one, byte for byte; return its `{sha256, bytes, lines}`
    for the sidecar, hashed as it is copied (the file is not read again). Its sidecar holds that record before the
    file is in place (the caller adds how it was made), so that no reader finds the file without one."""
    tally = Tally()
    with atomic_write(path, binary=True, before_rename=lambda tmp: write_sidecar(path, {"output": tally.record()})) as f:
        for part in parts:
            with open(part, "rb") as source:
                for block in iter(lambda: source.read(1 << 20), b""):
                    tally.update(block)
                    f.write(block)
    return tally.record()


def read_unit_scores(path: str | os.PathLike) -> UnitScores:
    """Read unit scores; a header line starting `qid` is skipped.

    `unit` is the unit's position in its document, possibly with a prefix (`3`, `s3`, `d7_3`): its
    trailing integer orders the units, so FirstP takes the lowest. A file that does not match its
    `.meta.json` (cut short, changed since score wrote it) is refused (formats.sidecar).
    """
    return {qid: {doc_id: [units[p] for p in sorted(units)] for doc_id, units in docs.items()}
            for qid, docs in _positioned(path).items()}


def read_unit_scores_with_units(path: str | os.PathLike) -> tuple[UnitScores, UnitIds]:
    """`read_unit_scores`, and beside each score list the units' positions (the segments' `unit`), in the
    same order: what Birch's evidence names (one read of the file)."""
    positioned = _positioned(path)
    order = {qid: {doc_id: sorted(units) for doc_id, units in docs.items()} for qid, docs in positioned.items()}
    scores = {qid: {doc_id: [positioned[qid][doc_id][p] for p in units] for doc_id, units in docs.items()}
              for qid, docs in order.items()}
    return scores, order


RECORD = ("score writes one beside every scores file: score it again, or, for a file made elsewhere, record it as "
          "it is with `python -m reranker score record FILE`")


def record_unit_scores(path: str | os.PathLike) -> dict[str, Any]:
    """The sidecar of a scores file made elsewhere, written once the file reads as scores. A file whose sidecar exists
    is checked against it, never recorded anew: a changed file is not blessed by recording it again."""
    if read_sidecar(path) is not None:
        return check_sidecar(path)
    _positioned(path, checked=False)
    return record_sidecar(path, recorded="python -m reranker score record: made elsewhere, taken as it is")


def _positioned(path: str | os.PathLike, checked: bool = True) -> dict[str, dict[str, dict[int, float]]]:
    if checked:
        check_sidecar(path, required=RECORD)
    positioned: dict[str, dict[str, dict[int, float]]] = defaultdict(lambda: defaultdict(dict))
    for line_no, line in text_lines(path):
        if not line.strip():
            continue
        fields = line.split("\t")
        if line_no == 1 and fields[0].strip().lower() == "qid":
            continue
        if len(fields) != 4:
            raise FormatError(path, line_no, f"a unit score line is qid<TAB>doc_id<TAB>unit<TAB>score, found {len(fields)} fields")
        qid, doc_id, unit, score = (field.strip() for field in fields)
        check_id(qid, path, line_no)
        check_id(doc_id, path, line_no, "document id")
        position = _TRAILING_INT.search(unit)
        if position is None:
            raise FormatError(path, line_no, f"unit {unit!r} does not end in its position in the document")
        try:
            value = float(score)
        except ValueError:
            raise FormatError(path, line_no, f"score must be a number, found {score!r}") from None
        if not math.isfinite(value):
            raise FormatError(path, line_no, f"score must be finite, found {score!r}")
        units = positioned[qid][doc_id]
        if int(position.group(1)) in units:
            raise FormatError(path, line_no, f"unit {unit!r} of document {doc_id} appears twice for query {qid}")
        units[int(position.group(1))] = value
    return positioned
