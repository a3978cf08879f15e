"""The papers the suite reproduces, one plugin module each, found through one registry.

`register` adds a `Plugin` class under its name; the registry gives the DAG its rules files, its
tables, the checkpoints each paper generates (added when a configuration is resolved), the wall-clock
parts of `make run` (reranker.workflow.finish) and the resources table's checkpoint groups. Built-in plugins:
birch, radboud, ntnu; a configuration's `plugins:` names more modules to import (e.g. a fourth
paper's, or a test's).

Stages never import this package (tests/test_layering.py): what they need reaches them as files and
flags from the rules.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Container, Iterable

from reranker.core import config as config_module
from reranker.experiments.base import Plugin

REGISTRY: dict[str, type[Plugin]] = {}
BUILTIN = ("reranker.experiments.birch", "reranker.experiments.radboud", "reranker.experiments.ntnu")


def register(cls: type[Plugin]) -> type[Plugin]:
    """Add a plugin; its generated checkpoints and cross-checks join every configuration resolved from now on."""
    REGISTRY[cls.name] = cls
    config_module.CHECKPOINT_GENERATORS[cls.name] = cls.generate
    config_module.CROSS_CHECKS[cls.name] = cls.check
    if cls.named_rows:
        config_module.NAMED_ROWS[cls.name] = cls.named_rows
    if cls.checkpoint_prefix:
        config_module.GENERATED_PREFIXES[cls.name] = cls.checkpoint_prefix
    return cls


def load(modules: Iterable[str] = ()) -> dict[str, type[Plugin]]:
    """Import the built-in plugins and `modules` (each registers itself); the registry."""
    for module in (*BUILTIN, *modules):
        importlib.import_module(module)
    return REGISTRY


def active(experiment) -> dict[str, Plugin]:
    """The plugins a configuration asks for, built over the DAG's Experiment, in registry order."""
    load(experiment.config.get("plugins") or ())
    return {name: cls(experiment) for name, cls in REGISTRY.items() if cls.enabled(experiment.config)}


def wall_clock_parts() -> dict[str, str]:
    """name -> job-name regex of every registered plugin with a part of its own."""
    load()
    return {name: cls.wall_clock_part for name, cls in REGISTRY.items() if cls.wall_clock_part}


def checkpoint_prefixes(plugins: Container[str] | None = None) -> list[str]:
    """The generated checkpoints' prefixes of `plugins` (names, e.g. an Experiment's `plugins`; None: every
    registered plugin), in registry order: the resources table's checkpoint groups."""
    load()
    return [cls.checkpoint_prefix for name, cls in REGISTRY.items()
            if cls.checkpoint_prefix and (plugins is None or name in plugins)]


def main(argv: list[str] | None = None) -> int:
    """`python -m reranker.experiments [list]`: the registry, one plugin a line (the tables every configuration
    makes: `python -m reranker.workflow.catalog`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["catalog"]:  # the workflow layer's now, above the plugins
        print("the catalog moved: python -m reranker.workflow.catalog", file=sys.stderr)
        return 2
    print("\n".join(f"{name}: {cls.about}" for name, cls in load().items()))
    return 0
