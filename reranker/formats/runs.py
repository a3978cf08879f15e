"""TREC run files: `qid Q0 doc_id rank score tag`, ranked as trec_eval ranks them.

A line starting with `#` is a comment, as trec_eval (9.0.8 on) reads it: the ir_metadata header the stages
write at the top of a run (reranker.formats.ir_metadata) is one, and no reader here takes it for a run line.

A run the stages write records in that header what its run lines are (`body`: how many, their sha256), and
`read_run` checks it: a run cut short at a line's end, or edited, is refused, not evaluated as if whole. A run
with no header (another system's, the field's exchange format) is read as it is.
"""

from __future__ import annotations

import hashlib
import math
import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import NamedTuple

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError
from reranker.formats.ids import check_id, qid_key, qid_order
from reranker.formats.ir_metadata import END, header, read_metadata
from reranker.formats.text import fields_of_lines

Run = dict[str, dict[str, float]]  # qid -> doc_id -> score
BODY = "body"  # the header's record of the run lines: {lines, sha256}


class RunLine(NamedTuple):
    qid: str
    doc_id: str
    rank: int
    score: float
    tag: str


def numbered_run_lines(path: str | os.PathLike) -> Iterator[tuple[int, RunLine]]:
    """(line number, line) of a TREC run file (gzipped or not), `#` lines skipped; a score must be a finite number."""
    for line_no, fields in fields_of_lines(path):
        if fields[0][0] == "#":
            continue
        if len(fields) != 6:
            raise FormatError(path, line_no, f"a run line has 6 fields (qid Q0 docid rank score tag), found {len(fields)}")
        qid, _, doc_id, rank, score, tag = fields
        check_id(qid, path, line_no)
        check_id(doc_id, path, line_no, "document id")
        try:
            line = RunLine(qid, doc_id, int(rank), float(score), tag)
        except ValueError:
            raise FormatError(path, line_no, f"rank must be an integer and score a number, found {rank!r} and {score!r}") from None
        if not math.isfinite(line.score):  # trec_eval and ir_measures would rank it somewhere, quietly
            raise FormatError(path, line_no, f"score {score!r} is not a finite number: fix the stage that wrote it")
        yield line_no, line


def read_run_lines(path: str | os.PathLike) -> Iterator[RunLine]:
    """Yield the lines of a TREC run file (gzipped or not)."""
    for _, line in numbered_run_lines(path):
        yield line


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run into {qid: {doc_id: score}}. A repeated (qid, doc_id) pair and an empty file are errors."""
    run: Run = defaultdict(dict)
    first_line: dict[tuple[str, str], int] = {}
    for line_no, line in numbered_run_lines(path):
        if line.doc_id in run[line.qid]:
            raise FormatError(path, line_no, f"document {line.doc_id} appears twice for query {line.qid} "
                                             f"(first on line {first_line[line.qid, line.doc_id]}): keep one")
        first_line[line.qid, line.doc_id] = line_no
        run[line.qid][line.doc_id] = line.score
    if not run:
        raise FormatError(path, None, "no run lines: an empty run would evaluate as zeros")
    check_body(path, len(first_line))
    return dict(run)


def check_body(path: str | os.PathLike, lines: int) -> None:
    """Refuse a run whose header's `body` record (lines, sha256) is not what follows it."""
    recorded = (read_metadata(path) or {}).get(BODY)
    if not isinstance(recorded, dict):
        return
    fix = "it was cut short or edited after the stage wrote it: make it again"
    if recorded.get("lines") != lines:
        raise FormatError(path, None, f"{lines} run lines where its ir_metadata header records {recorded.get('lines')}: {fix}")
    if str(path).endswith(".gz"):
        return
    data = Path(path).read_bytes()  # the lines after the header, hashed in one call (read_run's hot path)
    body = data[data.index(b"\n", data.index(END.encode())) + 1:]
    if recorded.get("sha256") != hashlib.sha256(body).hexdigest():
        raise FormatError(path, None, f"its run lines do not match the sha256 its ir_metadata header records: {fix}")


def sorted_docs(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Order documents as trec_eval does: score descending, then doc_id descending."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def top_k_docs(run: Run, k: int) -> dict[str, list[str]]:
    """The top-k documents of each query, ranked as trec_eval ranks them."""
    return {qid: [doc for doc, _ in sorted_docs(run[qid])[:k]] for qid in qid_order(run)}


def write_run(run: Mapping[str, Mapping[str, float]], path: str | os.PathLike, tag: str, depth: int | None = None,
              metadata: Mapping | None = None) -> None:
    """Write a run in TREC format, ranked as trec_eval ranks it, atomically; `metadata` (PRIMAD, see
    reranker.core.run_metadata) as its ir_metadata header, with the run's tag.

    Scores keep 9 significant digits, enough to round-trip the float32 values trec_eval ranks by.
    """
    lines = []
    for qid in sorted(run, key=qid_key):
        ranked = sorted_docs(run[qid])
        if depth is not None:
            ranked = ranked[:depth]
        lines += [f"{qid} Q0 {doc_id} {rank} {score:.9g} {tag}\n" for rank, (doc_id, score) in enumerate(ranked, start=1)]
    body = "".join(lines)
    with atomic_write(path) as f:
        if metadata is not None:  # what read_run checks: the lines below, whole and as written
            f.write(header({"tag": tag, **metadata, BODY: {"lines": len(lines),
                                                            "sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}}))
        f.write(body)
