"""The files a stage read, recorded where `BIRCH_OPENED` names a folder: the declared-inputs check.

`python -m reranker <stage>` calls `record()` first. With `BIRCH_OPENED` set, a Python audit hook (PEP 578)
notes every file the process opens for reading and every folder it lists, and at exit writes
`<BIRCH_OPENED>/<pid>.json`: `{"argv": [...], "cwd": ..., "read": [...], "listed": [...]}`, absolute paths.
tests/test_declared_inputs.py matches each record with the job whose command it was and checks that every
file it read from the run folder or the data folder was a declared input of the job's rule (Snakemake reruns
a job when an input changes, and orders it after the job that makes it: an undeclared read is neither).
Without the variable nothing is installed: no cost.
"""

from __future__ import annotations

import atexit
import json
import os
import sys

VARIABLE = "BIRCH_OPENED"
_WRITE = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC


def record(argv: list[str]) -> None:
    folder = os.environ.get(VARIABLE)
    if not folder:
        return
    read: set[str] = set()
    listed: set[str] = set()

    def hook(event: str, args: tuple) -> None:
        if event == "open":
            path, mode, flags = args
            if not isinstance(path, (str, bytes, os.PathLike)) or isinstance(path, int):
                return
            writes = any(c in (mode or "") for c in "wax+") if mode else bool((flags or 0) & _WRITE)
            if not writes:
                read.add(os.path.abspath(os.fsdecode(path)))
        elif event in ("os.listdir", "os.scandir") and args and isinstance(args[0], (str, bytes, os.PathLike)):
            listed.add(os.path.abspath(os.fsdecode(args[0])))

    def write() -> None:
        os.makedirs(folder, exist_ok=True)
        document = {"argv": argv, "cwd": os.getcwd(), "read": sorted(read), "listed": sorted(listed)}
        with open(os.path.join(folder, f"{os.getpid()}.json"), "w") as out:
            json.dump(document, out)

    sys.addaudithook(hook)
    atexit.register(write)
