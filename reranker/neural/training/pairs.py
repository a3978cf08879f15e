"""Training pairs of a source: each training query's judged-relevant documents as positives and negatives
drawn (seeded, per query) from its top first-stage candidates, a held-out share of the queries, and the
documents cut into the segment stage's passages or sentences."""

from __future__ import annotations

import dataclasses
import hashlib
import random
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from reranker.formats.docs import read_docs
from reranker.formats.errors import InputError
from reranker.formats.ids import qid_order
from reranker.formats.qrels import Qrels, read_qrels
from reranker.formats.runs import Run, read_run, sorted_docs
from reranker.formats.segments import SentenceSplitter, passage_units, sentence_units, title_and_body
from reranker.formats.text import file_sha256
from reranker.formats.topics import read_topics_tsv
from reranker.neural.objectives import level
from reranker.neural.training.settings import DEFAULT_TRAINING, Source, TrainingConfig

MIN_TEXT_TOKENS = 16
PASSAGE_MARK = "#"  # a passage's text key: <doc_id>#<passage number>


class TrainingPair(NamedTuple):
    """A labelled training example: a query and a whole document."""

    qid: str
    doc_id: str
    label: int  # 1 relevant, 0 not
    level: int = 0  # the grade level: max(grade, 0), unjudged 0


ENRICH = ("none", "add", "swap")


def candidate_pool(ranked: Sequence[str], relevant: set[str], enrich: str) -> list[str]:
    """The documents a query trains on: its top first-stage candidates, enriched with the relevant ones they miss.

    none: the candidates as they are; add: plus every missed relevant document; swap: the missed
    relevant documents replace the lowest-ranked non-relevant candidates (the pool keeps its size).
    """
    if enrich not in ENRICH:
        raise InputError(f"enrich must be one of {', '.join(ENRICH)}, not {enrich!r}")
    missed = sorted(relevant - set(ranked))
    if enrich == "none" or not missed:
        return list(ranked)
    if enrich == "add":
        return list(ranked) + missed
    dropped = set([doc_id for doc_id in ranked if doc_id not in relevant][::-1][:len(missed)])
    return [doc_id for doc_id in ranked if doc_id not in dropped] + missed


def build_pairs(qrels: Qrels, run: Run, config: TrainingConfig = DEFAULT_TRAINING, relevant_min_grade: int = 1,
                train_qids: frozenset[str] | set[str] | None = None) -> list[TrainingPair]:
    """Training pairs, in a fixed order: each query's positives, then its sampled negatives.

    The pool is the query's top `negatives_depth` run documents, enriched by `enrich`. Positives are
    its judged-relevant documents; negatives are `negatives_per_positive` per positive (fewer if
    the pool is smaller), sampled from the rest. Sampling is seeded per query, so a query's pairs
    do not depend on which other queries take part.
    """
    pairs: list[TrainingPair] = []
    for qid in qid_order(qrels):
        if train_qids is not None and qid not in train_qids:
            continue
        judged = qrels[qid]
        relevant = {doc_id for doc_id, grade in judged.items() if grade >= relevant_min_grade}
        if not relevant:
            continue
        ranked = [doc_id for doc_id, _ in sorted_docs(run.get(qid, {}))[:config.negatives_depth]]
        pool = candidate_pool(ranked, relevant, config.enrich)
        positives = sorted(relevant & set(pool))
        if not positives:
            continue
        others = [doc_id for doc_id in pool if doc_id not in relevant]
        rng = random.Random(f"{config.seed}/{qid}")
        negatives = rng.sample(others, min(len(others), config.negatives_per_positive * len(positives)))
        pairs += [TrainingPair(qid, doc_id, 1, level(judged[doc_id])) for doc_id in positives]
        pairs += [TrainingPair(qid, doc_id, 0, level(judged.get(doc_id, 0))) for doc_id in negatives]
    return capped(pairs, config)


class Examples(NamedTuple):
    pairs: list[TrainingPair]
    validation: list[TrainingPair]  # pairs of held-out training queries: never trained on
    topics: dict[str, str]
    docs: dict[str, str]
    record: dict[str, Any]  # what went in, for reranker.json


def validation_queries(qrels: Qrels, train_qids: frozenset[str] | None, relevant_min_grade: int, fraction: float,
                       seed: int, name: str) -> frozenset[str]:
    """A seeded `fraction` of the source's training queries that have a relevant document."""
    candidates = [qid for qid in qid_order(qrels) if (train_qids is None or qid in train_qids)
                  and any(grade >= relevant_min_grade for grade in qrels[qid].values())]
    count = round(len(candidates) * fraction)
    return frozenset(random.Random(f"{seed}/validation/{name}").sample(candidates, count))


def unit_cutter(config: TrainingConfig) -> Callable[[str, str, str], list]:
    """How a document (doc_id, title, body) is cut into training units: the segment stage's passages, or
    its pysbd sentences whole (a pair too long is truncated, where scoring cuts the sentence into windows)."""
    if config.unit == "passages":
        return lambda doc_id, title, body: passage_units(doc_id, title, body, config.passage_length,
                                                         config.passage_stride, config.passage_title)
    splitter = SentenceSplitter()
    return lambda doc_id, title, body: sentence_units(doc_id, title, body, splitter)


def load_source(source: Source, config: TrainingConfig) -> Examples:
    """Read a source's files, build its pairs and resolve them to (query text, document text, label)."""
    topics, qrels, run = read_topics_tsv(source.topics), read_qrels(source.qrels), read_run(source.run)
    if source.train_qids is not None:
        unknown = source.train_qids - topics.keys()
        if unknown:
            raise InputError(f"{source.name}: {len(unknown)} train query ids are not in {source.topics} "
                             f"(e.g. {', '.join(qid_order(unknown)[:5])})")
    held_out = validation_queries(qrels, source.train_qids, source.relevant_min_grade, config.validation_fraction,
                                  config.seed, source.name)
    trained = (source.train_qids if source.train_qids is not None else frozenset(qrels)) - held_out
    uncapped = dataclasses.replace(config, max_pairs=None)
    split = config.unit != "documents"  # the cap counts passage (sentence) pairs: applied after the split
    pairs = build_pairs(qrels, run, uncapped if split else config, source.relevant_min_grade, trained)
    validation = build_pairs(qrels, run, uncapped, source.relevant_min_grade, held_out)
    if not pairs:
        raise InputError(f"{source.name}: no training pairs (no query with a judgment of grade >= "
                         f"{source.relevant_min_grade} in {source.qrels} among the training queries)")
    qids = {pair.qid for pair in pairs}
    # The caller decides which queries are for training; make sure no other one slipped in.
    assert source.train_qids is None or qids | held_out <= source.train_qids
    assert not qids & held_out
    untitled = (qids | held_out) - topics.keys()
    if untitled:
        raise InputError(f"{source.name}: queries {', '.join(qid_order(untitled)[:5])} of {source.qrels} "
                         f"have no topic in {source.topics}")
    raw_docs = read_docs(source.docs, {pair.doc_id for pair in pairs + validation})
    units_of = unit_cutter(config) if split else None
    if split:
        texts = {doc_id: [unit.text for unit in units_of(doc_id, *title_and_body(*raw_docs[doc_id]))] for doc_id in raw_docs}
        pairs, validation = split_into_passages(pairs, texts), split_into_passages(validation, texts)
        if config.positives == "all":  # else capped once the filter has left out the other units (best_units)
            pairs = capped(pairs, config)
        docs = {passage_key(doc_id, i): text for doc_id, doc_texts in texts.items() for i, text in enumerate(doc_texts)}
    else:
        docs = {doc_id: " ".join(part for part in title_text if part) for doc_id, title_text in raw_docs.items()}
    record = {
        "name": source.name,
        "files": {kind: str(path) for kind, path in source.files().items()},
        "sha256": {kind: file_sha256(path) for kind, path in source.files().items()},
        "train_qids": None if source.train_qids is None else {
            "count": len(source.train_qids), "sha256": sha256_text("\n".join(qid_order(source.train_qids)))},
        "relevant_min_grade": source.relevant_min_grade,
        "unit": config.unit,
        "levels": sorted({pair.level for pair in pairs + validation}),
        "queries": len(qids),
        **pair_counts(pairs, validation),
        "validation_queries": len(held_out),
    }
    return Examples(pairs, validation, topics, docs, record)


def pair_counts(pairs: Sequence[TrainingPair], validation: Sequence[TrainingPair]) -> dict[str, int]:
    positives = sum(pair.label for pair in pairs)
    return {"pairs": len(pairs), "positives": positives, "negatives": len(pairs) - positives,
            "validation_pairs": len(validation), "validation_positives": sum(pair.label for pair in validation)}


def passage_key(doc_id: str, passage: int) -> str:
    return f"{doc_id}{PASSAGE_MARK}{passage}"


def unit_document(key: str) -> str:
    """The document of a passage (sentence) key."""
    return key.rsplit(PASSAGE_MARK, 1)[0]


def split_into_passages(pairs: Sequence[TrainingPair], texts: Mapping[str, Sequence[str]]) -> list[TrainingPair]:
    """A document pair becomes one pair per passage or sentence (`texts`: each document's units, as the
    segment stage cuts them), with the document's label and level: every unit of a relevant document is
    relevant, noise that a teacher's soft label can temper."""
    return [pair._replace(doc_id=passage_key(pair.doc_id, i)) for pair in pairs for i in range(len(texts[pair.doc_id]))]


def capped(items: list, config: TrainingConfig) -> list:
    """At most `max_pairs` of the items (pairs or documents), a seeded sample in their order."""
    if config.max_pairs is None or len(items) <= config.max_pairs:
        return items
    return [items[i] for i in sorted(random.Random(config.seed).sample(range(len(items)), config.max_pairs))]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def without_long_queries(tokenizer: Any, source: Source, example: Examples, max_length: int) -> Examples:
    """A query is never truncated: one that leaves less than MIN_TEXT_TOKENS for the text is left out
    of training and validation (CISI's longest queries at 192 tokens), and the record says which."""
    long = []
    for qid in qid_order({pair.qid for pair in example.pairs + example.validation}):
        length = len(tokenizer(example.topics[qid])["input_ids"]) + 1  # [CLS] q [SEP] and the final [SEP]
        if length + MIN_TEXT_TOKENS > max_length:
            long.append(qid)
    if not long:
        return example
    pairs = [pair for pair in example.pairs if pair.qid not in long]
    validation = [pair for pair in example.validation if pair.qid not in long]
    if not pairs:
        raise InputError(f"{source.topics}: every training query leaves less than {MIN_TEXT_TOKENS} tokens for the "
                         f"text within max_length {max_length}; raise max_length")
    left_out = {"qids": long, "pairs": len(example.pairs) - len(pairs),
                "validation_pairs": len(example.validation) - len(validation)}
    print(f"{source.name}: {len(long)} queries leave less than {MIN_TEXT_TOKENS} tokens for the text within "
          f"max_length {max_length}; their {left_out['pairs']} pairs are left out", file=sys.stderr)
    return example._replace(pairs=pairs, validation=validation,
                            record={**example.record, "long_queries_left_out": left_out})
