"""Configuration as data: YAML files merged in order, `${VAR}` expanded, validated by a JSON schema.

The Snakefile loads the same files (`workflow/config/collections.yaml`, `checkpoints.yaml`, then an
experiment file such as `config.yaml`) and validates against the same schema; the stages load them
here, so `python -m reranker <stage> --config …` sees exactly what the workflow sees.
"""

from __future__ import annotations

import copy
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parent.parent
CONFIG_DIR = REPO_ROOT / "workflow" / "config"
SCHEMA_PATH = REPO_ROOT / "workflow" / "schemas" / "config.schema.yaml"
REGISTRY_FILES = ("collections.yaml", "checkpoints.yaml")
DEFAULT_EXPERIMENT = CONFIG_DIR / "config.yaml"

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


class ConfigError(ValueError):
    pass


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


def merge(base: dict, override: Mapping) -> dict:
    """Deep-merge `override` into a copy of `base` (mappings merge, everything else replaces)."""
    result = copy.deepcopy(base)
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
        data = yaml.safe_load(f) or {}
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: the top level must be a mapping")
    return data


def config_files(experiment: str | os.PathLike | None = None) -> list[Path]:
    """The files that make a configuration: the registries, then the experiment file."""
    files = [CONFIG_DIR / name for name in REGISTRY_FILES]
    files.append(Path(experiment) if experiment else DEFAULT_EXPERIMENT)
    return files


def validate(config: Mapping, schema_path: str | os.PathLike = SCHEMA_PATH) -> None:
    import jsonschema

    schema = read_yaml(schema_path)
    validator = jsonschema.Draft202012Validator(schema)
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = [f"  {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}" for e in errors[:20]]
        raise ConfigError("configuration does not match workflow/schemas/config.schema.yaml:\n" + "\n".join(lines))


def load_config(files: Sequence[str | os.PathLike] | str | os.PathLike | None = None,
                overrides: Mapping | None = None, expand: bool = True) -> dict:
    """Merge the given files (default: registries + default experiment), validate, expand ${VAR}."""
    if files is None or isinstance(files, (str, os.PathLike)):
        files = config_files(files)
    config: dict = {}
    for path in files:
        config = merge(config, read_yaml(path))
    if overrides:
        config = merge(config, overrides)
    validate(config)
    return expand_vars(config) if expand else config


def collection_config(config: Mapping, collection_id: str) -> dict:
    """The registry entry of a collection; an unknown id lists the known ones."""
    known = config.get("collections", {})
    if collection_id not in known:
        raise ConfigError(f"unknown collection {collection_id!r}; known collections: {', '.join(sorted(known))}")
    entry = dict(known[collection_id])
    entry.setdefault("id", collection_id)
    return entry


def checkpoint_config(config: Mapping, name: str) -> dict:
    known = config.get("checkpoints", {})
    if name not in known:
        raise ConfigError(f"unknown checkpoint {name!r}; known checkpoints: {', '.join(sorted(known))}")
    entry = dict(known[name])
    entry.setdefault("name", name)
    return entry


def slug(collection_id: str) -> str:
    """A collection id as a file-name component: `beir/scifact/test` -> `beir-scifact-test`."""
    return collection_id.replace("/", "-")
