"""One run per run folder, whatever starts it: `make run`, a plain `snakemake` (any profile), the containers.

The Snakefile takes an flock on `<run_dir>/.lock` as it is read, before it writes anything there, and the
main Snakemake process keeps it until it ends. A kernel flock ends with its process however that ends, so a
SIGKILLed run resumes with nothing to unlock; Snakemake's own lock outlives a kill, so the profiles and
`make run` turn it off (`--nolock`). Jobs that read the Snakefile again (`--mode subprocess`: `run:` jobs;
`--mode remote`: cluster jobs) belong to the holder and take nothing.

A second invocation on a held folder still reads the Snakefile, writing nothing: a dry run, `--lint`,
`--summary` or `--report` beside a run work. One that would run jobs stops at `onstart`, before it
schedules any: it would rerun the holder's jobs, and Snakemake deletes a failed job's outputs.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import socket
import sys
import time
from datetime import datetime
from pathlib import Path

from reranker.formats.atomic import file_lock

NAME = ".lock"
BUSY = 75  # EX_TEMPFAIL: the same command works once the holder has ended


def holder_line(argv: list[str] | None = None) -> str:
    """Who holds a lock: pid, host, start and command (a pid alone can be another namespace's)."""
    argv = sys.argv if argv is None else argv
    prog = Path(argv[0]) if argv else Path("python")
    name = prog.parent.name if prog.name == "__main__.py" else prog.name  # `python -m snakemake`
    since = datetime.now().astimezone().isoformat(timespec="seconds")
    return f"pid {os.getpid()} on {socket.gethostname()} since {since}: {shlex.join([name, *argv[1:]])}"


def read_holder(path: Path, tries: int = 20) -> str:
    """The holder's line; a holder that has just taken the lock may not have written it yet."""
    for _ in range(tries):
        with contextlib.suppress(OSError):
            text = path.read_text(encoding="utf-8", errors="replace").strip()
            if text:
                return " ".join(text.split())
        time.sleep(0.05)
    return "another process (it has not said which)"


class RunLock:
    """Try the run folder's lock at once; `held` says whether this process has it (for its lifetime)."""

    def __init__(self, run_dir: str | os.PathLike):
        self.run_dir = str(run_dir)
        self.path = Path(run_dir) / NAME
        self._stack = contextlib.ExitStack()
        self.held = self._stack.enter_context(file_lock(self.path, wait=False))
        if self.held:
            # Written in place: a file renamed over it would be a new inode, a second lock.
            with open(self.path, "w", encoding="utf-8") as f:
                f.write(holder_line() + "\n")
            self.holder = None
        else:
            self._stack.close()
            self.holder = read_holder(self.path)

    def busy(self) -> str:
        return f"run folder {self.run_dir} is in use by {self.holder}"

    def note(self) -> None:
        """Beside a holder: say so once, on stderr (a dry run shows that run's jobs as incomplete)."""
        if not self.held:
            print(f"note: {self.busy()}; reading only, a run here is refused", file=sys.stderr)

    def refuse(self) -> None:
        """Stop a run on a folder another process holds: one line, exit BUSY."""
        if not self.held:
            print(f"snakemake: error: {self.busy()}; wait for it to end or stop it (it resumes), "
                  f"or give this run another run_dir", file=sys.stderr)
            sys.stdout.flush()
            raise SystemExit(BUSY)

    def release(self) -> None:
        self._stack.close()
        self.held = False
