"""TREC qrels: `qid iteration doc_id grade`."""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Iterable, Mapping

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError
from reranker.formats.ids import check_id, qid_key
from reranker.formats.text import fields_of_lines

Qrels = dict[str, dict[str, int]]  # qid -> doc_id -> grade


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read TREC qrels (gzipped or not)."""
    return parse_qrels(fields_of_lines(path), path)


def parse_qrels(numbered_fields: Iterable[tuple[int, list[str]]], path: str | os.PathLike) -> Qrels:
    """TREC qrels from (line number, fields) pairs; `path` names the source in errors."""
    qrels: Qrels = defaultdict(dict)
    first_line: dict[tuple[str, str], int] = {}
    for line_no, fields in numbered_fields:
        if len(fields) != 4:
            raise FormatError(path, line_no, f"a qrels line has 4 fields (qid iteration docid grade), found {len(fields)}")
        qid, _, doc_id, grade = fields
        check_id(qid, path, line_no)
        check_id(doc_id, path, line_no, "document id")
        try:
            value = int(grade)
        except ValueError:
            raise FormatError(path, line_no, f"grade must be an integer, found {grade!r}") from None
        if doc_id in qrels[qid]:  # the later line would overwrite the earlier one, quietly
            raise FormatError(path, line_no, f"query {qid} judges document {doc_id} twice "
                                             f"(first on line {first_line[qid, doc_id]}): keep one")
        qrels[qid][doc_id], first_line[qid, doc_id] = value, line_no
    if not qrels:
        raise FormatError(path, None, "no judgments: a qrels file has `qid iteration docid grade` lines")
    return dict(qrels)


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike) -> None:
    with atomic_write(path) as f:
        for qid in sorted(qrels, key=qid_key):
            for doc_id in sorted(qrels[qid]):
                f.write(f"{qid} 0 {doc_id} {qrels[qid][doc_id]}\n")
