"""What the table and figure builders share: measure labels, their input error, how they read the inputs typed by
hand, and provenance."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from reranker.formats.errors import InputError
from reranker.formats.text import file_sha256
from reranker.measures import MEASURES

MEASURE_LABELS = {"AP@1000": "AP", "P@20": "P@20", "nDCG@20": "nDCG@20", "RR@10": "MRR@10",
                  **{name: measure.label for name, measure in MEASURES.items()}}


class TableError(InputError):
    """A bad argument or input file; main prints it prefixed `tables:` and exits 2 before writing anything."""


def split_labelled(spec: str, option: str, form: str, parts: int) -> list[str]:
    """`A:PATH` or `A:B:PATH`, the path last (it may hold colons); TableError naming the option otherwise."""
    fields = spec.split(":", parts - 1)
    if len(fields) != parts or not all(fields):
        raise TableError(f"{option} {spec!r}: expected {form}")
    return fields


def spec_or_options(spec: str | None, given: Sequence[str], required: str, gives: str, command: str) -> None:
    """Inputs from `--spec FILE` (what rules give) or from the options typed by hand (`given`: those present),
    never both; without a spec, `required` must be among them. TableError otherwise: `gives` says what the spec
    gives (the cells, the points), `command` names the subcommand."""
    if spec and given:
        raise TableError(f"--spec {spec} gives the {gives}: leave out {', '.join(given)}")
    if not spec and required not in given:
        raise TableError(f"{command}: give --spec FILE or {required}")


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
