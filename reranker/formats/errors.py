"""Errors a user can fix (bad files, flags, config), and how every command line reports them (each stage's
`main` is wrapped by reranker.formats.entry.exits_on_input_error).

`InputError` is the one base: `python -m reranker` prints its message as one line and exits 2,
with no traceback. Anything else that escapes a stage is a bug and keeps its traceback.
"""

from __future__ import annotations

import errno
import os
import sqlite3
import sys

USAGE_ERROR = 2  # argparse's exit code: the same for a bad flag and a bad file
FULL = (errno.ENOSPC, errno.EDQUOT)
FULL_WORDS = (os.strerror(errno.ENOSPC), os.strerror(errno.EDQUOT))  # "No space left on device", "Disk quota exceeded"
# Other errors of the file system that name their file, each with its fix.
OS_FIXES = {errno.EROFS: "a read-only file system: choose a writable place, or mount it writable",
            errno.ENAMETOOLONG: "too long for the file system, with the .tmp suffix a file gets while it is written: "
                                "shorten it",
            errno.ELOOP: "a loop of symbolic links: name the file itself",
            errno.ENXIO: "a device or pipe with nothing at its other end: name a file"}


class InputError(ValueError):
    """Bad input (a file, a flag, a config value) that the user can fix; the message says how."""


class ConfigError(InputError):
    """A config value, key or id that the schema or the registries reject (here, below the formats that raise it;
    reranker.core.config re-exports it)."""


class FormatError(InputError):
    """A file that does not follow its format; the message names the file and line."""

    def __init__(self, path: str | os.PathLike, line_no: int | None, message: str):
        where = f"{path}:{line_no}" if line_no is not None else str(path)
        super().__init__(f"{where}: {message}")
        self.path = str(path)
        self.line_no = line_no


def input_error_line(err: BaseException) -> str | None:
    """The one line to print for an input error, or None when `err` is a bug.

    Missing, unreadable or unwritable paths count as input: the OS error names the path. So does a full disk
    (or quota), wherever in the chain of causes it is: stages build each output beside it (`<path>.tmp`,
    formats.atomic) and rename it into place, so nothing partial stands at an output path."""
    if isinstance(err, InputError):
        return str(err)
    full = disk_full(err)
    if full is not None:
        where = f"{full.filename}: " if getattr(full, "filename", None) else ""
        return f"{where}the disk is full: free space and rerun; nothing partial was kept"
    if isinstance(err, (FileNotFoundError, FileExistsError, PermissionError, IsADirectoryError, NotADirectoryError)):
        if err.filename is None:  # raised by hand with the path already in the message
            return str(err)
        fix = {FileNotFoundError: "check the path", PermissionError: "make it writable or choose another path",
               IsADirectoryError: "name a file, not a directory", NotADirectoryError: "a parent of it is a file",
               FileExistsError: "a file stands where a directory must go"}
        return f"{err.filename}: {err.strerror.lower()} ({fix[type(err)]})"
    if isinstance(err, OSError) and err.filename is not None and err.errno in OS_FIXES:
        return f"{err.filename}: {os.strerror(err.errno).lower()} ({OS_FIXES[err.errno]})"
    if isinstance(err, UnicodeDecodeError):
        return f"not UTF-8 text ({err.reason} at byte {err.start}): re-encode the file as UTF-8"
    return None


def disk_full(err: BaseException | None) -> BaseException | None:
    """The error in `err`'s chain of causes that says the disk (or the user's quota) is full, or None."""
    seen = set()
    while err is not None and id(err) not in seen:
        seen.add(id(err))
        if isinstance(err, OSError) and err.errno in FULL:
            return err
        if isinstance(err, sqlite3.OperationalError) and "disk is full" in str(err):  # the score cache
            return err
        if any(words in str(err) for words in FULL_WORDS):  # safetensors, tokenizers: Rust's io::Error as text
            return err
        err = err.__cause__ or err.__context__
    return None


def report(stage: str, err: BaseException) -> int:
    """Print an input error as `<stage>: error: <message>` and return the exit code; re-raise a bug."""
    line = input_error_line(err)
    if line is None:
        raise err
    print(f"{stage}: error: {' '.join(line.split())}", file=sys.stderr)
    return USAGE_ERROR


def keys_checked(entry: object, allowed: set[str], required: set[str], where: str, error: type[InputError] = InputError) -> None:
    """A mapping with every required key and no other, else `error` naming `where` and the keys."""
    if not isinstance(entry, dict):
        raise error(f"{where}: expected a mapping, found {type(entry).__name__}")
    unknown, missing = set(entry) - allowed, required - set(entry)
    if unknown:
        raise error(f"{where}: unknown keys {', '.join(sorted(unknown))} (allowed: {', '.join(sorted(allowed))})")
    if missing:
        raise error(f"{where}: missing {', '.join(sorted(missing))}")
