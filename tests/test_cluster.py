"""The Slurm profile against a real Slurm: a one-node cluster on the loopback address
(workflow/cluster/slurm-local, Debian's slurm-wlm and munge). The quick profile through Slurm, with
scoring split into parts, reproduces the stored quick tables byte for byte (timing columns blanked);
a score job cancelled mid-way resumes on resubmission without rescoring its finished shards.
Run with `make test-cluster` (pytest -m cluster); skipped, with the reason, where Slurm cannot start."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
import yaml
from test_container import checkout_copy, differing_tables  # the copy is uid 1000's; root's jobs write there too

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.cluster, pytest.mark.slow]


@pytest.fixture(scope="module")
def slurm() -> dict[str, str]:
    """The environment that reaches the local cluster (started here if it is not running)."""
    if os.geteuid() != 0 and shutil.which("sinfo") is None:
        pytest.skip("no Slurm here, and starting the local one needs root")
    started = subprocess.run([str(REPO / "workflow" / "cluster" / "slurm-local"), "start"], capture_output=True, text=True)
    if started.returncode != 0:
        pytest.skip(f"the local Slurm did not start: {started.stderr.strip()[-500:]}")
    conf = started.stdout.strip().rpartition("SLURM_CONF=")[2]
    return {**os.environ, "SLURM_CONF": conf}


def local_profile(copy: Path) -> Path:
    """The repo's Slurm profile, with what a one-node test cluster needs: small memory requests, no
    account, squeue for job states (no accounting daemon), quick status checks."""
    profile = yaml.safe_load((REPO / "workflow" / "profiles" / "slurm" / "config.yaml").read_text())
    profile["default-resources"] = {**profile["default-resources"], "mem_mb": 2000, "runtime": 60}
    profile["set-resources"] = {rule: {**spec, "mem_mb": 4000, "runtime": 120} for rule, spec in profile["set-resources"].items()}
    profile.update({"slurm-no-account": True, "slurm-status-command": "squeue", "slurm-init-seconds-before-status-checks": 2,
                    "seconds-between-status-checks": 5, "jobs": 4})
    directory = copy / ".test-slurm-profile"
    directory.mkdir()
    (directory / "config.yaml").write_text(yaml.safe_dump(profile))
    return directory


def snakemake(copy: Path, env: dict, *args: str, timeout: int = 4 * 3600) -> subprocess.CompletedProcess:
    """Targets go before --configfile, which takes every argument after it."""
    return subprocess.run(snakemake_command(copy, *args), cwd=copy, env=env, capture_output=True, text=True, timeout=timeout)


def snakemake_command(copy: Path, *args: str) -> list[str]:
    profile = copy / ".test-slurm-profile"
    if not profile.exists():
        local_profile(copy)
    return [shutil.which("snakemake") or "snakemake", "--workflow-profile", "workflow/profiles/quick", "--profile", str(profile), *args]


def test_quick_profile_through_slurm_reproduces_the_stored_tables(slurm, tmp_path, birch_data):
    copy = checkout_copy(tmp_path)
    # --configfile replaces the profile's list: quick.yaml is named again
    (copy / "parts.yaml").write_text("score: {parts: 2, shard_size: 100}\n")  # scatter/gather on every Birch score
    done = snakemake(copy, slurm, "--configfile", "workflow/config/quick.yaml", "parts.yaml")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    gathered = list((copy / "runs" / "quick" / "work" / "scores").rglob("*.part2-of-2.tsv.meta.json"))
    assert gathered, "no score job was split into parts"
    different = differing_tables(copy / "runs" / "quick" / "tables")
    assert not different, f"tables made through Slurm differ from results/quick: {different}"


def test_a_cancelled_score_job_resumes_without_rescoring_finished_shards(slurm, tmp_path, birch_data):
    copy = checkout_copy(tmp_path)
    (copy / "shards.yaml").write_text("score: {shard_size: 40}\n")
    target = "runs/quick/work/scores/cranfield/minilm-l3-bi-encoder/bm25_rm3.k5.sentences.tsv"
    inputs = snakemake(copy, slurm, "runs/quick/work/segments/cranfield/bm25_rm3.k5.sentences.jsonl",  # the score job's inputs
                       "runs/quick/work/collections/cranfield/qrels.txt", "--configfile", "workflow/config/quick.yaml", "shards.yaml")
    assert inputs.returncode == 0, inputs.stderr[-6000:]
    process = subprocess.Popen(snakemake_command(copy, target, "--configfile", "workflow/config/quick.yaml", "shards.yaml"),
                               cwd=copy, env=slurm, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    shards = copy / (target + ".shards")
    deadline = time.monotonic() + 1800
    while len(list(shards.glob("shard-*.tsv"))) < 2 and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.5)
    finished = len(list(shards.glob("shard-*.tsv")))
    jobs = subprocess.run(["squeue", "-h", "-o", "%i", "-t", "RUNNING,PENDING"], env=slurm, capture_output=True, text=True)
    subprocess.run(["scancel", *jobs.stdout.split()], env=slurm, check=True)
    process.wait(timeout=600)
    assert finished >= 2 and not (copy / target).exists(), "the job finished or failed before it could be cancelled"

    again = snakemake(copy, slurm, target, "--configfile", "workflow/config/quick.yaml", "shards.yaml")
    assert again.returncode == 0, again.stderr[-6000:]
    meta = json.loads((copy / (target + ".meta.json")).read_text())
    rescored = meta["shards"] - meta["shards_resumed"]
    print(f"{meta['shards']} shards, {finished} finished before scancel, {meta['shards_resumed']} resumed, {rescored} scored after")
    assert meta["shards_resumed"] >= finished
