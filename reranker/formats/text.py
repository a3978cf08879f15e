"""Reading files: gzip-aware text, JSONL records, checksums, sidecar paths."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from reranker.formats.errors import FormatError


def open_text(path: str | os.PathLike) -> TextIO:
    """Open a text file for reading, gunzipping `.gz` files."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
    return open(path, encoding="utf-8", errors="replace")


def fields_of_lines(path: str | os.PathLike) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of every non-blank line."""
    with open_text(path) as f:
        for line_no, line in enumerate(f, start=1):
            fields = line.split()
            if fields:
                yield line_no, fields


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSONL file; bad JSON names file:line."""
    with open(path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as err:
                raise FormatError(path, line_no, f"not a JSON object ({err.msg})") from None
            if not isinstance(record, dict):
                raise FormatError(path, line_no, "not a JSON object")
            yield line_no, record


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def meta_path(out: str | os.PathLike) -> Path:
    """The `<out>.meta.json` sidecar that records how `out` was made."""
    return Path(str(out) + ".meta.json")
