"""Reading files: gzip-aware text, JSONL records, checksums, sidecar paths."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import stat
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from reranker.formats.errors import FormatError


class _Gzip(gzip.GzipFile):
    """A gzip file whose cut or corrupt stream is a FormatError naming the file, not a bare EOFError."""

    def _checked(self, read, size):
        try:
            return read(size)
        except (EOFError, zlib.error, gzip.BadGzipFile) as err:
            raise FormatError(self.name, None, f"not a complete gzip file ({err}): it was cut short or is not gzip; "
                                               "copy or write it again") from None

    def read(self, size=-1):
        return self._checked(super().read, size)

    def read1(self, size=-1):
        return self._checked(super().read1, size)


def open_text(path: str | os.PathLike, errors: str = "replace", encoding: str = "utf-8") -> TextIO:
    """Open a text file for reading, gunzipping `.gz` files. Source collections keep `replace`
    (old SMART files hold stray bytes); the exchanged formats read strictly (`text_lines`) and with
    `utf-8-sig`, which drops a byte-order mark at the start (reranker.formats.ids has the rule)."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file")
    refuse_device(path)
    if path.suffix == ".gz":
        return io.TextIOWrapper(_Gzip(path, "rb"), encoding=encoding, errors=errors)
    return open(path, encoding=encoding, errors=errors)


def refuse_device(path: str | os.PathLike) -> None:
    """A FormatError for a device given as an input file (a link to /dev/zero or /dev/urandom never ends: read as
    lines, it fills memory). Pipes stay readable: `<(zcat run.gz)` is a way to hand over a file."""
    mode = os.stat(path).st_mode
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise FormatError(path, None, f"a device ({os.path.realpath(path)}), not a file: give the file to read")


def text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(line number, line without its `\n` or `\r\n`) of a UTF-8 file, a byte-order mark at its start dropped;
    other bytes name the line."""
    with open_text(path, errors="strict", encoding="utf-8-sig") as f:
        try:
            for line_no, line in enumerate(f, start=1):
                yield line_no, line.rstrip("\r\n")
        except UnicodeDecodeError as err:
            raise FormatError(path, _first_undecodable_line(path), f"not UTF-8 ({err.reason}): "
                              "re-encode the file as UTF-8") from None


def _first_undecodable_line(path: str | os.PathLike) -> int | None:
    """The number of the first line that is not UTF-8 (the decoder reads ahead in blocks)."""
    opener = _Gzip if Path(path).suffix == ".gz" else open
    with opener(path, "rb") as f:
        for line_no, raw in enumerate(f, start=1):
            try:
                raw.decode("utf-8")
            except UnicodeDecodeError:
                return line_no
    return None


def fields_of_lines(path: str | os.PathLike) -> Iterator[tuple[int, list[str]]]:
    """(line number, whitespace-separated fields) of every non-blank line."""
    for line_no, line in text_lines(path):
        fields = line.split()
        if fields:
            yield line_no, fields


def iter_jsonl(path: str | os.PathLike) -> Iterator[tuple[int, dict]]:
    """(line number, object) for every non-blank line of a JSONL file; bad JSON names file:line."""
    refuse_device(path)
    with open(path, encoding="utf-8-sig") as f:  # a byte-order mark at the start is dropped (formats.ids)
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
