"""One run per run folder, for every entry point: the Snakefile takes the folder's lock (reranker/workflow/run_lock.py).
Two real snakemake runs on one folder: tests/test_faults.py."""

from __future__ import annotations

import signal
import subprocess
import sys
from pathlib import Path

from reranker.workflow.run_lock import RunLock, holder_line

REPO = Path(__file__).resolve().parent.parent


def test_a_killed_holder_leaves_nothing_to_unlock(tmp_path):
    """SIGKILL ends an flock with its process: the next run takes the folder, no `--unlock`."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from reranker.workflow.run_lock import RunLock; "
                               "lock = RunLock(sys.argv[1]); print(lock.held, flush=True); time.sleep(300)", str(tmp_path)],
                              cwd=REPO, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        busy = RunLock(tmp_path)
        assert not busy.held and busy.holder.startswith(f"pid {holder.pid} on ") and ": -c " in busy.holder
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    finally:
        holder.kill()
        holder.stdout.close()
    lock = RunLock(tmp_path)
    assert lock.held
    lock.release()


def test_the_holder_line_names_snakemake_however_it_was_started():
    assert holder_line(["/venv/lib/python3.11/site-packages/snakemake/__main__.py", "--cores", "2", "my file"]).endswith(
        ": snakemake --cores 2 'my file'")
    assert holder_line(["/venv/bin/snakemake", "-n"]).endswith(": snakemake -n")
