"""One command at a time per lock file: `python -m reranker.exclusive LOCK COMMAND...`.

`make run` runs Snakemake under it with `--nolock`, one lock per run folder, instead of Snakemake's
own directory lock: that one outlives a SIGKILL (a machine that went away) and then refuses the
resume until someone runs `snakemake --unlock`, which would also drop the locks of other runs in the
same checkout. An flock is the kernel's: it ends with the process that held it, however it ended.
Exit status: the command's, or 75 (EX_TEMPFAIL) when another command holds the lock.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reranker.formats.atomic import file_lock

BUSY = 75


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) < 2:
        print("usage: python -m reranker.exclusive LOCK COMMAND...", file=sys.stderr)
        return 2
    lock = Path(argv[0])
    with file_lock(lock, wait=False) as held:
        if not held:
            print(f"exclusive: {lock} is held by another run of this folder; wait for it to end", file=sys.stderr)
            return BUSY
        return subprocess.run(argv[1:]).returncode  # the lock is released when the command ends


if __name__ == "__main__":
    sys.exit(main())
