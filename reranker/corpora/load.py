"""A collection from its registry entry, by its `source` (workflow/config/collections.yaml).

    from reranker.corpora.load import load_collection
    cacm = load_collection("cacm")   # its registry entry, ${BIRCH_DATA} expanded
    cacm.queries()["1"]              # 'What articles exist which deal with TSS (Time Sharing System), ...'
    len(cacm.judged_qids())          # 52
    next(cacm.docs_iter())           # Doc(doc_id='1', title='Preliminary Report-International ...', text='')
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from reranker.core.config import ConfigError, collection_config, entry_defaults, load_config, merge
from reranker.corpora.base import Collection
from reranker.corpora.ir_datasets import IrDatasetsCollection
from reranker.corpora.smart import SmartCollection
from reranker.corpora.titles import TitlesCollection


def collection_from_entry(entry: Mapping[str, Any]) -> Collection:
    """A collection from its registry entry (with `id`), paths already expanded; the schema's defaults fill the rest."""
    entry = merge(entry_defaults("collection"), entry)
    source = entry.get("source")
    if source not in _SOURCES:
        raise ConfigError(f"collection {entry.get('id')!r}: source must be one of {', '.join(_SOURCES)}, not {source!r}")
    return _SOURCES[source](entry)


def load_collection(collection_id: str, config: Mapping | None = None) -> Collection:
    """The collection `collection_id` of `config` (default: the registries + default experiment)."""
    return collection_from_entry(collection_config(config if config is not None else load_config(), collection_id))


# A titles collection builds its parent's collection through this module (it cannot import it: a cycle).
_SOURCES: dict[str, Callable[[Mapping[str, Any]], Collection]] = {
    "ir_datasets": IrDatasetsCollection, "smart": SmartCollection,
    "titles": lambda entry: TitlesCollection(entry, collection_from_entry)}

