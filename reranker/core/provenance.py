"""Provenance of a set of numbers: the command, the git commit, package versions, input checksums."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from reranker.formats.text import file_sha256


def portable_name(path: str | os.PathLike) -> str:
    """An input's name as every machine reads it: `${BIRCH_DATA}/...` under the data folder, relative
    under the working directory (the repository, for a workflow run), else as given."""
    absolute = Path(os.path.abspath(path))
    bases = [(Path.cwd(), "")]
    if os.environ.get("BIRCH_DATA"):
        bases.insert(0, (Path(os.path.abspath(os.environ["BIRCH_DATA"])), "${BIRCH_DATA}/"))
    for base, prefix in bases:
        if absolute.is_relative_to(base) and absolute != base:
            return prefix + absolute.relative_to(base).as_posix()
    return str(path)


# The packages whose versions every record names.
PACKAGES = ("birch-repro", "torch", "transformers", "pyserini", "ir_datasets", "ir-measures", "snakemake", "pysbd")


def package_versions(packages: Sequence[str] = PACKAGES) -> dict[str, str]:
    """Installed versions of `packages` (those not installed left out)."""
    from importlib import metadata

    versions = {}
    for package in packages:
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            pass
    return versions


def git(*args: str) -> str:
    """A git command's output in the working directory, or "unknown" (no git, no repository)."""
    import subprocess

    try:
        return subprocess.run(["git", *args], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# Where git is missing (the container image has none), the wrappers that start it pass the host's state
# (containers/run, containers/snakemake-apptainer); without them the commit is read from the checkout's .git.
COMMIT_ENV, DIRTY_ENV = "BIRCH_GIT_COMMIT", "BIRCH_GIT_DIRTY"


def git_state() -> tuple[str, bool]:
    """The commit the working directory is at, and whether its code differs from it (results/ is the stored
    reference, not code: a run resumed after `make promote` is clean). Dirty where it cannot be told."""
    commit = git("rev-parse", "HEAD")
    if commit != "unknown":
        return commit, bool(git("status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)results"))
    if os.environ.get(COMMIT_ENV, "unknown") != "unknown":  # "unknown": git outside could not read the checkout either
        return os.environ[COMMIT_ENV], os.environ.get(DIRTY_ENV, "1") != "0"
    return head_from_dotgit(), True


def head_from_dotgit(start: str | os.PathLike = ".") -> str:
    """The commit HEAD names, read from the nearest .git folder without git: HEAD, then its ref's file or
    packed-refs; "unknown" where there is none."""
    from pathlib import Path

    here = Path(start).resolve()
    for folder in (here, *here.parents):
        dotgit = folder / ".git"
        if dotgit.is_file() and dotgit.read_text().startswith("gitdir:"):  # a worktree or submodule
            dotgit = (folder / dotgit.read_text().split(":", 1)[1].strip()).resolve()
        if not (dotgit / "HEAD").is_file():
            continue
        head = (dotgit / "HEAD").read_text().strip()
        if not head.startswith("ref:"):
            return head  # detached
        ref = head.split(":", 1)[1].strip()
        common = Path(dotgit / "commondir").read_text().strip() if (dotgit / "commondir").is_file() else "."
        for root in (dotgit, (dotgit / common).resolve()):
            if (root / ref).is_file():
                return (root / ref).read_text().strip()
            packed = root / "packed-refs"
            if packed.is_file():
                for line in packed.read_text().splitlines():
                    if line.endswith(" " + ref) and not line.startswith(("#", "^")):
                        return line.split()[0]
        return "unknown"
    return "unknown"


def provenance(command: str, inputs: Sequence[str | os.PathLike] = (), extra: Mapping | None = None) -> dict:
    """What produced a set of numbers: the command, the git commit, package versions, input checksums."""
    versions = package_versions()
    checksums = {portable_name(path): file_sha256(path)[:16] for path in inputs}
    commit, dirty = git_state()
    record = {"command": command, "git_commit": commit, "git_dirty": dirty, "versions": versions, "inputs_sha256": checksums}
    record.update(extra or {})
    return record
