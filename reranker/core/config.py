"""Configuration as data: layered YAML, defaults from the schema, `${VAR}` expanded, validated.

Layers, each deep-merged over the last: the schema's defaults, the registries (`collections.yaml`,
`checkpoints.yaml`), the default experiment (`config.yaml`), then any further files (a profile's,
a user's). A user's file holding one new collection is enough. Snakemake merges the same files
(`configfile:` and `--configfile`) and calls `resolve`; it writes the result to
`<run_dir>/config.yaml`, marked with `resolved_from`, which the stages then read alone.
"""

from __future__ import annotations

import copy
import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from reranker.formats.errors import ConfigError  # defined with the formats, which raise it too; importers of this module keep the name

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFIG_DIR = REPO_ROOT / "workflow" / "config"
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
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
    with open(path, encoding="utf-8") as f:
        try:
            data = yaml.safe_load(f) or {}
        except yaml.YAMLError as err:
            raise ConfigError(f"{path}: not valid YAML ({err})") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


@functools.cache
def _schema() -> dict:
    """The schema with the registry's enums filled in."""
    from reranker.core.registry import enums

    schema = read_yaml(SCHEMA_PATH)
    for name, values in enums().items():
        schema["$defs"][name]["enum"] = values
    return schema


def schema() -> dict:
    return copy.deepcopy(_schema())


def _node(node: Mapping) -> Mapping:
    """Follow a local `$ref` (siblings such as `default` stay on the referring node)."""
    ref = node.get("$ref")
    if ref:
        target = _schema()
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


def defaults(node: Mapping | None = None) -> dict:
    """The document the schema's defaults make: an object's defaults, nested objects' included."""
    node = _node(node if node is not None else _schema())
    result: dict = {}
    for key, child in node.get("properties", {}).items():
        child = _node(child)
        if child.get("x-defaults") is False:
            continue
        if "default" in child:
            result[key] = copy.deepcopy(child["default"])
        elif "properties" in child:
            nested = defaults(child)
            if nested:
                result[key] = nested
    return result


def entry_defaults(kind: str) -> dict:
    """The defaults of one registry entry: `collection` or `checkpoint`."""
    return defaults(_schema()["$defs"][kind])


def _fill_entries(config: dict) -> dict:
    """Registry entries (collections, checkpoints) get their own defaults, entry by entry."""
    for key, child in _schema()["properties"].items():
        entry_schema = child.get("additionalProperties")
        if isinstance(entry_schema, Mapping) and isinstance(config.get(key), Mapping):
            entry_defaults = defaults(entry_schema)
            config[key] = {name: merge(entry_defaults, entry) for name, entry in config[key].items()}
    for experiment, rows in NAMED_ROWS.items():  # the plugins' named entries (rows, tables) in their sections
        properties = _schema()["properties"].get(experiment, {}).get("properties", {})
        section = config.get(experiment, {})
        for key in rows.keys:
            if key in properties:
                entry_defaults = defaults(properties[key]["additionalProperties"])
                section[key] = {name: merge(entry_defaults, entry) for name, entry in section.get(key, {}).items()}
    return config


def validate(config: Mapping) -> None:
    import jsonschema

    validator = jsonschema.Draft202012Validator(_schema())
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:20]]
        raise ConfigError("configuration does not match workflow/schemas/config.schema.yaml:\n" + "\n".join(lines))
    _check_references(config)


# Training settings that name another checkpoint: a name it must know, a train job's input, a flag's folder;
# each with the setting that holds the head a hub checkpoint is loaded with (None: it is loaded as it is).
CHECKPOINT_SETTINGS = {"teacher": "teacher_head", "head_from": None, "positive_filter": "positive_filter_head"}


def _check_references(config: Mapping) -> None:
    """Names that must exist in a registry: the schema cannot say so."""
    from reranker.core.registry import FIRST_STAGES
    collections, checkpoints = config["collections"], config["checkpoints"]
    problems = []
    named = [("baselines/collections", c) for c in config["baselines"]["collections"]]
    named += [("baselines/provided_runs", c) for c in config["baselines"]["provided_runs"]]
    named += [("birch/targets", c) for c in config["birch"]["targets"]]
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
    used = [("birch/checkpoints", c) for c in config["birch"]["checkpoints"]]
    used += [("birch/passage_checkpoint", c) for c in [config["birch"]["passage_checkpoint"]] if c]
    for check in CROSS_CHECKS.values():  # each paper's own: its rows, tables and models name each other
        more_problems, more_used = check(config)
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


# Checkpoints a paper's section implies (one per fold, per row): section name -> entries. Filled by the
# plugins as they register (reranker.experiments), which the workflow imports before it resolves; a
# stage reads a resolved file, which holds them already, and never imports a plugin.
CHECKPOINT_GENERATORS: dict[str, Callable[[Mapping], dict]] = {}
# A paper's cross-checks, registered the same way: (problems, [(where, checkpoint name used)]).
CROSS_CHECKS: dict[str, Callable[[Mapping], tuple[list[str], list[tuple[str, str]]]]] = {}


class NamedRows(NamedTuple):
    """A plugin's named entries in its section: `keys` get their schema defaults entry by entry; an overlay
    drops one of `droppable` (deep merges add and change entries, never remove them) by naming it null, as
    the quick profile does to keep one row per code path, and `drop_nulls` removes what else it nulls."""

    keys: tuple[str, ...]
    droppable: tuple[str, ...] = ()
    drop_nulls: Callable[[dict], None] | None = None


# Filled by the plugins as they register, like the two above: section name -> its named rows.
NAMED_ROWS: dict[str, NamedRows] = {}
# The prefixes of the checkpoints the plugins generate, for messages that name only the registered ones.
GENERATED_PREFIXES: dict[str, str] = {}


def _drop_null_rows(config: dict) -> dict:
    """`config` without the rows an overlay names null (NAMED_ROWS)."""
    for name, rows in NAMED_ROWS.items():
        section = config.get(name)
        if not isinstance(section, dict):
            continue
        for key in rows.droppable:
            if isinstance(section.get(key), dict):
                section[key] = {row: spec for row, spec in section[key].items() if spec is not None}
        if rows.drop_nulls:
            rows.drop_nulls(section)
    return config


def resolve(config: Mapping, expand: bool = True) -> dict:
    """Schema defaults under `config`, rows named null dropped, registry entries filled, the checkpoints the
    registered plugins generate added, validated, `${VAR}` expanded."""
    resolved = _fill_entries(_drop_null_rows(merge(defaults(), config)))
    for generate in CHECKPOINT_GENERATORS.values():
        resolved["checkpoints"] = {**resolved["checkpoints"], **generate(resolved)}
    validate(resolved)
    return expand_vars(resolved) if expand else resolved


def config_files(extra: Sequence[str | os.PathLike] = ()) -> list[Path]:
    """The layers of a configuration: the registries, the default experiment, then `extra`."""
    return [CONFIG_DIR / name for name in REGISTRY_FILES] + [DEFAULT_EXPERIMENT] + [Path(p) for p in extra]


def load_config(files: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
                overrides: Mapping | None = None, expand: bool = True) -> dict:
    """A resolved configuration.

    `files`: a resolved file (written by the workflow, with `resolved_from`) is read alone; other
    files are layered over the registries and the default experiment.
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
        return resolve(config, expand=expand)
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


def checkpoint_config(config: Mapping, name: str) -> dict:
    """The registry entry of a checkpoint; an unknown name lists the known ones."""
    known = config.get("checkpoints", {})
    if name not in known:
        # The experiments generate many (e.g. one per fold): name the registered ones, count the rest.
        prefixes = tuple(GENERATED_PREFIXES.values())
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
