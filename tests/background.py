"""Snakemake runs started at the session's start and awaited by the tests that read them.

The quick DAG runs two one-thread jobs at a time but waits on its longest chains (training before scoring),
and the rest of the suite mostly runs on one thread: side by side they kept 2 cores 94% busy, and `make
test` took 27 minutes instead of 77 (the target: under 35 minutes on 2 cores).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


class BackgroundRun:
    """`python -m snakemake <args>` in the checkout, its output kept in `log`; `wait()` gives what `run()` would."""

    def __init__(self, args: list[str], log: Path, run_dir: Path, env: dict[str, str] | None = None,
                 nice: int = 0) -> None:
        self.args = [*lowered(nice), sys.executable, "-m", "snakemake", *args]
        self.log = log
        self.run_dir = run_dir
        log.parent.mkdir(parents=True, exist_ok=True)
        with log.open("w") as sink:  # the child keeps its own descriptor
            # its own process group: stop() ends Snakemake and the jobs it started, nothing else
            self.process = subprocess.Popen(self.args, cwd=REPO, stdout=sink, stderr=subprocess.STDOUT, text=True,
                                            env={**os.environ, **(env or {})}, start_new_session=True)
        self.started_at = time.time()
        self.stopped = False

    def wait(self, timeout: float = 3600) -> subprocess.CompletedProcess:
        try:
            self.process.wait(timeout=timeout)  # at once where it has ended
        except subprocess.TimeoutExpired:
            self.stop()
            raise
        return subprocess.CompletedProcess(self.args, self.process.returncode, stdout=self.log.read_text(), stderr="")

    def took(self) -> float | None:
        """Seconds from the start to the run's last line (its log's last write), once it has ended of itself."""
        return None if self.stopped or self.process.poll() is None else self.log.stat().st_mtime - self.started_at

    def stop(self) -> None:
        """SIGTERM (Snakemake stops its jobs), then SIGKILL to the group if it lingers."""
        if self.process.poll() is not None:
            return
        self.stopped = True
        for sig, grace in ((signal.SIGTERM, 60), (signal.SIGKILL, 10)):
            try:
                os.killpg(self.process.pid, sig)
                self.process.wait(timeout=grace)
                return
            except ProcessLookupError:
                return
            except subprocess.TimeoutExpired:
                continue


def lowered(nice: int) -> list[str]:
    """A command prefix that runs the command at a lower CPU priority: a nice value, and the same for its session's
    scheduling group where the kernel groups by session (autogroup, as on most desktops and CI machines: there a
    nice value counts only within the group, and the run has a session of its own). `exec`: the same process."""
    if not nice:
        return []
    return ["sh", "-c", f'echo {nice} > /proc/self/autogroup 2>/dev/null; exec nice -n {nice} "$@"', "sh"]


QUICK = ["--profile", "workflow/profiles/quick", "--cores", "2"]
# The determinism check's second run: part of the quick DAG with the same configuration, from nothing, so
# each file it makes must equal the whole run's byte for byte (tests/test_workflow.py). Chosen to cover every
# stage kind but NTNU's own (which reuse segment, train, score and fuse) at the least cost: export, folds,
# index, retrieve (BM25, and RM3 on Vaswani), segment, train (the shared start `scifact-soft-80` on SciFact and
# the classics' titles, then two Radboud rows from it on Cranfield), score (Vaswani's sentences, Cranfield's
# documents), fuse (Birch's CV fusion and an aggregation), join, evaluate, and two tables: 46 jobs.
DETERMINISM_TARGETS = (
    "tables/radboud_3_5.md",                        # Radboud: the baseline and a regression row, fold 1
    "tables/dataset_stats.md",
    "work/eval/vaswani/birch.scifact-soft-80.3S.json",  # Birch: the fusion chosen by 5-fold CV
    "work/eval/vaswani/maxp.scifact-soft-80.sentences.json",
)


# The second run is read only by the last test, while the quick DAG is the suite's critical path (the `dag` tests
# wait for it) and at first trains the same checkpoint as the second: the second takes the cores the others leave.
# (The suite itself yielding to both, tried, made it the critical path instead: 35:00 -> 39:22.)
SECOND_NICE = 10


def start_dag_runs(root: Path) -> dict[str, BackgroundRun]:
    """The quick profile's whole DAG and the determinism check's part of it, each into its own run folder; the
    whole DAG's stages record the files they read into `opened/` beside its run folder (reranker/core/opened.py)."""
    quick, second = root / "quick" / "run", root / "second" / "run"
    targets = [str(second / target) for target in DETERMINISM_TARGETS]  # before --config, which takes the rest
    opened = {"BIRCH_OPENED": str(root / "quick" / "opened")}
    return {"quick": BackgroundRun([*QUICK, "--config", f"run_dir={quick}"], root / "quick.log", quick, opened),
            "second": BackgroundRun([*targets, *QUICK, "--config", f"run_dir={second}"], root / "second.log", second,
                                    nice=SECOND_NICE)}
