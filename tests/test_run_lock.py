"""One run per run folder, for every entry point: the Snakefile takes the folder's lock (reranker/run_lock.py),
so a second `snakemake` on a folder in use is refused before it schedules a job and the first run's
outputs stay as it made them. Real Snakemake processes on Cranfield; the first holds its run in a job
that waits for the test's gate file (tests/plugins/gated_paper.smk)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from reranker.run_lock import BUSY, NAME, RunLock, holder_line
from tests.test_plugins import LAYER

REPO = Path(__file__).resolve().parent.parent


def snakemake(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", "1", *args]


def layer(tmp_path: Path, name: str, run_dir: Path, gate: Path, caption: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**LAYER, "run_dir": str(run_dir),
                                    "plugins": [*LAYER["plugins"], "tests.plugins.gated_paper"],
                                    "experiments": {"fake_paper": {"collection": "cranfield", "caption": caption},
                                                    "gated_paper": {"collection": "cranfield", "gate": str(gate)}}}))
    return path


def wait_for(log: Path, text: str, process: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert text in log.read_text(), log.read_text()[-3000:]


def test_a_second_snakemake_on_a_folder_in_use_is_refused_and_the_first_run_finishes(tmp_path, birch_data):
    run_dir, gate = tmp_path / "run", tmp_path / "gate"
    mine, other = layer(tmp_path, "mine", run_dir, gate, "mine"), layer(tmp_path, "other", run_dir, gate, "other")
    docs, held = run_dir / "work" / "collections" / "cranfield" / "docs.jsonl", run_dir / "work" / "gated" / "cranfield.count"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    log = tmp_path / "first.log"
    with open(log, "w") as sink:
        first = subprocess.Popen(snakemake("--configfile", str(mine), "--", str(held)), cwd=REPO, stdout=sink,
                                 stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_for(log, "rule gated_count:", first)  # the export is done; its job waits, in a child holding nothing
        made = docs.read_bytes(), docs.stat().st_mtime_ns
        config = (run_dir / "config.yaml").read_bytes()

        # A real run with another configuration, forcing the first's finished job again: refused, one line.
        second = subprocess.run(snakemake("--forcerun", "export_collection", "--configfile", str(other), "--", str(held)),
                                cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
        assert second.returncode == BUSY, second.stderr[-3000:]
        errors = [line for line in second.stderr.splitlines() if "error" in line.lower()]
        assert len(errors) == 1 and errors[0].startswith("snakemake: error: run folder "), second.stderr[-3000:]
        assert f"{run_dir} is in use by pid {first.pid} " in errors[0] and "--configfile" in errors[0], errors[0]
        assert "Traceback" not in second.stderr and "rule export_collection:" not in second.stdout + second.stderr

        # A dry run beside it reads and writes nothing.
        dry = subprocess.run(snakemake("-n", "--configfile", str(other), "--", str(held)), cwd=REPO, capture_output=True,
                             text=True, env=env, timeout=300)
        assert dry.returncode == 0 and f"note: run folder {run_dir} is in use" in dry.stderr, dry.stderr[-3000:]
        assert (run_dir / "config.yaml").read_bytes() == config  # the first's, not the other configuration's

        gate.touch()
        assert first.wait(timeout=300) == 0, log.read_text()[-3000:]
        assert "note: run folder" not in log.read_text()  # its `run:` job's child read the Snakefile too, as the run's
    finally:
        gate.touch()
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert (docs.read_bytes(), docs.stat().st_mtime_ns) == made
    assert held.read_text() == f"{len(made[0].splitlines())} documents, counted in a child process\n"
    lock = RunLock(run_dir)  # ended with its holder: the next run takes it
    assert lock.held and (run_dir / NAME).read_text().startswith(f"pid {os.getpid()} ")
    lock.release()


def test_a_killed_holder_leaves_nothing_to_unlock(tmp_path):
    """SIGKILL ends an flock with its process: the next run takes the folder, no `--unlock`."""
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from reranker.run_lock import RunLock; "
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
