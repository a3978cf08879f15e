"""Configuration as data: layered YAML, defaults from the schema, `${VAR}` expanded, validated.

Layers, each deep-merged over the last: the schema's defaults, the registries (`collections.yaml`,
`checkpoints.yaml`), the default experiment (`config.yaml`), then any further files (a profile's,
a user's). A user's file holding one new collection is enough. Snakemake merges the same files
(`configfile:` and `--configfile`) and calls `resolve`; it writes the result to
`<run_dir>/config.yaml`, marked with `resolved_from`, which the stages then read alone.

The papers' sections are not in the suite's schema: `resolve` composes it, per call, with the sections it is
handed (each paper plugin's schema under its name, and the plugin's hooks: the checkpoints it generates, its
cross-checks, the values it fills). Without plugins (a stage's process, which never imports one) it composes
the section schemas of workflow/schemas/sections/ as data, without hooks: defaults and checks, as a resolved
file already holds what the hooks added. Nothing is registered in module state: the result depends only on
the arguments.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from reranker.formats import strict_yaml
from reranker.formats.errors import ConfigError  # defined with the formats, which raise it too; importers of this module keep the name

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO_ROOT / "workflow" / "config"
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
SECTIONS_DIR = REPO_ROOT / "workflow" / "schemas" / "sections"  # each paper's section schema, <name>.yaml
REGISTRY_FILES = ("collections.yaml", "checkpoints.yaml")
DEFAULT_EXPERIMENT = CONFIG_DIR / "config.yaml"

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_vars(value: Any) -> Any:
    """Expand `${VAR}` and `${VAR:-default}` in every string of a nested structure."""
    if isinstance(value, str):
        def substitute(match: re.Match) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ and os.environ[name] != "":
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"${{{name}}} is used in the configuration but the environment variable {name} is not set")

        return _VAR.sub(substitute, value)
    if isinstance(value, Mapping):
        return {key: expand_vars(item) for key, item in value.items()}
    if isinstance(value, list):
        return [expand_vars(item) for item in value]
    return value


def merge(base: Mapping, override: Mapping) -> dict:
    """Deep-merge `override` into a copy of `base` (mappings merge, everything else replaces)."""
    result = copy.deepcopy(dict(base))
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def read_yaml(path: str | os.PathLike) -> dict:
    path = Path(path)
    if not path.exists():
        raise ConfigError(f"{path}: configuration file not found")
    data = strict_yaml.load(path) or {}  # duplicate keys, alias bombs, NaN and infinity refused
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


class NamedRows(NamedTuple):
    """A plugin's named entries in its section: `keys` get their schema defaults entry by entry; an overlay
    drops one of `droppable` (deep merges add and change entries, never remove them) by naming it null, as
    the quick profile does to keep one row per code path, and `drop_nulls` removes what else it nulls."""

    keys: tuple[str, ...]
    droppable: tuple[str, ...] = ()
    drop_nulls: Callable[[dict], None] | None = None


class Section:
    """A configuration section as `resolve` uses it: its name, its schema, and hooks that do nothing. A paper's
    plugin class (reranker.experiments.base.Plugin) has the same attributes and its own hooks."""

    named_rows: NamedRows | None = None
    published: tuple[str, ...] = ()  # its folders of a run folder that promote copies beside the tables

    def __init__(self, name: str, section_schema: Mapping):
        self.name, self.section_schema = name, section_schema

    def generate(self, config: Mapping) -> dict:  # checkpoint name -> entry
        return {}

    def check(self, config: Mapping) -> tuple[list[str], list[tuple[str, str]]]:  # problems, (where, checkpoint used)
        return [], []

    def resolved(self, config: Mapping) -> dict:  # values it fills, merged over the configuration
        return {}

    def study(self, config: Mapping) -> dict | None:  # its entry of `studies:` (reranker.core.run_metadata)
        return section_study(self.name, config.get(self.name) or {})


def section_study(name: str, section: Mapping) -> dict | None:
    """A section's entry of the resolved `studies:` (a run's research goal): the source work's id in
    workflow/config/source_numbers.yaml (its name), the collections it uses (`targets`, `collection`,
    `train_collection`) and its tables' captions (a table without one: its name), in the resolved file's
    (sorted) order; None where it uses no collection."""
    collections = list(section.get("targets") or []) + [section[key] for key in ("collection", "train_collection")
                                                         if section.get(key)]
    if not collections:
        return None
    tables = section.get("tables") or {f"{name}_main": None}
    return {"name": name, "work": name, "collections": collections,
            "tables": [caption if isinstance(caption, str) else (caption or {}).get("caption", table)
                       for table, caption in sorted(tables.items())]}


@functools.cache
def _core_schema() -> dict:
    """The suite's schema (no paper's section) with the registry's enums filled in."""
    from reranker.core.registry import enums

    schema = read_yaml(SCHEMA_PATH)
    for name, values in enums().items():
        schema["$defs"][name]["enum"] = values
    return schema


@functools.cache
def _section_files() -> tuple[tuple[str, str], ...]:
    return tuple((path.stem, path.read_text(encoding="utf-8")) for path in sorted(SECTIONS_DIR.glob("*.yaml")))


def section_schema(name: str) -> dict:
    """A section's schema from workflow/schemas/sections/<name>.yaml."""
    return read_yaml(SECTIONS_DIR / f"{name}.yaml")


def file_sections() -> list[Section]:
    """The sections of workflow/schemas/sections/, as data (no hooks): what a process without plugins knows."""
    return [Section(name, yaml.safe_load(text)) for name, text in _section_files()]


def composed(sections: Iterable = (), open_top: bool = False) -> dict:
    """The suite's schema with each section's under its name (their `#/$defs/...` are the suite's). `open_top`: any
    other top-level mapping is accepted (a resolved file's sections, checked when it was resolved)."""
    schema = copy.deepcopy(_core_schema())
    for section in sections:
        if section.name in schema["properties"]:
            raise ConfigError(f"section {section.name!r}: the suite has a setting of that name")
        schema["properties"][section.name] = copy.deepcopy(section.section_schema or {"type": "object"})
    if open_top:
        schema["additionalProperties"] = {"type": "object"}
    return schema


@functools.cache
def _schema() -> dict:
    """The schema a process without plugins checks against: the suite's and the section files'."""
    return composed(file_sections())


def schema() -> dict:
    return copy.deepcopy(_schema())


def _node(node: Mapping, root: Mapping | None = None) -> Mapping:
    """Follow a local `$ref` (siblings such as `default` stay on the referring node)."""
    ref = node.get("$ref")
    if ref:
        target = root if root is not None else _schema()
        for part in ref.removeprefix("#/").split("/"):
            target = target[part]
        return {**target, **{k: v for k, v in node.items() if k != "$ref"}}
    return node


def setting(path: str) -> dict:
    """The schema of one setting by its dotted path (`training.epochs`), local references followed."""
    node = _node(_schema())
    for key in path.split("."):
        node = _node(node["properties"][key])
    return copy.deepcopy(dict(node))


def default(path: str) -> Any:
    """A setting's default by its dotted path (`significance.alpha`): the schema's, the one place a default lives."""
    return setting(path)["default"]


def defaults(node: Mapping | None = None, root: Mapping | None = None) -> dict:
    """The document the schema's defaults make: an object's defaults, nested objects' included (`root`: the
    schema its references point into)."""
    root = root if root is not None else _schema()
    node = _node(node if node is not None else root, root)
    result: dict = {}
    for key, child in node.get("properties", {}).items():
        child = _node(child, root)
        if child.get("x-defaults") is False:
            continue
        if "default" in child:
            result[key] = copy.deepcopy(child["default"])
        elif "properties" in child:
            nested = defaults(child, root)
            if nested:
                result[key] = nested
    return result


def entry_defaults(kind: str) -> dict:
    """The defaults of one registry entry: `collection` or `checkpoint`."""
    return defaults(_core_schema()["$defs"][kind], _core_schema())


def _fill_entries(config: dict, schema: Mapping, sections: Sequence) -> dict:
    """Registry entries (collections, checkpoints) get their own defaults, entry by entry; so do the named entries
    (rows, tables) of the sections."""
    for key, child in _core_schema()["properties"].items():
        entry_schema = child.get("additionalProperties")
        if isinstance(entry_schema, Mapping) and isinstance(config.get(key), Mapping):
            entry_defaults = defaults(entry_schema, schema)
            config[key] = {name: merge(entry_defaults, entry) for name, entry in config[key].items()}
    for section in sections:
        if not section.named_rows:
            continue
        properties = schema["properties"].get(section.name, {}).get("properties", {})
        values = config.get(section.name, {})
        for key in section.named_rows.keys:
            if key in properties:
                entry_defaults = defaults(properties[key]["additionalProperties"], schema)
                values[key] = {name: merge(entry_defaults, entry) for name, entry in values.get(key, {}).items()}
    return config


def validate(config: Mapping, sections: Sequence | None = None) -> None:
    import jsonschema

    found = strict_yaml.non_finite(dict(config))  # what a command line's --config adds too, not only a file
    if found:
        raise ConfigError(f"{found}: not a finite number (.nan and .inf pass every bound): give a number")
    sections = file_sections() if sections is None else sections
    schema = composed(sections, open_top="resolved_from" in config)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:20]]
        raise ConfigError("configuration does not match workflow/schemas/config.schema.yaml (and the sections' schemas):\n"
                          + "\n".join(lines))
    _check_references(config, sections)


# Training settings that name another checkpoint: a name it must know, a train job's input, a flag's folder;
# each with the setting that holds the head a hub checkpoint is loaded with (None: it is loaded as it is).
CHECKPOINT_SETTINGS = {"teacher": "teacher_head", "head_from": None, "positive_filter": "positive_filter_head"}


# What a shell splits a word at or expands in it. The rules pass paths to their commands unquoted (Snakemake's
# `{input}`); quoting them all would change every job's shell and with it every stored number's digest.
SHELL_CHARACTERS = "$`;&|<>*?()[]!\\"
COLLECTION_PATHS = ("archive", "docs", "queries", "qrels", "run")


def _check_shell_paths(config: Mapping) -> None:
    """Paths (expanded) that a rule's command line carries must stay one word: the first that would not, in one line."""
    for where, path, hint in _shell_paths(config):
        char = _shell_character(path)
        if char:
            raise ConfigError(f"{where}: {path!r} holds {char!r}: the rules' commands take paths as words, unquoted, so a "
                              f"shell would split or expand it: choose a path without whitespace, quotes or {SHELL_CHARACTERS}{hint}")


def _shell_character(path: str) -> str | None:
    return next((c for c in path if c.isspace() or c in SHELL_CHARACTERS or c in "'\""), None)


def _shell_paths(config: Mapping) -> list[tuple[str, str, str]]:
    """(setting, path, hint) for each path a rule's command line may carry: the run folder, the reference and the
    collections' files (under BIRCH_DATA where they name it)."""
    data = os.environ.get("BIRCH_DATA")
    hint = lambda path: " (set BIRCH_DATA, the data folder, to one without)" if data and path.startswith(data) else ""  # noqa: E731
    paths = [("run_dir", config["run_dir"], ""), ("reference", config["reference"], "")]
    for name, entry in config["collections"].items():
        files = [(key, entry.get(key)) for key in COLLECTION_PATHS]
        files += [("folds/file", (entry.get("folds") or {}).get("file"))]
        files += [(f"runs/{run}/file", (spec or {}).get("file")) for run, spec in (entry.get("runs") or {}).items()]
        paths += [(f"collections/{name}/{key}", value, hint(value)) for key, value in files if isinstance(value, str)]
    return paths


def _check_references(config: Mapping, sections: Sequence = ()) -> None:
    """Names that must exist in a registry: the schema cannot say so."""
    from reranker.core.registry import FIRST_STAGES
    collections, checkpoints = config["collections"], config["checkpoints"]
    problems = []
    named = [("baselines/collections", c) for c in config["baselines"]["collections"]]
    named += [("baselines/provided_runs", c) for c in config["baselines"]["provided_runs"]]
    named += [("retrieval/overrides", c) for c in config["retrieval"]["overrides"]]
    named += [(f"checkpoints/{name}/train_on", c) for name, entry in checkpoints.items() for c in entry.get("train_on", [])]
    named += [(f"reproduction/{name}/collection", pair["collection"]) for name, pair in config["reproduction"].items()]
    problems += [f"  {where}: unknown collection {c!r} (known: {', '.join(sorted(collections))})"
                 for where, c in named if c not in collections]
    problems += [f"  baselines/provided_runs: {c} needs `run` and `run_model` (which first stage the run is)"
                 for c in config["baselines"]["provided_runs"]
                 if c in collections and not (collections[c].get("run") and collections[c].get("run_model"))]
    problems += [f"  reproduction/{name}/run: {pair['run']!r} is neither a first stage ({', '.join(FIRST_STAGES)}) nor `provided`"
                 for name, pair in config["reproduction"].items() if pair["run"] not in {*FIRST_STAGES, "provided"}]
    problems += [f"  reproduction/{name}/run: provided, but collection {pair['collection']} has no `run`"
                 for name, pair in config["reproduction"].items()
                 if pair["run"] == "provided" and pair["collection"] in collections and not collections[pair["collection"]].get("run")]
    problems += [f"  collections/{c}/runs/{name}: the name of a run the suite makes itself (work/runs/{c}/{name}.run): rename it"
                 for c, entry in collections.items() for name in entry.get("runs") or {} if name in FIRST_STAGES or name == "provided"]
    used = []
    for section in sections:  # each paper's own: its collections, rows, tables and models name each other
        more_problems, more_used = section.check(config)
        problems, used = problems + more_problems, used + more_used
    used += [(f"checkpoints/{name}/base", entry["base"]) for name, entry in checkpoints.items() if "base" in entry]
    for setting in CHECKPOINT_SETTINGS:
        used += [(f"checkpoints/{name}/training/{setting}", entry["training"][setting]) for name, entry in checkpoints.items()
                 if (entry.get("training") or {}).get(setting)]
        used += [(f"training/{setting}", config["training"][setting])] if config["training"].get(setting) else []
    problems += [f"  {where}: unknown checkpoint {c!r} (known: {', '.join(sorted(checkpoints))})"
                 for where, c in used if c not in checkpoints]
    if problems:
        raise ConfigError("configuration names what no registry holds:\n" + "\n".join(problems))


def _drop_null_rows(config: dict, sections: Sequence) -> dict:
    """`config` without the rows an overlay names null (each section's `named_rows`)."""
    for rows, values in ((s.named_rows, config.get(s.name)) for s in sections if s.named_rows):
        if not isinstance(values, dict):
            continue
        for key in rows.droppable:
            if isinstance(values.get(key), dict):
                values[key] = {row: spec for row, spec in values[key].items() if spec is not None}
        if rows.drop_nulls:
            rows.drop_nulls(values)
    return config


def resolve(config: Mapping, sections: Iterable | None = None, expand: bool = True) -> dict:
    """Schema defaults under `config`, rows named null dropped, registry entries filled, the values and checkpoints
    the sections' hooks add, validated, `${VAR}` expanded. `sections`: the papers' (their plugins, in order); None:
    the section files' schemas, without hooks."""
    sections = file_sections() if sections is None else list(sections)
    schema = composed(sections)
    resolved = _fill_entries(_drop_null_rows(merge(defaults(root=schema), config), sections), schema, sections)
    for section in sections:
        resolved = merge(resolved, section.resolved(resolved))
    for section in sections:
        resolved["checkpoints"] = {**resolved["checkpoints"], **section.generate(resolved)}
    studies = [study for s in sections if (study := s.study(resolved)) is not None]
    if "resolved_from" not in config:  # a resolved file's are its plugins'; in the sections' order
        if studies:
            resolved["studies"] = studies
        resolved["published"] = list(dict.fromkeys(folder for s in sections for folder in s.published))
    validate(resolved, sections)
    if not expand:
        return resolved
    expanded = expand_vars(resolved)
    _check_shell_paths(expanded)
    return expanded


def config_files(extra: Sequence[str | os.PathLike] = ()) -> list[Path]:
    """The layers of a configuration: the registries, the default experiment, then `extra`."""
    return [CONFIG_DIR / name for name in REGISTRY_FILES] + [DEFAULT_EXPERIMENT] + [Path(p) for p in extra]


def load_config(files: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
                overrides: Mapping | None = None, expand: bool = True,
                sections: Callable[[Mapping], Iterable] | None = None) -> dict:
    """A resolved configuration.

    `files`: a resolved file (written by the workflow, with `resolved_from`) is read alone; other
    files are layered over the registries and the default experiment. `sections`: the merged (raw) configuration
    -> the sections to resolve it with (reranker.experiments.load_config: its plugins); None: the section files.
    """
    if isinstance(files, (str, os.PathLike)):
        files = [files]
    files = list(files or [])
    if len(files) == 1 and "resolved_from" in (single := read_yaml(files[0])):
        config = single
    else:
        config = {}
        for path in config_files(files):
            config = merge(config, read_yaml(path))
    if overrides:
        config = merge(config, overrides)
    try:
        return resolve(config, sections(config) if sections else None, expand=expand)
    except ConfigError as err:
        raise ConfigError(f"{', '.join(map(str, files)) or DEFAULT_EXPERIMENT}: {err}") from None


def write_resolved(config: Mapping, path: str | os.PathLike, sources: Sequence[str]) -> Path:
    """The resolved configuration a run's stages read; rewritten only when it changes (keeps its mtime)."""
    path = Path(path)
    sources = [os.path.relpath(source) if os.path.isabs(source) else str(source) for source in sources]
    text = yaml.safe_dump({**config, "resolved_from": sources}, sort_keys=True)
    if not path.exists() or path.read_text(encoding="utf-8") != text:
        from reranker.formats.atomic import write_text

        path.parent.mkdir(parents=True, exist_ok=True)
        write_text(path, text)
    return path


def collection_config(config: Mapping, collection_id: str) -> dict:
    """The registry entry of a collection; an unknown id lists the known ones."""
    known = config.get("collections", {})
    if collection_id not in known:
        raise ConfigError(f"unknown collection {collection_id!r}; known collections: {', '.join(sorted(known))}")
    entry = {**known[collection_id], "id": collection_id}
    if entry.get("of") is not None:  # a derived collection (source: titles) reads its parent's files
        if entry["of"] == collection_id:
            raise ConfigError(f"collection {collection_id!r}: `of` names itself")
        entry["parent"] = collection_config(config, entry["of"])
    return entry


def checkpoint_config(config: Mapping, name: str, prefixes: Sequence[str] = ()) -> dict:
    """The registry entry of a checkpoint; an unknown name lists the known ones (those starting with one of
    `prefixes`, the plugins' generated ones, counted)."""
    known = config.get("checkpoints", {})
    if name not in known:
        # The experiments generate many (e.g. one per fold): name the registered ones, count the rest.
        prefixes = tuple(prefixes)
        registered = sorted(n for n in known if not n.startswith(prefixes))
        generated = len(known) - len(registered)
        raise ConfigError(f"unknown checkpoint {name!r}; known checkpoints: {', '.join(registered)}"
                          + (f" and {generated} generated ones ({', '.join(p + '*' for p in prefixes)})"
                             if generated else "")
                          + " (register one in workflow/config/checkpoints.yaml)")
    return {**known[name], "name": name}


def training_config(config: Mapping, name: str) -> dict:
    """A fine-tuned checkpoint's training settings: the experiment's, then the checkpoint's own."""
    return merge(config["training"], checkpoint_config(config, name).get("training", {}))


def slug(collection_id: str) -> str:
    """A collection id as a file-name component: `beir/scifact/test` -> `beir-scifact-test`."""
    return collection_id.replace("/", "-")
