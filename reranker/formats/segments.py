"""Segments JSONL: `{"doc_id", "unit", "text"}` per line, the scoring units of each document."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from reranker.formats.atomic import write_lines
from reranker.formats.docs import strip_markup
from reranker.formats.errors import FormatError
from reranker.formats.text import iter_jsonl

Segments = dict[str, list[tuple[int, str]]]  # doc_id -> [(unit, text), ...] in file order


@dataclass(frozen=True)
class Unit:
    doc_id: str
    unit: int
    text: str

    def to_json(self) -> str:
        return json.dumps({"doc_id": self.doc_id, "unit": self.unit, "text": self.text}, ensure_ascii=False)


def title_and_body(title: str, text: str) -> tuple[str, str]:
    """Clean title and body; a body that starts with its title (Cranfield) loses that copy."""
    title, body = strip_markup(title), strip_markup(text)
    if title and body.startswith(title):
        body = body[len(title):].lstrip()
    return title, body


def passage_units(doc_id: str, title: str, body: str, length: int, stride: int, with_title: bool) -> list[Unit]:
    """Word windows (Dai & Callan 2019): `length` words every `stride` words, the last one reaching the
    end, each prefixed by the title with `with_title`. Shared by scoring (segment) and training."""
    words = body.split()
    texts = []
    for start in range(0, max(len(words), 1), stride):
        passage = " ".join(words[start:start + length])
        texts.append(f"{title} {passage}".strip() if with_title else passage)
        if start + length >= len(words):
            break
    return [Unit(doc_id, i, text) for i, text in enumerate(texts)]


def write_segments(units: Iterable[Unit], path: str | os.PathLike) -> None:
    write_lines(path, (unit.to_json() for unit in units))


def read_segments(path: str | os.PathLike) -> Segments:
    """Read segment JSONL into {doc_id: [(unit, text), ...]} in file order."""
    segments: Segments = {}
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such segments file (made by `python -m reranker segment`)")
    for line_no, record in iter_jsonl(path):
        try:
            doc_id, unit, text = str(record["doc_id"]), int(record["unit"]), record["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        except (KeyError, TypeError, ValueError) as err:
            raise FormatError(path, line_no, f'a segments line is {{"doc_id", "unit", "text"}} ({err})') from None
        segments.setdefault(doc_id, []).append((unit, text))
    return segments
