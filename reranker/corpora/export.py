"""A collection's statistics, and its export as the files later stages read (docs.jsonl, topics.tsv, qrels.txt)."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reranker.corpora.base import Collection
from reranker.formats.atomic import write_json
from reranker.formats.docs import Doc, write_docs
from reranker.formats.errors import FormatError
from reranker.formats.ids import qid_order
from reranker.formats.qrels import write_qrels
from reranker.formats.topics import write_topics_tsv


def _docs_with_progress(collection: Collection) -> Iterator[Doc]:
    return tqdm(collection.docs_iter(), desc=f"{collection.id} docs", unit="doc",
                total=collection.docs_count(), file=sys.stderr, mininterval=1.0)


def _query_stats(collection: Collection) -> dict[str, Any]:
    qrels = collection.qrels()
    judged = collection.judged_qids()
    relevant = [sum(grade >= collection.relevant_min_grade for grade in qrels[q].values()) for q in judged]
    return {
        "collection": collection.id,
        "queries": len(collection.queries()),
        "judged_queries": len(judged),
        "qrels": sum(len(judgements) for judgements in qrels.values()),
        "mean_relevant_per_query": sum(relevant) / len(relevant) if relevant else 0.0,
    }


class _DocStats:
    def __init__(self) -> None:
        self.docs = 0
        self.words = 0

    def add(self, doc: Doc) -> None:
        self.docs += 1
        self.words += len(doc.title.split()) + len(doc.text.split())

    def as_dict(self) -> dict[str, Any]:
        return {"docs": self.docs, "mean_doc_length_words": self.words / self.docs if self.docs else 0.0}


def collection_stats(collection: Collection) -> dict[str, Any]:
    """docs, queries, judged_queries, qrels (lines), mean_relevant_per_query, mean_doc_length_words.

    Run-only collections have no document statistics.
    """
    collection.check_files()
    with collection.exclusive():
        stats = _query_stats(collection)
        if not collection.run_only:
            doc_stats = _DocStats()
            for doc in _docs_with_progress(collection):
                doc_stats.add(doc)
            stats.update(doc_stats.as_dict())
    return stats


def export_collection(collection: Collection, out_dir: str | os.PathLike) -> dict[str, Any]:
    """Write docs.jsonl, topics.tsv, qrels.txt and stats.json into `out_dir`; return the stats.

    Each file is written to `<name>.tmp` and renamed, stats.json last, so a present stats.json
    means a complete export. Run-only collections get no docs.jsonl.
    """
    collection.check_files()
    out = Path(out_dir)
    created = not out.exists()
    out.mkdir(parents=True, exist_ok=True)
    try:
        with collection.exclusive():
            return _export(collection, out)
    except BaseException:
        if created and not any(out.iterdir()):  # a failed export leaves no empty folder it made behind
            out.rmdir()
        raise


def _export(collection: Collection, out: Path) -> dict[str, Any]:
    stats = _query_stats(collection)  # reads queries and qrels: malformed files fail before the docs
    if not collection.run_only:
        doc_stats = _DocStats()

        def counted() -> Iterator[Doc]:
            for doc in _docs_with_progress(collection):
                doc_stats.add(doc)
                yield doc

        doc_ids = write_docs(counted(), out / "docs.jsonl")
        absent = qid_order({doc for judged in collection.qrels().values() for doc in judged} - doc_ids)
        if absent:  # judgments on documents nobody can retrieve: recall and AP would be quietly lower
            (out / "docs.jsonl").unlink()
            raise FormatError(collection.entry.get("qrels") or f"the qrels of {collection.id}", None,
                              f"{len(absent)} judged documents are not in the collection (e.g. {', '.join(absent[:5])}): "
                              "check that the qrels belong to these documents (and their layout: qrels_format)")
        stats.update(doc_stats.as_dict())
    write_topics_tsv(collection.queries(), out / "topics.tsv")
    write_qrels(collection.qrels(), out / "qrels.txt")
    write_json(out / "stats.json", stats, indent=2)
    return stats

