"""Topics: `qid<TAB>text` (the exchange format between stages) and NIST `<top>` files."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError, InputError
from reranker.formats.ids import check_id, qid_key
from reranker.formats.text import open_text, text_lines


def read_topics_tsv(path: str | os.PathLike) -> dict[str, str]:
    """Read `qid<TAB>text` topics."""
    topics: dict[str, str] = {}
    first_line: dict[str, int] = {}
    for line_no, line in text_lines(path):
        if not line.strip():
            continue
        qid, sep, text = line.partition("\t")
        qid = qid.strip()
        if not sep or not qid:
            raise FormatError(path, line_no, "a topics line is `qid<TAB>text`")
        check_id(qid, path, line_no)
        if not text.strip():
            raise FormatError(path, line_no, f"query {qid} has no text: give it one or remove the line")
        if qid in topics:
            raise FormatError(path, line_no, f"query {qid} comes twice (first on line {first_line[qid]}): keep one")
        topics[qid], first_line[qid] = text, line_no
    if not topics:
        raise FormatError(path, None, "no topics: a topics file has `qid<TAB>text` lines")
    return topics


def write_topics_tsv(topics: Mapping[str, str], path: str | os.PathLike) -> None:
    with atomic_write(path) as f:
        for qid in sorted(topics, key=qid_key):
            text = " ".join(topics[qid].split())
            f.write(f"{qid}\t{text}\n")


_TOPIC_TAG = re.compile(r"<(num|title|desc|narr)>\s*(?:Number:|Description:|Narrative:)?", re.IGNORECASE)


def read_trec_topics(path: str | os.PathLike, field: str = "title") -> dict[str, str]:
    """Read NIST SGML-ish topics (`<top> <num> <title> <desc> <narr> </top>`) and return one field."""
    if field not in {"title", "desc", "narr"}:
        raise InputError(f"field must be title, desc or narr, not {field!r}")
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
