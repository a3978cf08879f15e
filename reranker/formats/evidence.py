"""Birch's evidence: `<fused run>.evidence.jsonl.gz`, the sentences behind every fused score (docs/evidence.md).

Gzipped JSON lines: a header (`format`, `format_version`, the fusion's settings and inputs, the weights per
fold), then one record per (query, re-scored document) in the run's order: its first-stage and fused score
and rank, and the terms of S_f = a*S_doc + (1-a)*sum w_i*S_i, each with its weight and contribution; a
sentence term also with its unit id, text and character offsets into the document text (`document_text`).
The contributions, added in the record's order, give the fused score bit for bit.
"""

from __future__ import annotations

import gzip
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import FormatError, InputError
from reranker.formats.segments import title_and_body
from reranker.formats.text import text_lines

FORMAT = "birch-evidence"
FORMAT_VERSION = 1
SUFFIX = ".evidence.jsonl.gz"
HEADER_KEYS = ("method", "top_n", "folds")
RECORD_KEYS = ("qid", "doc_id", "fold", "first_stage", "fused", "doc", "sentences")
# What a reader relies on in each part of a record: a number (None allowed where marked), text, an integer.
PARTS = {"first_stage": {"rank": int, "score": float}, "fused": {"rank": int, "score": float},
         "doc": {"score": float, "value": float, "weight": float, "contribution": float}}
SENTENCE = {"term": int, "unit": int, "start": (int, None), "end": (int, None), "text": str, "score": float,
            "value": float, "weight": float, "contribution": float}
OFFSETS = ("[start, end) character offsets into the document text: the title and the body as segment cleans them "
           "(markup stripped, entities decoded, whitespace collapsed, the body's leading copy of the title dropped), "
           "joined by one line break (a document without a title is its body); null where the unit is not found "
           "there in order (a unit segment rewrote: none in any document of Cranfield, CISI, CACM or Vaswani)")


def evidence_path(run: str | os.PathLike) -> Path:
    """Where a fused run's evidence lies: beside it."""
    return Path(f"{run}{SUFFIX}")


def document_text(title: str, text: str) -> str:
    """The text the offsets point into (OFFSETS)."""
    return "\n".join(part for part in title_and_body(title, text) if part)


def unit_offsets(text: str, units: Sequence[str]) -> list[tuple[int, int] | None]:
    """Each unit's [start, end) in `text`, found in order (each after the one before); None where one is not
    there. Segment's units are pieces of the cleaned title and body in order, so all are found."""
    found: list[tuple[int, int] | None] = []
    cursor = 0
    for unit in units:
        start = text.find(unit, cursor)
        if start < 0:
            found.append(None)
            continue
        found.append((start, start + len(unit)))
        cursor = start + len(unit)
    return found


def write_evidence(path: str | os.PathLike, header: dict[str, Any], records: Iterable[dict[str, Any]]) -> int:
    """Write the header and the records, atomically; byte-identical for identical input (no name or time in
    the gzip header). Returns the number of records."""
    count = 0
    with atomic_write(path, binary=True) as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0,
                                                               compresslevel=6) as f:
        f.write(_line({"format": FORMAT, "format_version": FORMAT_VERSION, **header}))
        for record in records:
            f.write(_line(record))
            count += 1
    return count


def _line(data: dict[str, Any]) -> bytes:
    return (json.dumps(data, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def read_evidence(path: str | os.PathLike) -> tuple[dict[str, Any], Iterator[dict[str, Any]]]:
    """The header, and the records as they are read; a file of another format or version, or a record
    without its keys, is a FormatError naming the line."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"{path}: no such evidence file; `python -m reranker fuse birch ... --evidence-out "
                         f"{path}` writes it beside the fused run")
    lines = text_lines(path)
    first = next(lines, None)
    header = _record(path, *first) if first else None
    if not header or header.get("format") != FORMAT:
        raise FormatError(path, 1, f"not a {FORMAT} file (its first line is a header with \"format\": \"{FORMAT}\")")
    if header.get("format_version") != FORMAT_VERSION:
        raise FormatError(path, 1, f"format_version {header.get('format_version')!r}, this code reads "
                                   f"{FORMAT_VERSION}: make it again with this code's `fuse birch`")
    missing = [key for key in HEADER_KEYS if key not in header]
    if missing or not isinstance(header["folds"], dict):
        raise FormatError(path, 1, f"the header lacks {', '.join(missing) or 'folds as an object'}: make the file again")

    def records() -> Iterator[dict[str, Any]]:
        for line_no, line in lines:
            if line.strip():
                record = _record(path, line_no, line)
                problem = _problem(record, header)
                if problem:
                    raise FormatError(path, line_no, f"{problem}: make the file again with `fuse birch --evidence-out`")
                yield record
    return header, records()


def _record(path: Path, line_no: int, line: str) -> dict[str, Any]:
    try:
        data = json.loads(line)
    except json.JSONDecodeError as err:
        raise FormatError(path, line_no, f"not a JSON object ({err})") from None
    if not isinstance(data, dict):
        raise FormatError(path, line_no, "not a JSON object")
    return data


def _problem(record: dict[str, Any], header: dict[str, Any]) -> str | None:
    """What is wrong with a record, or None."""
    missing = [key for key in RECORD_KEYS if key not in record]
    if missing:
        return f"an evidence record lacks {', '.join(missing)}"
    if not all(isinstance(record[key], str) for key in ("qid", "doc_id", "fold")):
        return "qid, doc_id and fold must be strings"
    if record["fold"] not in header["folds"]:
        return f"fold {record['fold']!r} is not in the header's folds"
    parts = [(name, record[name], PARTS[name]) for name in PARTS]
    if not isinstance(record["sentences"], list):
        return "sentences must be a list"
    parts += [(f"sentence {i + 1}", s, SENTENCE) for i, s in enumerate(record["sentences"])]
    for name, part, fields in parts:
        if not isinstance(part, dict):
            return f"{name} must be an object"
        for key, kinds in fields.items():
            kinds = kinds if isinstance(kinds, tuple) else (kinds,)
            value = part.get(key)
            if not any(_is(value, kind) for kind in kinds):
                return f"{name}: {key} must be {' or '.join('null' if k is None else k.__name__ for k in kinds)}, " \
                       f"found {json.dumps(value)}"
    return None


def _is(value: Any, kind: type | None) -> bool:
    if kind is None:
        return value is None
    if isinstance(value, bool):
        return False
    return isinstance(value, (int, float)) if kind is float else isinstance(value, kind)


def total(record: dict[str, Any]) -> float:
    """S_f again from the record's contributions, added in the order fusion adds them."""
    score = record["doc"]["contribution"]
    for sentence in record["sentences"]:
        score += sentence["contribution"]
    return score
