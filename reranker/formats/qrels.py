"""TREC qrels: `qid iteration doc_id grade`."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Mapping

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError
from reranker.formats.ids import qid_key
from reranker.formats.text import fields_of_lines

Qrels = dict[str, dict[str, int]]  # qid -> doc_id -> grade


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read TREC qrels (gzipped or not)."""
    qrels: Qrels = defaultdict(dict)
    for line_no, fields in fields_of_lines(path):
        if len(fields) != 4:
            raise FormatError(path, line_no, f"a qrels line has 4 fields (qid iteration docid grade), found {len(fields)}")
        qid, _, doc_id, grade = fields
        try:
            qrels[qid][doc_id] = int(grade)
        except ValueError:
            raise FormatError(path, line_no, f"grade must be an integer, found {grade!r}") from None
    return dict(qrels)


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike) -> None:
    with atomic_write(path) as f:
        for qid in sorted(qrels, key=qid_key):
            for doc_id in sorted(qrels[qid]):
                f.write(f"{qid} 0 {doc_id} {qrels[qid][doc_id]}\n")
