"""A content-addressed store of whole score arrays: `<dir>/<key>.npz`, one file per pass of a model over a list
of inputs, for passes that several jobs repeat exactly (the positive filter of every NTNU training scores the same
relevant passages with the same bi-encoder).

The key is the SHA-256 of the JSON list of everything the scores depend on (the model's fingerprint, dtype and
length, and every input in order), so a hit is the pass itself, batch for batch: in bf16 a batch's make-up moves a
score (teacher.py), and the same inputs in the same order make the same batches. A file holds the array and the
SHA-256 of its bytes; one whose digest does not match, or that cannot be read, is a miss (said on stderr) and is
written again. Written under a name of its own and renamed into place, so that two jobs computing one pass at once
each leave a whole file.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np


def key(parts: Sequence) -> str:
    return hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode()).hexdigest()


def _digest(array: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(array).tobytes()).hexdigest()


def load(path: Path) -> np.ndarray | None:
    """The stored array, or None where there is none or it fails its digest (said on stderr)."""
    if not path.exists():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            array, digest = stored["scores"], str(stored["digest"])
    except (OSError, ValueError, KeyError, zipfile.BadZipFile, EOFError) as err:
        print(f"{path}: unreadable ({err}); computed again", file=sys.stderr)
        return None
    if _digest(array) != digest:
        print(f"{path}: its scores do not match their digest; computed again", file=sys.stderr)
        return None
    return array


def store(path: Path, array: np.ndarray) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as sink:
            np.savez(sink, scores=array, digest=np.array(_digest(array)))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def cached(directory: str | os.PathLike | None, parts: Sequence, compute: Callable[[], np.ndarray]) -> np.ndarray:
    """`compute()`'s array, read from `directory` where a pass with the same `parts` stored it (None: no store)."""
    if directory is None:
        return compute()
    path = Path(directory) / f"{key(parts)}.npz"
    array = load(path)
    if array is None:
        array = compute()
        store(path, array)
    return array
