"""What every paper's plugin has: its configuration section, its rules file, the tables it adds, the
checkpoints it generates and the part of a run's wall clock that is its own.

A plugin is built over the DAG's `Experiment` (reranker.workflow), which it reads for the run
folder's layout and for checkpoint lineage; stages never import plugins (tests/test_layering.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

# How a configured precision reads in a caption: the setting, not the machine, so that a caption
# reads the same wherever the table is rebuilt.
PRECISION_WORDS = {"exact": "fp32", "fast": "bf16 (fp16 on GPUs without bf16)",
                   "auto": "bf16 where the CPU (AMX, avx512_bf16) or GPU has it, else fp32"}


class Plugin:
    """One paper's tables. Subclasses set the class attributes and register with `@register`."""

    name: ClassVar[str]  # the registry key, and the configuration section it reads
    about: ClassVar[str] = ""  # one line: the paper and what its plugin builds
    rules: ClassVar[str]  # its Snakemake rules, relative to the Snakefile
    # A regex over Snakemake job names (rule and wildcards) of the jobs that are this paper's own: its
    # part of a run's wall clock (`tables wallclock --part`); None where it has no part of its own.
    wall_clock_part: ClassVar[str | None] = None
    # The prefix of the checkpoints it generates (one per fold or row): one resources row for them all.
    checkpoint_prefix: ClassVar[str | None] = None

    def __init__(self, experiment):
        self.exp = experiment  # the DAG's Experiment: layout, checkpoints and their lineage
        self.config = experiment.config
        self.layout = experiment.layout

    @property
    def section(self) -> dict:
        return self.config[self.name]

    @classmethod
    def enabled(cls, config: Mapping) -> bool:
        """Whether the configuration asks for this paper's tables."""
        section = config.get(cls.name)
        return bool(section and section.get("collection"))

    @classmethod
    def checkpoints(cls, config: Mapping) -> dict:
        """Checkpoint entries the section implies (per fold, per row), added when a config is resolved."""
        return {}

    @classmethod
    def cross_check(cls, config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:
        """Problems with the section the schema cannot see, and the checkpoint names it uses (checked to exist)."""
        return [], []

    def outputs(self) -> list[str]:
        """Every table and figure it publishes: compared with the reference and built by `all`."""
        return []

