"""TREC file formats: run files, qrels and topics.

Every reader names the file and line of a malformed line; callers never see a bare ValueError.
Gzipped files are read transparently.
"""

from __future__ import annotations

import gzip
import io
import os
import re
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import NamedTuple, TextIO

Run = dict[str, dict[str, float]]  # qid -> docid -> score
Qrels = dict[str, dict[str, int]]  # qid -> docid -> grade


class FormatError(ValueError):
    """A file that does not follow its format; the message names the file and line."""

    def __init__(self, path: str | os.PathLike, line_no: int | None, message: str):
        where = f"{path}:{line_no}" if line_no is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line_no = line_no


class RunLine(NamedTuple):
    qid: str
    docid: str
    rank: int
    score: float
    tag: str


def open_text(path: str | os.PathLike) -> TextIO:
    """Open a text file for reading, gunzipping `.gz` files."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def _lines(path: str | os.PathLike) -> Iterator[tuple[int, list[str]]]:
    with open_text(path) as f:
        for line_no, line in enumerate(f, start=1):
            fields = line.split()
            if fields:
                yield line_no, fields


def read_run_lines(path: str | os.PathLike) -> Iterator[RunLine]:
    """Yield the lines of a TREC run file: `qid Q0 docid rank score tag`."""
    for line_no, fields in _lines(path):
        if len(fields) != 6:
            raise FormatError(path, line_no, f"a run line has 6 fields (qid Q0 docid rank score tag), found {len(fields)}")
        qid, _, docid, rank, score, tag = fields
        try:
            yield RunLine(qid, docid, int(rank), float(score), tag)
        except ValueError:
            raise FormatError(path, line_no, f"rank must be an integer and score a number, found {rank!r} and {score!r}") from None


def read_run(path: str | os.PathLike) -> Run:
    """Read a TREC run into {qid: {docid: score}}. A repeated (qid, docid) pair is an error."""
    run: Run = defaultdict(dict)
    for line_no, line in enumerate(read_run_lines(path), start=1):
        if line.docid in run[line.qid]:
            raise FormatError(path, None, f"document {line.docid} appears twice for query {line.qid}")
        run[line.qid][line.docid] = line.score
    return dict(run)


def sorted_docs(scores: Mapping[str, float]) -> list[tuple[str, float]]:
    """Order documents as trec_eval does: score descending, then docid descending."""
    return sorted(scores.items(), key=lambda item: (item[1], item[0]), reverse=True)


def write_run(run: Mapping[str, Mapping[str, float]], path: str | os.PathLike, tag: str, depth: int | None = None) -> None:
    """Write a run in TREC format, ranked as trec_eval ranks it, atomically.

    Scores keep 9 significant digits, enough to round-trip the float32 values trec_eval ranks by.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for qid in sorted(run, key=_qid_key):
            ranked = sorted_docs(run[qid])
            if depth is not None:
                ranked = ranked[:depth]
            for rank, (docid, score) in enumerate(ranked, start=1):
                f.write(f"{qid} Q0 {docid} {rank} {score:.9g} {tag}\n")
    os.replace(tmp, path)


def read_qrels(path: str | os.PathLike) -> Qrels:
    """Read TREC qrels: `qid iteration docid grade`."""
    qrels: Qrels = defaultdict(dict)
    for line_no, fields in _lines(path):
        if len(fields) != 4:
            raise FormatError(path, line_no, f"a qrels line has 4 fields (qid iteration docid grade), found {len(fields)}")
        qid, _, docid, grade = fields
        try:
            qrels[qid][docid] = int(grade)
        except ValueError:
            raise FormatError(path, line_no, f"grade must be an integer, found {grade!r}") from None
    return dict(qrels)


def write_qrels(qrels: Mapping[str, Mapping[str, int]], path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for qid in sorted(qrels, key=_qid_key):
            for docid in sorted(qrels[qid]):
                f.write(f"{qid} 0 {docid} {qrels[qid][docid]}\n")
    os.replace(tmp, path)


def read_topics_tsv(path: str | os.PathLike) -> dict[str, str]:
    """Read `qid<TAB>text` topics, the exchange format between stages."""
    topics: dict[str, str] = {}
    with open_text(path) as f:
        for line_no, line in enumerate(f, start=1):
            line = line.rstrip("\n")
            if not line.strip():
                continue
            qid, sep, text = line.partition("\t")
            if not sep or not qid.strip():
                raise FormatError(path, line_no, "a topics line is `qid<TAB>text`")
            topics[qid.strip()] = text
    return topics


def write_topics_tsv(topics: Mapping[str, str], path: str | os.PathLike) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for qid in sorted(topics, key=_qid_key):
            text = " ".join(topics[qid].split())
            f.write(f"{qid}\t{text}\n")
    os.replace(tmp, path)


_TOPIC_TAG = re.compile(r"<(num|title|desc|narr)>\s*(?:Number:|Description:|Narrative:)?", re.IGNORECASE)


def read_trec_topics(path: str | os.PathLike, field: str = "title") -> dict[str, str]:
    """Read NIST SGML-ish topics (`<top> <num> <title> <desc> <narr> </top>`) and return one field."""
    if field not in {"title", "desc", "narr"}:
        raise ValueError(f"field must be title, desc or narr, not {field!r}")
    topics: dict[str, str] = {}
    current: dict[str, list[str]] = {}
    key: str | None = None
    start_line = 0
    with open_text(path) as f:
        for line_no, line in enumerate(f, start=1):
            stripped = line.strip()
            if stripped.lower().startswith("<top>"):
                current, key, start_line = {}, None, line_no
                continue
            if stripped.lower().startswith("</top>"):
                if "num" not in current:
                    raise FormatError(path, start_line, "topic without a <num> field")
                qid = " ".join(current["num"]).split()[-1] if current["num"] else ""
                if not qid:
                    raise FormatError(path, start_line, "topic with an empty <num> field")
                topics[qid] = " ".join(" ".join(current.get(field, [])).split())
                key = None
                continue
            match = _TOPIC_TAG.match(stripped)
            if match:
                key = match.group(1).lower()
                stripped = stripped[match.end():]
                for closing in ("</num>", "</title>", "</desc>", "</narr>"):
                    stripped = stripped.replace(closing, "")
                current.setdefault(key, [])
            if key is not None and stripped:
                current[key].append(stripped)
    if not topics:
        raise FormatError(path, None, "no <top> topics found")
    return topics


def _qid_key(qid: str) -> tuple[int, int | str]:
    """Numeric qids in numeric order, others after them in string order."""
    return (0, int(qid)) if qid.isdigit() else (1, qid)


def qid_order(qids: Iterable[str]) -> list[str]:
    return sorted(qids, key=_qid_key)
