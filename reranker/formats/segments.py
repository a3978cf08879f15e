"""Segments JSONL: `{"doc_id", "unit", "text"}` per line, the scoring units of each document; and how a
document is cut into units (word passages, pysbd sentences), shared by the segment and train stages."""

from __future__ import annotations

import json
import os
import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reranker.formats.atomic import write_lines
from reranker.formats.docs import strip_markup
from reranker.formats.errors import FormatError
from reranker.formats.ids import check_id
from reranker.formats.long_text import stitched
from reranker.formats.sidecar import check_sidecar
from reranker.formats.text import iter_jsonl

Segments = dict[str, list[tuple[int, str]]]  # doc_id -> [(unit, text), ...] in file order


@dataclass(frozen=True)
class Unit:
    doc_id: str
    unit: int
    text: str

    def to_json(self) -> str:
        return json.dumps({"doc_id": self.doc_id, "unit": self.unit, "text": self.text}, ensure_ascii=False)


WORD = re.compile(r"\w")


# Texts longer than this many characters are split window by window (reranker/formats/long_text.py),
# as pysbd is quadratic. Twice the longest title or body of the open collections the suite splits
# (SciFact 10,000 characters; Cranfield 4,057, CISI 3,800, CACM 2,463, Vaswani 1,771): those are split
# whole, as before. A window of this size takes pysbd ~0.3 s.
BOUND = 20_000


class SentenceSplitter:
    """pysbd's rule-based splitter on whitespace-collapsed text (it takes every line break for a boundary)."""

    name = "pysbd"

    def __init__(self, language: str = "en", bound: int = BOUND):
        import pysbd

        self.version = pysbd.__version__
        self.language = language
        self.bound = bound
        self._segmenter = pysbd.Segmenter(language=language, clean=False)
        self._spans = pysbd.Segmenter(language=language, clean=False, char_span=True)

    def split(self, text: str, label: str = "") -> list[str]:
        text = " ".join(text.split())
        if not text:
            return []
        if len(text) <= self.bound:
            pieces = self._segmenter.segment(text)
        else:  # a bar per long text: a 1M-word document takes minutes
            with tqdm(total=len(text), desc=f"sentences {label}".rstrip(), unit="char", unit_scale=True,
                      leave=False, file=sys.stderr) as bar:
                pieces = list(stitched(self._spans.segment, text, self.bound, bar.update))
        # Punctuation-only pieces (Cranfield's stray " .") are no evidence, only scoring cost.
        return [s for s in (s.strip() for s in pieces) if WORD.search(s)]


def count_tokens(tokenizer: Any, text: str) -> int:
    return len(tokenizer(text, add_special_tokens=False)["input_ids"])


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


def windows(text: str, tokenizer: Any, budget: int) -> list[str]:
    """Cut text into consecutive word windows of at most `budget` tokens each (one window if it fits)."""
    words = text.split()
    if not words:
        return []
    # Tokenise once; a word's token count is the number of tokens that start inside it.
    encoding = tokenizer(" ".join(words), add_special_tokens=False, return_offsets_mapping=True)
    starts, position = [], 0
    for word in words:
        starts.append(position)
        position += len(word) + 1
    counts = [0] * len(words)
    word_index = 0
    for start, end in encoding["offset_mapping"]:
        if end == start:
            continue
        while word_index + 1 < len(words) and start >= starts[word_index + 1]:
            word_index += 1
        counts[word_index] += 1
    if sum(counts) <= budget:
        return [" ".join(words)]
    out: list[str] = []
    first = 0
    while first < len(words):
        last, used = first, 0
        while last < len(words) and (last == first or used + counts[last] <= budget):
            used += counts[last]
            last += 1
        piece = " ".join(words[first:last])
        # Per-word counts are exact for WordPiece; other tokenizers merge across spaces, so check.
        while last - first > 1 and count_tokens(tokenizer, piece) > budget:
            last -= 1
            piece = " ".join(words[first:last])
        if count_tokens(tokenizer, piece) > budget:  # a single word longer than the budget
            out.extend(_cut_word(piece, tokenizer, budget))
        else:
            out.append(piece)
        first = last
    return out


def _cut_word(word: str, tokenizer: Any, budget: int) -> list[str]:
    offsets = tokenizer(word, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    cuts = [offsets[i][0] for i in range(0, len(offsets), budget)] + [len(word)]
    return [word[a:b] for a, b in zip(cuts, cuts[1:]) if word[a:b]]


def sentence_units(doc_id: str, title: str, body: str, splitter: SentenceSplitter,
                   tokenizer: Any = None, budget: int | None = None) -> list[Unit]:
    """The title's then the body's sentences; with a tokenizer, each cut into word windows of at most
    `budget` tokens (the segment stage's units); without, whole (training truncates a pair instead).
    Shared by scoring (segment) and training."""
    spans = splitter.split(title, doc_id) + splitter.split(body, doc_id)
    texts = [piece for span in spans for piece in (windows(span, tokenizer, budget) if tokenizer is not None else [span])]
    return [Unit(doc_id, i, text) for i, text in enumerate(texts or [""])]


def write_segments(units: Iterable[Unit], path: str | os.PathLike) -> None:
    write_lines(path, (unit.to_json() for unit in units))


def read_segments(path: str | os.PathLike) -> Segments:
    """Read segment JSONL into {doc_id: [(unit, text), ...]} in file order; one that does not match its
    `.meta.json` (cut short, changed since segment wrote it) is refused (formats.sidecar)."""
    segments: Segments = {}
    if not Path(path).exists():
        raise FileNotFoundError(f"{path}: no such segments file (made by `python -m reranker segment`)")
    check_sidecar(path)
    for line_no, record in iter_jsonl(path):
        try:
            doc_id, unit, text = str(record["doc_id"]), int(record["unit"]), record["text"]
            if not isinstance(text, str):
                raise TypeError("text is not a string")
        except (KeyError, TypeError, ValueError) as err:
            raise FormatError(path, line_no, f'a segments line is {{"doc_id", "unit", "text"}} ({err})') from None
        check_id(doc_id, path, line_no, "document id")
        segments.setdefault(doc_id, []).append((unit, text))
    return segments
