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


def provenance(command: str, inputs: Sequence[str | os.PathLike] = (), extra: Mapping | None = None) -> dict:
    """What produced a set of numbers: the command, the git commit, package versions, input checksums."""
    versions = package_versions()
    checksums = {portable_name(path): file_sha256(path)[:16] for path in inputs}
    record = {"command": command, "git_commit": git("rev-parse", "HEAD"),
              # results/ is the stored reference, not code: a run resumed after `make promote` is clean.
              "git_dirty": bool(git("status", "--porcelain", "--untracked-files=no", "--", ":/", ":(top,exclude)results")),
              "versions": versions, "inputs_sha256": checksums}
    record.update(extra or {})
    return record
