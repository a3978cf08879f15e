"""YAML read so that a file cannot say something other than it seems to: a key given twice in one mapping (YAML's
rule, which PyYAML does not enforce: it keeps the last silently), aliases that expand a document beyond any
configuration's size (a few hundred bytes of nested aliases reach billions of values), and numbers that are not finite (`.nan` passes every
bound a schema sets, `.inf` turns a check off) are refused, each naming the file, the line or the key's path.
Merge keys (`<<: *base`) stay allowed: the keys they bring may be overridden.
"""

from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Any

import yaml

from reranker.formats.errors import ConfigError

MAX_NODES = 1_000_000  # the expanded size of a document: the suite's largest file has about 20,000


class StrictLoader(yaml.SafeLoader):
    def get_single_node(self):
        """The document's node graph, refused where its aliases expand it beyond MAX_NODES (a few hundred bytes of
        nested aliases reach billions: every reader that walks the document would hang)."""
        node = super().get_single_node()
        if node is not None:
            sizes: dict[int, int] = {}

            def size(item) -> int:
                if id(item) not in sizes:
                    sizes[id(item)] = 0  # a cycle counts once
                    children = item.value if isinstance(item, yaml.SequenceNode) else (
                        [part for pair in item.value for part in pair] if isinstance(item, yaml.MappingNode) else [])
                    sizes[id(item)] = min(1 + sum(size(child) for child in children), MAX_NODES + 1)
                return sizes[id(item)]

            if size(node) > MAX_NODES:
                raise yaml.YAMLError(f"its aliases expand it beyond {MAX_NODES:,} values: refused, as every reader "
                                     "of it would hang")
        return node

    def construct_mapping(self, node, deep=False):
        if isinstance(node, yaml.MappingNode):
            seen: dict[Any, int] = {}
            for key_node, _ in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":
                    continue
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (list, dict)):
                    continue  # not hashable; PyYAML refuses it itself
                line = key_node.start_mark.line + 1
                if key in seen:
                    raise yaml.YAMLError(f"the key {key!r} is given twice in one mapping (lines {seen[key]} and {line}); "
                                         "YAML keeps only the last: remove one")
                seen[key] = line
        return super().construct_mapping(node, deep=deep)


def non_finite(value: Any, where: str = "") -> str | None:
    """The path of the first NaN or infinity in a loaded document, or None."""
    if isinstance(value, float) and not math.isfinite(value):
        return where or "(top)"
    if isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        found = non_finite(item, f"{where}/{key}" if where else str(key))
        if found:
            return found
    return None


def loads(text: str, source: str = "<text>") -> Any:
    """A YAML document, strictly (see the module's docstring); a ConfigError naming `source` otherwise."""
    try:
        data = yaml.load(text, Loader=StrictLoader)  # noqa: S506 (a SafeLoader: no object construction)
    except yaml.YAMLError as err:
        raise ConfigError(f"{source}: not valid YAML ({' '.join(str(err).split())})") from None
    found = non_finite(data)
    if found:
        raise ConfigError(f"{source}: {found}: not a finite number (.nan and .inf pass every bound): give a number")
    return data


def load(path: str | os.PathLike) -> Any:
    path = Path(path)
    return loads(path.read_text(encoding="utf-8"), str(path))
