"""Atomic writes: a file or directory appears at its path complete, or not at all.

Everything is built beside its destination (`<path>.tmp`) and renamed into place. And the lock that keeps
a second process out of what one is building (`file_lock`).
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any

from reranker.formats.errors import FULL, disk_full
from reranker.formats.outputs import refuse_foreign_dir, refuse_unsafe_output


def tmp_path(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".tmp")


@contextlib.contextmanager
def atomic_write(path: str | os.PathLike, binary: bool = False,
                 before_rename: Callable[[Path], None] | None = None) -> Iterator[IO]:
    """Open `<path>.tmp` for writing (UTF-8 text with `\\n` lines, or bytes); rename it to `path`
    when the block succeeds, remove it when the block or the rename fails. `before_rename(tmp)`: what must exist
    before `path` does (its sidecar: a reader never sees the file without it)."""
    path = Path(path)
    refuse_unsafe_output(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(path)
    f = open(tmp, "wb") if binary else open(tmp, "w", encoding="utf-8", newline="\n")
    try:
        with f:
            yield f
        if before_rename is not None:
            before_rename(tmp)
        os.replace(tmp, path)  # fails where `path` is a directory, say: the temporary file goes too
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        full = disk_full(err)  # also under a writer's own error (torch.save's RuntimeError)
        if full is not None and getattr(full, "filename", None) is None:  # a failed write names no file: name it
            code = full.errno if isinstance(full, OSError) and full.errno in FULL else errno.ENOSPC
            raise OSError(code, os.strerror(code), str(path)) from err
        raise


def write_text(path: str | os.PathLike, text: str) -> None:
    with atomic_write(path) as f:
        f.write(text)


def write_lines(path: str | os.PathLike, lines: Iterable[str]) -> None:
    """Each line followed by a newline."""
    with atomic_write(path) as f:
        for line in lines:
            f.write(line + "\n")


def write_json(path: str | os.PathLike, data: Any, indent: int = 1, sort_keys: bool = False,
               ensure_ascii: bool = True) -> None:
    """`data` as indented JSON and a final newline."""
    write_text(path, json.dumps(data, indent=indent, sort_keys=sort_keys, ensure_ascii=ensure_ascii) + "\n")


@contextlib.contextmanager
def atomic_dir(path: str | os.PathLike, last: str | None = None) -> Iterator[Path]:
    """Build a directory in a fresh `<path>.tmp`, then publish it at `path` (see `publish_dir`).

    On error the partial `<path>.tmp` stays for inspection (error messages may name it); the next
    build clears it. On a full disk it goes: the rerun needs its space. `path` itself is untouched.
    """
    path = Path(path)
    refuse_foreign_dir(path, last)  # before the work: a refused folder costs nothing
    tmp = tmp_path(path)
    shutil.rmtree(tmp, ignore_errors=True)  # left by an interrupted build
    tmp.mkdir(parents=True)
    try:
        yield tmp
    except BaseException as err:
        if disk_full(err) is not None:
            shutil.rmtree(tmp, ignore_errors=True)
        raise
    publish_dir(tmp, path, last)


def publish_dir(tmp: str | os.PathLike, path: str | os.PathLike, last: str | None = None) -> None:
    """Move the finished directory `tmp` to `path`; its file `last` (a mark of completeness) moves last.

    An existing `path` may hold subdirectories of its own (a training chain's stages), so it is
    updated file by file: `last` goes first, stale files go, subdirectories stay.
    """
    tmp, path = Path(tmp), Path(path)
    refuse_foreign_dir(path, last)
    if not path.exists():
        os.replace(tmp, path)
        return
    if last is not None:
        (path / last).unlink(missing_ok=True)
    for stale in path.iterdir():
        if stale.is_file() and not (tmp / stale.name).exists():
            stale.unlink()
    for item in sorted(tmp.iterdir(), key=lambda item: item.name == last):
        os.replace(item, path / item.name)
    tmp.rmdir()


@contextlib.contextmanager
def file_lock(path: str | os.PathLike, wait: bool = True) -> Iterator[bool]:
    """An exclusive lock across processes on the file `path` (made, with its folder, if absent): an flock, the
    kernel's, released when its holder ends however it ends. Yields True once held; with `wait=False`, False
    at once where another process holds it (the block runs without the lock: it should say so and leave)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = True
        except BlockingIOError:
            held = False
        try:
            yield held
        finally:
            if held:
                fcntl.flock(handle, fcntl.LOCK_UN)
