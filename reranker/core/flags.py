"""Flags that override settings, checked by the schema the configuration is checked by.

A stage names, for each such flag, the schema path of the setting it overrides (`--negatives` ->
`training.negatives_per_positive`); `overlay` lays the flags given over the stage's settings, each
value checked by that setting's node of workflow/schemas/config.schema.yaml. A flag not given is
None and changes nothing; a given 0 stays 0, or is refused in one line naming the flag and the
schema's rule, never replaced by a default. Light: no torch; it imports no stage.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from typing import Any

from reranker.core.config import ConfigError, schema, setting

_BOUNDS = {"minimum": ">=", "exclusiveMinimum": ">", "maximum": "<=", "exclusiveMaximum": "<"}


def _why(error: Any) -> str:
    """The schema's rule in words: a bound, the allowed values, else jsonschema's message."""
    if error.validator in _BOUNDS:
        return f"must be {_BOUNDS[error.validator]} {error.validator_value}"
    allowed = [v for e in [error, *(error.context or [])] if e.validator == "enum" for v in e.validator_value]
    if allowed:
        return f"must be one of {', '.join(map(str, allowed))}"
    return error.message


def checked(flag: str, value: Any, path: str) -> Any:
    """`value` where the schema node of setting `path` accepts it; a ConfigError naming `flag` where not."""
    import jsonschema

    node = {**setting(path), "$defs": schema()["$defs"]}  # the node's `#/$defs/...` references resolve here
    error = jsonschema.exceptions.best_match(jsonschema.Draft202012Validator(node).iter_errors(value))
    if error is not None:
        raise ConfigError(f"{flag} {value}: {_why(error)} (schema: {path})")
    return value


def overlay(settings: Mapping, args: argparse.Namespace, flags: Mapping[str, str]) -> dict:
    """`settings` with each flag of `flags` (flag -> schema path) that `args` gives laid over its setting, checked.

    A setting's key in `settings`, and the flag's argparse dest, is the path's last part."""
    result = dict(settings)
    for flag, path in flags.items():
        key = path.rsplit(".", 1)[-1]
        value = getattr(args, key, None)  # None also where this (sub)command has no such flag
        if value is not None:
            result[key] = checked(flag, value, path)
    return result
