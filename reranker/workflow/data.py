"""The data a configuration reads, before any job runs: the registered files (workflow/config/downloads.yaml)
checked where they are, and those missing left to the rules that fetch or derive them (workflow/rules/data.smk);
the licensed documents a configuration uses, listed with how to register them, where ir_datasets lacks them.

Read by the Snakefile when it builds the DAG: a file that differs from its checksum stops every command, a dry run
included, in one line and exit 2 before anything reads it.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from reranker.corpora import downloads
from reranker.corpora.downloads import Entry


@dataclass(frozen=True)
class Data:
    root: Path
    registry: Mapping[str, Entry]
    needed: tuple[Entry, ...]

    def missing(self, derived: bool) -> list[str]:
        """Paths (under the data folder) of the needed files that are not there, to be downloaded (derived=False) or
        derived (True). With a mirror (BIRCH_DATA_URL) every file is downloaded, derived ones as the mirror holds them."""
        mirror = downloads.mirror_url() is not None
        return [e.path for e in self.needed
                if (e.derived and not mirror) == derived and not (self.root / e.path).exists()]

    def made_by_rules(self) -> set[str]:
        """The configuration's spelling (root/path) of every file a rule will fetch or derive."""
        return {f"{self.root}/{path}" for path in self.missing(False) + self.missing(True)}


def prepare(config: Mapping) -> Data:
    """The registered files `config` reads, each one that is there checked against its sha256."""
    root = downloads.data_root()
    registry = downloads.load_registry()
    needed = tuple(downloads.needed(config, registry, root))
    downloads.verify_present(needed, root)
    return Data(root, registry, needed)


def licensed_missing(collections: list) -> list[str]:
    """One line per collection whose licensed documents ir_datasets lacks (`missing_documents`)."""
    return [line for c in collections if (line := c.missing_documents())]


def stop(message: str, stage: str = "data") -> None:
    """End the Snakemake process as a stage ends on bad input: its line, exit 2 (no traceback)."""
    print(f"{stage}: error: {message}", file=sys.stderr)
    sys.exit(2)
