"""TREC run files: `qid Q0 doc_id rank score tag`, ranked as trec_eval ranks them."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import NamedTuple

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError
from reranker.formats.ids import qid_key, qid_order
from reranker.formats.text import fields_of_lines

Run = dict[str, dict[str, float]]  # qid -> doc_id -> score


class RunLine(NamedTuple):
    qid: str
    doc_id: str
    rank: int
    score: float
    tag: str


def read_run_lines(path: str | os.PathLike) -> Iterator[RunLine]:
    """Yield the lines of a TREC run file (gzipped or not)."""
    for line_no, fields in fields_of_lines(path):
        if len(fields) != 6:
            raise FormatError(path, line_no, f"a run line has 6 fields (qid Q0 docid rank score tag), found {len(fields)}")
        qid, _, doc_id, rank, score, tag = fields
        try:
            yield RunLine(qid, doc_id, int(rank), float(score), tag)
        except ValueError:
            raise FormatError(path, line_no, f"rank must be an integer and score a number, found {rank!r} and {score!r}") from None


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run into {qid: {doc_id: score}}. A repeated (qid, doc_id) pair is an error."""
    run: Run = defaultdict(dict)
    for line in read_run_lines(path):
        if line.doc_id in run[line.qid]:
            raise FormatError(path, None, f"document {line.doc_id} appears twice for query {line.qid}")
        run[line.qid][line.doc_id] = line.score
    return dict(run)


def sorted_docs(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Order documents as trec_eval does: score descending, then doc_id descending."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def top_k_docs(run: Run, k: int) -> dict[str, list[str]]:
    """The top-k documents of each query, ranked as trec_eval ranks them."""
    return {qid: [doc for doc, _ in sorted_docs(run[qid])[:k]] for qid in qid_order(run)}


def write_run(run: Mapping[str, Mapping[str, float]], path: str | os.PathLike, tag: str, depth: int | None = None) -> None:
    """Write a run in TREC format, ranked as trec_eval ranks it, atomically.

    Scores keep 9 significant digits, enough to round-trip the float32 values trec_eval ranks by.
    """
    with atomic_write(path) as f:
        for qid in sorted(run, key=qid_key):
            ranked = sorted_docs(run[qid])
            if depth is not None:
                ranked = ranked[:depth]
            for rank, (doc_id, score) in enumerate(ranked, start=1):
                f.write(f"{qid} Q0 {doc_id} {rank} {score:.9g} {tag}\n")
