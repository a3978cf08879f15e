"""Weak supervision from another collection's titles: each title a query, its body the one relevant document."""

from __future__ import annotations

from collections.abc import Callable, Container, Iterator, Mapping
from functools import cached_property
from typing import Any

from reranker.core.config import ConfigError
from reranker.corpora.base import Collection, DocumentsUnavailableError
from reranker.formats.docs import Doc
from reranker.formats.qrels import Qrels


class TitlesCollection(Collection):
    """Weak supervision from another collection's documents alone (MacAvaney et al., SIGIR 2019):
    each document's title is a query, its body the one relevant document. No judgments are read.

    Documents whose title or body is shorter than `min_title_words` / `min_body_words` are left
    out (CACM's title-only records). The parent's entry is resolved into `parent` by the config;
    `build` makes a collection of an entry (reranker.corpora.load.collection_from_entry)."""

    def __init__(self, entry: Mapping[str, Any], build: Callable[[Mapping[str, Any]], Collection]):
        super().__init__(entry)
        self._build = build

    @cached_property
    def parent(self) -> Collection:
        if not isinstance(self.entry.get("parent"), Mapping):
            raise ConfigError(f"collection {self.id!r}: source titles needs `of: <collection id>`")
        return self._build(self.entry["parent"])

    @property
    def run_only(self) -> bool:
        return self.parent.run_only

    def check_files(self, fetched: Container[str] = ()) -> None:
        self.parent.check_files(fetched)

    def exclusive(self):
        return self.parent.exclusive()

    def _files(self) -> dict[str, str]:
        return {}

    def source_files(self) -> list[str]:
        return self.parent.source_files()  # its documents are the parent's

    @cached_property
    def _titled(self) -> list[Doc]:
        def words(text: str) -> int:
            return len(text.split())
        # Callers that build derived files hold exclusive() (the parent's lock) around this already.
        return [Doc(doc.doc_id, " ".join(doc.title.split()).rstrip(" ."), doc.text) for doc in self.parent.docs_iter()
                if words(doc.title) >= self.entry["min_title_words"] and words(doc.text) >= self.entry["min_body_words"]]

    def _docs(self) -> Iterator[Doc]:
        # Bodies only: the title is the query, so a document must not contain it.
        for doc in self._titled:
            yield Doc(doc.doc_id, "", doc.text)

    def _read_queries(self) -> dict[str, str]:
        if self.parent.run_only:
            raise DocumentsUnavailableError(f"{self.id}: its queries are the titles of {self.parent.id}, which is run-only")
        return {doc.doc_id: doc.title for doc in self._titled}

    def _read_qrels(self) -> Qrels:
        return {doc.doc_id: {doc.doc_id: 1} for doc in self._titled}

