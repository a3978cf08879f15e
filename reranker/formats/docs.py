"""docs.jsonl: one `{"id", "title", "text"}` object per line (the title is not repeated in the text)."""

from __future__ import annotations

import codecs
import html
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import NamedTuple

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError, InputError
from reranker.formats.ids import check_id


class Doc(NamedTuple):
    doc_id: str
    title: str
    text: str  # without the title


_TAG = re.compile(r"<!--.*?-->|<[A-Za-z/!?][^<>]*>", re.DOTALL)  # not "a < b > c"


def strip_markup(text: str) -> str:
    """Remove HTML/SGML tags and comments, decode entities, collapse whitespace."""
    return " ".join(html.unescape(_TAG.sub(" ", text)).split())


def write_docs(docs: Iterable[Doc], path: str | os.PathLike) -> set[str]:
    """Write the documents; return their ids. Refuses a document id seen before: a source that
    yields one twice is corrupt (a docstore built by two processes at once), and nothing is written."""
    seen: set[str] = set()
    with atomic_write(path) as f:
        for doc in docs:
            if doc.doc_id in seen:
                raise InputError(f"{path}: document {doc.doc_id!r} comes twice from the source; its cache may "
                                 f"be corrupt (rebuild it: delete the derived files beside the source)")
            seen.add(doc.doc_id)
            f.write(json.dumps({"id": doc.doc_id, "title": doc.title, "text": doc.text}, ensure_ascii=False) + "\n")
    return seen


def parse_doc(line: str | bytes, path: str | os.PathLike, line_no: int) -> Doc:
    try:
        record = json.loads(line)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FormatError(path, line_no, f"not a JSON object: {err}") from None
    if not isinstance(record, dict) or not isinstance(record.get("id"), str) or not isinstance(record.get("text"), str):
        raise FormatError(path, line_no, 'a document is {"id": str, "title": str, "text": str}')
    doc_id, title = record["id"], record.get("title") or ""
    if not doc_id or doc_id != "".join(doc_id.split()):
        raise FormatError(path, line_no, f"document id {doc_id!r} is empty or holds whitespace (TREC runs cannot hold it)")
    check_id(doc_id, path, line_no, "document id")
    if not isinstance(title, str):
        raise FormatError(path, line_no, "title must be a string")
    return Doc(doc_id, title, record["text"])


def iter_docs(path: str | os.PathLike, progress: Callable[[int], object] | None = None) -> Iterator[tuple[int, Doc]]:
    """(line number, Doc) of every non-blank line; `progress` gets each line's size in bytes."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file (write it with `python -m reranker collections`)")
    with open(path, "rb") as f:
        for line_no, line in enumerate(f, start=1):
            if progress is not None:
                progress(len(line))
            if line_no == 1:  # a byte-order mark at the start is no part of the first record (formats.ids)
                line = line.removeprefix(codecs.BOM_UTF8)
            if line.strip():
                yield line_no, parse_doc(line, path, line_no)


def read_docs(path: str | os.PathLike, wanted: set[str], require_text: bool = False) -> dict[str, tuple[str, str]]:
    """Read {doc_id: (title, text)} for the wanted ids; every wanted id must be there, and once in
    the file. `require_text`: a wanted document with neither title nor text is an error."""
    docs: dict[str, tuple[str, str]] = {}
    first_line: dict[str, int] = {}
    for line_no, doc in iter_docs(path):
        if doc.doc_id in first_line:  # a dict would keep the later one, quietly
            raise FormatError(path, line_no, f"document id {doc.doc_id} comes twice (first on line "
                                             f"{first_line[doc.doc_id]}): keep one")
        first_line[doc.doc_id] = line_no
        if doc.doc_id in wanted:
            if require_text and not (doc.title.strip() or doc.text.strip()):
                raise FormatError(path, line_no, f"document {doc.doc_id} has neither title nor text: it cannot be "
                                                 "scored; give it text or drop it from the run")
            docs[doc.doc_id] = (doc.title, doc.text)
    missing = sorted(wanted - docs.keys())
    if missing:
        raise FormatError(path, None, f"{len(missing)} documents of the run are not in the docs file, e.g. {missing[:5]}")
    return docs
