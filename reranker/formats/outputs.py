"""One discipline for what a stage writes, checked on its command line before it reads anything.

An output (`--out`, `--evidence-out`, `--params-out`, `--figure`, `index --index`) is refused, in one line and with nothing changed,
where it is also one of the stage's inputs (the same file under another flag), where it is a symbolic link (the
write would replace the link, not go through it) or a device, pipe or socket, and while another process writes it:
each output is held by an flock of its own (in the system's temporary folder, keyed by its real path) for the
stage's whole run, so two writers of one output never both succeed. A number given to any flag must be finite:
`nan` and `inf` pass a float's parsing and every bound after it. Files are then written beside their place and
renamed into it (reranker.formats.atomic), which also refuses a folder holding files the stage did not write.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from reranker.formats.errors import InputError

OUTPUT_FLAGS = ("--out", "--evidence-out", "--params-out", "--figure")
STAGE_OUTPUT_FLAGS = {"index": ("--index",)}  # where a flag names an output in this stage only (retrieve reads --index)
# Folder outputs, by stage: the flag and the file that marks a folder as the stage's own (the checkpoint's meta,
# reranker.neural.models.META_FILE; the index's build record, reranker.stages.index.BUILD_FILE): checked before the
# stage reads anything, not when it publishes after minutes of work.
OUTPUT_FOLDERS = {"train": ("--out", "reranker.json"), "index": ("--index", "build.json")}
NOT_FINITE = {"nan", "inf", "infinity"}
LOCKS = Path(tempfile.gettempdir()) / f"reranker-output-locks-{os.getuid()}"  # per user: another's folder is not writable


def flag_values(argv: Sequence[str]) -> list[tuple[str, str]]:
    """(flag, value) for every value on a command line: `--flag value [value ...]` and `--flag=value`."""
    pairs: list[tuple[str, str]] = []
    flag = None
    for token in argv:
        if token.startswith("--"):
            flag, _, value = token.partition("=")
            if value:
                pairs.append((flag, value))
        elif flag is not None:
            pairs.append((flag, token))
    return pairs


def refuse_unsafe_output(path: str | os.PathLike, what: str = "the output") -> None:
    """An output path must not be a symbolic link or a special file (the write would replace it)."""
    path = Path(path)
    if path.is_symlink():
        raise InputError(f"{path}: {what} is a symbolic link, which writing would replace: name the file it points to, "
                         "or another path")
    try:
        mode = path.stat().st_mode
    except (FileNotFoundError, NotADirectoryError):  # not there yet (or under a file: the write says so)
        return
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        raise InputError(f"{path}: {what} is a device, pipe or socket, not a file: name a file")


def refuse_foreign_dir(path: Path, last: str | None) -> None:
    """A folder output may replace only what the stage wrote there: an existing folder is taken where it is empty,
    holds only folders (a training chain's earlier stages), or carries the stage's mark (`last`); one holding other
    files is refused, as publishing would delete them."""
    refuse_unsafe_output(path)
    if not path.is_dir():
        if path.exists():
            raise InputError(f"{path}: a file stands where the output folder goes: remove it, or choose another path")
        return
    if last is not None and (path / last).exists():
        return
    files = sorted(item.name for item in path.iterdir() if not item.is_dir())
    if files:
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise InputError(f"{path}: an existing folder holding files this stage did not write ({shown}), which writing "
                         "the output would delete: choose an empty or new folder")


def _same(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def outputs_of(stage: str, argv: Sequence[str]) -> list[tuple[str, str]]:
    flags = OUTPUT_FLAGS + STAGE_OUTPUT_FLAGS.get(stage, ())
    return [(flag, value) for flag, value in flag_values(argv) if flag in flags]


def check(stage: str, argv: Sequence[str]) -> None:
    """Refuse non-finite numbers and unsafe outputs on `argv` (see the module's docstring), naming the flag."""
    pairs = flag_values(argv)
    for flag, value in pairs:
        if value.strip().lower().lstrip("+-") in NOT_FINITE:
            raise InputError(f"{flag} {value}: not a finite number")
    for flag, value in outputs_of(stage, argv):
        refuse_unsafe_output(value, f"{flag}")
        for other, given in pairs:
            if other != flag and _same(value, given):
                raise InputError(f"{value}: given as {other} (read) and as {flag} (written): the output would replace "
                                 "its input; write it elsewhere")
        if OUTPUT_FOLDERS.get(stage, ("", ""))[0] == flag:
            refuse_foreign_dir(Path(value), OUTPUT_FOLDERS[stage][1])


@contextlib.contextmanager
def held(stage: str, argv: Sequence[str]) -> Iterator[None]:
    """Check `argv` (`check`), then hold each output's lock while the block runs; an output another process holds
    is refused in one line."""
    import fcntl

    check(stage, argv)
    with contextlib.ExitStack() as stack:
        for flag, value in outputs_of(stage, argv):
            key = hashlib.sha1(os.path.realpath(value).encode()).hexdigest()
            LOCKS.mkdir(parents=True, exist_ok=True)
            handle = stack.enter_context(open(LOCKS / key, "a"))
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                raise InputError(f"{value}: another process is writing it ({flag}); wait for it to end, or write "
                                 "elsewhere") from None
            stack.callback(fcntl.flock, handle, fcntl.LOCK_UN)
        yield
