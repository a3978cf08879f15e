"""The image (`make image`) on a copy of the checkout: as a non-root user, with the network off and the
offline caches mounted read-only, the quick profile reproduces the stored quick tables byte for byte (timing columns, which no
rerun repeats, blanked);
missing mounts fail with one clear line. Run with `make test-image` (pytest -m container); skipped,
with the reason, where no engine or no image exists."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from reranker.reproduction.reference import AFTER_COMPARISON

REPO = Path(__file__).resolve().parent.parent
IMAGE = os.environ.get("BIRCH_IMAGE", "localhost/birch-repro/reranker:0.1.0")
pytestmark = [pytest.mark.container, pytest.mark.slow]


def engine() -> str | None:
    for name in ("docker", "podman"):
        if shutil.which(name) and (name != "docker" or subprocess.run(["docker", "info"], capture_output=True).returncode == 0):
            return name
    return None


@pytest.fixture(scope="module")
def image() -> str:
    name = engine()
    if name is None:
        pytest.skip("no container engine (docker with a daemon, or podman)")
    flags = ["--cgroup-manager=cgroupfs"] if name == "podman" else []
    if subprocess.run([name, *flags, "image", "inspect", IMAGE], capture_output=True).returncode != 0:
        pytest.skip(f"no image {IMAGE}: build it with `make image`")
    return IMAGE


def checkout_copy(tmp: Path) -> Path:
    """The tracked files (and the stored results) in a folder the image's user (uid 1000) owns."""
    copy = tmp / "checkout"
    files = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True).stdout.split(b"\0")
    for name in filter(None, files):
        source = REPO / name.decode()
        if source.is_file():
            (copy / name.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy / name.decode())
    subprocess.run(["chown", "-R", "1000:1000", str(copy)], check=True)
    return copy


def machine_masked(table: Path) -> bytes:
    """A table's bytes with its machine-dependent columns (timings, named in its numbers file) blanked:
    speeds of the machine cannot repeat byte for byte, on the host or in an image."""
    numbers = table.parent.parent / "numbers" / f"{table.stem}.json"
    machine = set(json.loads(numbers.read_text()).get("machine_dependent", [])) if numbers.exists() else set()
    if not machine:
        return table.read_bytes()
    lines, masked = table.read_text().split("\n"), set()
    for i, line in enumerate(lines):
        cells = line.split(" | ")
        if i + 1 < len(lines) and lines[i + 1].startswith("|---"):
            masked = {j for j, cell in enumerate(cells) if cell.strip("| ") in machine}
        elif line.startswith("| ") and masked:
            lines[i] = " | ".join("(machine)" if j in masked and j < len(cells) - 1 else
                                  "(machine) |" if j in masked else cell for j, cell in enumerate(cells))
        elif not line.startswith("|"):
            masked = set()
    return "\n".join(lines).encode()


def result_tables(folder: Path, suffixes: tuple[str, ...] = (".md",)) -> list[Path]:
    """A run's tables that hold results, sorted. The tables built after the comparison (resources: what the
    run cost, in minutes and in jobs that follow how scoring was split) are left out: no two runs give them alike."""
    return sorted(p for p in folder.glob("*") if p.suffix in suffixes and p.stem not in AFTER_COMPARISON)


def differing_tables(made: Path) -> list[str]:
    """Stored quick result tables that the run made otherwise (or did not make)."""
    stored = result_tables(REPO / "results" / "quick" / "tables")
    assert stored
    return [p.name for p in stored if not (made / p.name).exists() or machine_masked(made / p.name) != machine_masked(p)]


def run(*args: str, env: dict | None = None, timeout: int = 3 * 3600) -> subprocess.CompletedProcess:
    """containers/run; on a timeout the container is stopped too (killing the client leaves it running)."""
    try:
        return subprocess.run([str(REPO / "containers" / "run"), *args], capture_output=True, text=True,
                              env=env or os.environ.copy(), timeout=timeout)
    except subprocess.TimeoutExpired:
        name = engine()
        flags = ["--cgroup-manager=cgroupfs"] if name == "podman" else []
        running = subprocess.run([name, *flags, "ps", "-q", "--filter", f"ancestor={IMAGE}"],
                                 capture_output=True, text=True).stdout.split()
        if running:
            subprocess.run([name, *flags, "kill", *running], capture_output=True)
        raise


def test_quick_profile_in_the_image_reproduces_the_stored_tables(image, tmp_path, birch_data):
    copy = checkout_copy(tmp_path)
    done = run("--image", image, "--checkout", str(copy), "--user", "1000:1000",
               "--profile", "workflow/profiles/quick", "--cores", "2")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    different = differing_tables(copy / "runs" / "quick" / "tables")
    assert not different, f"tables made in the image differ from results/quick: {different}"


def test_missing_caches_and_a_read_only_checkout_are_one_clear_line(image, tmp_path):
    copy = checkout_copy(tmp_path)
    bare = {k: v for k, v in os.environ.items() if k not in {"HF_HOME", "IR_DATASETS_MIRROR", "IR_DATASETS_HOME", "BIRCH_DATA"}}
    missing = run("--image", image, "--checkout", str(copy), "--user", "1000:1000", "-n", env=bare, timeout=300)
    assert missing.returncode == 2 and re.search(r"^birch-repro: no Hugging Face cache at /cache/hf_home", missing.stderr, re.M)
    assert "Traceback" not in missing.stderr
    (copy / "results").chmod(0o555)
    read_only = run("--image", image, "--checkout", str(copy), "--user", "1000:1000", "-n", timeout=300)
    assert read_only.returncode == 2 and "birch-repro: /work/results is not writable by uid 1000" in read_only.stderr
    assert "Traceback" not in read_only.stderr



def apptainer_ready() -> str | None:
    """Why the Apptainer check cannot run here, or None."""
    if not (REPO / "containers" / "reranker.sif").is_file():
        return "no containers/reranker.sif: build it with `containers/build --sif`"
    if shutil.which("apptainer") is None and not Path(os.environ.get(
            "APPTAINER_ROOTFS", "/var/lib/birch-repro/apptainer-sid"), "usr/bin/apptainer").exists():
        return "no apptainer on PATH and no rootfs from `containers/apptainer setup`"
    return None


def test_quick_profile_with_apptainer_reproduces_the_stored_tables(tmp_path, birch_data):
    """`snakemake --sdm apptainer` (containers/snakemake-apptainer) with the SIF: the same tables."""
    reason = apptainer_ready()
    if reason:
        pytest.skip(reason)
    copy = checkout_copy(tmp_path)
    (copy / "containers" / "reranker.sif").symlink_to(REPO / "containers" / "reranker.sif")
    cache = tmp_path / "ir_datasets"
    shutil.copytree(os.environ.get("IR_DATASETS_MIRROR") or os.environ["IR_DATASETS_HOME"], cache)
    subprocess.run(["chmod", "-R", "u+w", str(cache)], check=True)  # copytree kept the mirror's read-only modes
    # Every cache reached through a symlinked folder, as on machines whose data disks are linked in:
    # the wrapper must bind the links' targets (else: "mount source ... doesn't exist").
    linked = {}
    for name, value in (("HF_HOME", os.environ["HF_HOME"]), ("BIRCH_DATA", str(birch_data)), ("IR_DATASETS_HOME", str(cache))):
        link = tmp_path / f"via-{name.lower()}"
        link.symlink_to(Path(value).resolve().parent, target_is_directory=True)
        linked[name] = str(link / Path(value).resolve().name)
    env = {**os.environ, **linked}
    done = subprocess.run([str(copy / "containers" / "snakemake-apptainer"), "--profile", "workflow/profiles/quick",
                           "--cores", "2"], cwd=copy, env=env, capture_output=True, text=True, timeout=3 * 3600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-6000:]
    different = differing_tables(copy / "runs" / "quick" / "tables")
    assert not different, f"tables made with Apptainer differ from results/quick: {different}"
