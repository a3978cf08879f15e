"""Small file helpers shared by the stages."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator


def file_sha256(path: str | os.PathLike) -> str:
    """Hex sha256 of a file's bytes, read in blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSONL file; bad JSON names file:line."""
    from reranker.trec import FormatError

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
