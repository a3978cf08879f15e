"""A file's `<file>.meta.json` sidecar as a promise about the file's bytes, and the reader's check of it.

Writers record `output: {sha256, bytes, lines}` of the file they made (score and gather while joining
the shards, segment after writing). Readers of those files (fuse reads score files, score reads
segments, gather reads parts) check the file before trusting it: a file cut short or changed since
it was written is refused in one line naming both files, not read as if it were whole (a score file
short of some queries would fuse them in first-stage order under the reranker's tag).

A sidecar written before `output` existed is checked by its count, score's `pairs` or segment's
`units` (one line each). A scores file without a sidecar is refused (`required`): a kill between the file and its
sidecar, or a copy cut short at a line's end, would be read as whole; one made elsewhere is recorded on purpose
(`score record`, `record_sidecar`). Other files without one (segments made by hand) are read as they are.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from reranker.formats.errors import InputError
from reranker.formats.text import meta_path

COUNTS = ("pairs", "units")  # an older sidecar's count of the file's lines (score's, segment's)
_BLOCK = 1 << 20


class Tally:
    """sha256, size and line count of bytes as they are written or read, block by block."""

    def __init__(self) -> None:
        self._sha = hashlib.sha256()
        self.bytes = self.newlines = 0
        self._last = b"\n"

    def update(self, block: bytes) -> None:
        if block:
            self._sha.update(block)
            self.bytes += len(block)
            self.newlines += block.count(b"\n")
            self._last = block[-1:]

    def record(self) -> dict[str, Any]:
        lines = self.newlines + (self._last != b"\n")  # a last line without its newline counts too
        return {"sha256": self._sha.hexdigest(), "bytes": self.bytes, "lines": lines}


def describe(path: str | os.PathLike) -> dict[str, Any]:
    """`{sha256, bytes, lines}` of a file, in one read."""
    tally = Tally()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(_BLOCK), b""):
            tally.update(block)
    return tally.record()


def read_sidecar(path: str | os.PathLike) -> dict[str, Any] | None:
    """The sidecar of `path` as a dict, or None without one; one that is not a JSON object is an InputError."""
    meta = meta_path(path)
    if not meta.exists():
        return None
    try:
        data = json.loads(meta.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"{meta}: not JSON ({err}): the sidecar of {path} is damaged; make {path} again "
                         "(remove both and rerun the stage that wrote them)") from None
    if not isinstance(data, dict):
        raise InputError(f"{meta}: not a JSON object: make {path} again (remove both and rerun the stage that wrote them)")
    return data


def check_sidecar(path: str | os.PathLike, required: str | None = None) -> dict[str, Any] | None:
    """Refuse `path` when it does not match what its sidecar records (one read of the file); return the sidecar.
    `required`: a file without one is refused too, and this says how to get one."""
    meta = read_sidecar(path)
    if meta is None:
        if required:
            raise InputError(f"{path} has no {meta_path(path).name} beside it, so nothing says it is whole: {required}")
        return None
    sidecar, fix = meta_path(path), "make it again (remove both and rerun the stage that wrote them)"
    found, recorded = describe(path), meta.get("output")
    if isinstance(recorded, dict) and "sha256" in recorded:
        if (found["lines"], found["bytes"]) != (recorded.get("lines"), recorded.get("bytes")):
            raise InputError(f"{path} has {found['lines']} lines ({found['bytes']} bytes) but {sidecar} records "
                             f"{recorded.get('lines')} ({recorded.get('bytes')} bytes): it was cut short or changed "
                             f"after it was written; {fix}")
        if found["sha256"] != recorded["sha256"]:
            raise InputError(f"{path} does not match the sha256 {sidecar} records: it was changed after it was "
                             f"written; {fix}")
        return meta
    count = next((key for key in COUNTS if isinstance(meta.get(key), int)), None)
    if count is not None and found["lines"] != meta[count]:
        raise InputError(f"{path} has {found['lines']} lines but {sidecar} says {meta[count]} {count}: it was cut "
                         f"short or changed after it was written; {fix}")
    return meta


def write_sidecar(path: str | os.PathLike, meta: dict[str, Any]) -> None:
    from reranker.formats.atomic import write_json  # atomic imports the outputs' checks, which import nothing here

    write_json(meta_path(path), meta, indent=2, sort_keys=True)


def record_sidecar(path: str | os.PathLike, **about: Any) -> dict[str, Any]:
    """Write the sidecar of a file made elsewhere: its `output` record and `about` (how it was recorded)."""
    meta = {**about, "output": describe(path)}
    write_sidecar(path, meta)
    return meta
