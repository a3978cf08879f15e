"""The papers the suite reproduces, one plugin module each, found through a registry built on demand.

`load(modules)` imports the built-in plugin modules and `modules` and reads each one's `PLUGIN` class: an
ordered, read-only name -> class mapping, rebuilt per call from its arguments, so nothing depends on what was
imported before. The registry gives the DAG its rules files, its tables, the sections a configuration is
resolved with (each plugin's schema and hooks: the checkpoints it generates, its cross-checks, the values it
fills), the wall-clock parts of `make run` (reranker.workflow.finish) and the resources table's checkpoint
groups. Built-in plugins: birch, radboud, ntnu; a configuration's `plugins:` names more modules to import
(e.g. a fourth paper's, or a test's), whose sections sit at the top level under their names.

Stages never import this package (tests/test_layering.py): what they need reaches them as files and
flags from the rules, and as the resolved configuration file.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Container, Iterable, Mapping, Sequence
from types import MappingProxyType

from reranker.core import config as config_module
from reranker.core.config import ConfigError
from reranker.experiments.base import Plugin

BUILTIN = ("reranker.experiments.birch", "reranker.experiments.radboud", "reranker.experiments.ntnu")


def load(modules: Iterable[str] = ()) -> Mapping[str, type[Plugin]]:
    """The built-in plugins and those of `modules` (each module's `PLUGIN`), by name, in that order."""
    registry: dict[str, type[Plugin]] = {}
    for module in dict.fromkeys((*BUILTIN, *modules)):
        cls = getattr(importlib.import_module(module), "PLUGIN", None)
        if not (isinstance(cls, type) and issubclass(cls, Plugin)):
            raise ConfigError(f"plugins: module {module} has no PLUGIN (a reranker.experiments.base.Plugin subclass)")
        if cls.name in registry and registry[cls.name] is not cls:
            raise ConfigError(f"plugins: {module}'s plugin is named {cls.name!r}, as {registry[cls.name].__module__}'s is")
        registry[cls.name] = cls
    return MappingProxyType(registry)


def sections(config: Mapping) -> list[type[Plugin]]:
    """The plugins a (raw or resolved) configuration is resolved with: the built-in ones and its `plugins:`."""
    return list(load(config.get("plugins") or ()).values())


def resolve(config: Mapping, expand: bool = True) -> dict:
    """reranker.core.config.resolve with the configuration's plugins: the Snakefile's configuration."""
    return config_module.resolve(config, sections(config), expand=expand)


def load_config(files: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
                overrides: Mapping | None = None, expand: bool = True) -> dict:
    """reranker.core.config.load_config with the configuration's plugins (what the DAG resolves)."""
    return config_module.load_config(files, overrides, expand, sections=sections)


def active(experiment) -> dict[str, Plugin]:
    """The plugins a configuration asks for, built over the DAG's Experiment, in registry order."""
    return {name: cls(experiment) for name, cls in load(experiment.config.get("plugins") or ()).items()
            if cls.enabled(experiment.config)}


def wall_clock_parts() -> dict[str, str]:
    """name -> job-name regex of every built-in plugin with a part of its own."""
    return {name: cls.wall_clock_part for name, cls in load().items() if cls.wall_clock_part}


def checkpoint_prefixes(plugins: Container[str] | None = None) -> list[str]:
    """The generated checkpoints' prefixes of `plugins` (names, e.g. an Experiment's `plugins`; None: every
    built-in plugin), in registry order: the resources table's checkpoint groups."""
    return [cls.checkpoint_prefix for name, cls in load().items()
            if cls.checkpoint_prefix and (plugins is None or name in plugins)]


def main(argv: list[str] | None = None) -> int:
    """`python -m reranker.experiments [list]`: the registry, one plugin a line (the tables every configuration
    makes: `python -m reranker.workflow.catalog`)."""
    argv = sys.argv[1:] if argv is None else argv
    if argv not in ([], ["list"]):
        print(f"usage: python -m reranker.experiments [list] (not {' '.join(argv)})", file=sys.stderr)
        return 2
    print("\n".join(f"{name}: {cls.about}" for name, cls in load().items()))
    return 0
