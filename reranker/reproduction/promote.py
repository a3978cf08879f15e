"""Promote a run to be the stored reference (`compare --promote`): all of it or, after a kill, nothing half-done.

Every file is first copied into a staging folder beside the reference (`<reference>.promote.tmp`, on the
same file system, so that a rename moves it). Then a marker (`<reference>/.promote-in-progress`: the run,
and every file to replace or delete) is written, each file is renamed into place (`os.replace`: a file is
old or new, never truncated), the marker is removed and the staging folder with it. Killed before the
marker, the reference is untouched (the next promote clears the staging folder); killed after it, the
reference mixes old and new files until a promote finishes the swap from the staging folder (`finish`,
which every promote runs first). `compare` refuses a reference holding the marker (`refuse_if_interrupted`).
Two promotes into one reference would stage into one folder and swap at once: each holds a lock on
`<reference>/.promote.lock` (an flock, gone with its holder however it ends), and a second is refused.
"""

from __future__ import annotations

import json
import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from reranker.formats.atomic import file_lock, write_json
from reranker.formats.errors import FormatError, InputError
from reranker.formats.layout import PUBLISHED, PUBLISHED_FILES

MARKER = ".promote-in-progress"
LOCK = ".promote.lock"
# Seconds to sleep after each staged file and each rename: only so that a test can SIGKILL a promote midway
# (tests/test_compare.py); unset, no pause.
PAUSE = "BIRCH_PROMOTE_PAUSE"


def staging_dir(reference: Path) -> Path:
    return reference.with_name(reference.name + ".promote.tmp")


def _pause() -> None:
    if os.environ.get(PAUSE):
        time.sleep(float(os.environ[PAUSE]))


def interrupted(reference: Path) -> dict | None:
    """The marker of an interrupted promote into `reference`, or None."""
    path = reference / MARKER
    if not path.exists():
        return None
    try:
        marker = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError):
        marker = None
    if not isinstance(marker, dict) or not {"run", "replace", "delete"} <= set(marker):
        raise FormatError(path, None, f"not a promote marker; {reference} may mix two runs' files: restore it "
                                      f"(git checkout -- {reference}), delete the marker and promote again")
    return marker


def refuse_if_interrupted(reference: Path) -> None:
    """An InputError where a promote into `reference` was interrupted: its numbers are not one run's."""
    marker = interrupted(reference)
    if marker is not None:
        raise InputError(f"{reference / MARKER}: a promote of {marker['run']} was interrupted, so {reference} mixes old "
                         f"and new files; finish it first: python -m reranker compare --config {marker['run']}/config.yaml "
                         "--promote")


def finish(reference: Path) -> int | None:
    """Finish an interrupted promote into `reference` from its staging folder: the number of files it still moved
    or deleted, or None where none was interrupted. A staging folder without a marker (killed while staging) goes."""
    marker, staging = interrupted(reference), staging_dir(reference)
    if marker is None:
        shutil.rmtree(staging, ignore_errors=True)
        return None
    done = 0
    for relative in marker["replace"]:
        if (staging / relative).exists():  # else moved before the kill
            _move(staging / relative, reference / relative)
            done += 1
    for relative in marker["delete"]:
        if (reference / relative).exists():
            (reference / relative).unlink()
            done += 1
    (reference / MARKER).unlink()
    shutil.rmtree(staging, ignore_errors=True)
    return done


def _move(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    os.replace(source, target)


def _files_under(folder: Path) -> set[Path]:
    """Every file below `folder`, relative to it (none if it does not exist)."""
    return {path.relative_to(folder) for path in folder.rglob("*") if path.is_file()} if folder.is_dir() else set()


def plan(run_dir: Path, reference: Path, folders: Sequence[str] = ()) -> tuple[list[Path], list[Path]]:
    """(files the run made; stored files it did not make), relative to either folder: a partial run's promote
    keeps the latter unless pruned. `folders`: the papers' published folders, beside the suite's."""
    made, not_made = [], []
    for name in dict.fromkeys((*PUBLISHED, *folders)):
        ours = _files_under(run_dir / name)
        made += [Path(name) / relative for relative in sorted(ours)]
        not_made += [Path(name) / relative for relative in sorted(_files_under(reference / name) - ours)]
    made += [Path(name) for name in PUBLISHED_FILES if (run_dir / name).is_file()]
    return made, not_made


def promote(run_dir: Path, reference: Path, prune: bool = False,
            folders: Sequence[str] = ()) -> tuple[int | None, list[Path], list[Path]]:
    """Copy a run's published files over the reference, all or none (the module's docstring), after finishing an
    interrupted promote. A stored file that the run did not make (a part not rerun, or a table since removed) is
    kept; `prune` deletes it. Returns (the files the interrupted promote still moved or deleted, or None where
    there was none; the reference's files replaced; those kept or pruned). `folders`: the papers' published
    folders (core.settings.promote), beside the suite's."""
    if run_dir.resolve() == reference.resolve():
        raise InputError(f"{run_dir}: the run folder is the reference itself, so there is nothing to promote; "
                         "give the run a run_dir of its own in the configuration")
    with file_lock(reference / LOCK, wait=False) as held:
        if not held:
            raise InputError(f"{reference}: another promote into it is running (it holds {reference / LOCK}); "
                             "let it end, then compare, or promote again")
        return _promote(run_dir, reference, prune, folders)


def _promote(run_dir: Path, reference: Path, prune: bool,
             folders: Sequence[str]) -> tuple[int | None, list[Path], list[Path]]:
    finished = finish(reference)
    made, not_made = plan(run_dir, reference, folders)
    staging = staging_dir(reference)
    shutil.rmtree(staging, ignore_errors=True)
    for relative in made:
        (staging / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(run_dir / relative, staging / relative)
        _pause()
    reference.mkdir(parents=True, exist_ok=True)
    write_json(reference / MARKER, {"run": str(run_dir), "replace": [str(p) for p in made],
                                    "delete": [str(p) for p in not_made] if prune else []})
    for relative in made:
        _move(staging / relative, reference / relative)
        _pause()
    if prune:
        for relative in not_made:
            (reference / relative).unlink(missing_ok=True)
    (reference / MARKER).unlink()
    shutil.rmtree(staging, ignore_errors=True)
    return finished, [reference / p for p in made], [reference / p for p in not_made]
