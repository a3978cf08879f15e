"""Fine-tune a BERT relevance classifier on query–document judgments (as Nogueira & Cho, and Birch).

Input is `[CLS] query [SEP] title text [SEP]` with a two-way softmax head and cross-entropy loss. A
bi-encoder (head `bi_encoder`) trains on the same pairs as a two-way classifier of its cosine, query
and text encoded apart (models.CosineClassifier), and is saved as a bi-encoder again.
A training *source* is one collection's files: docs.jsonl ({"id","title","text"}), topics.tsv,
qrels and a first-stage TREC run. Positives are the judged-relevant documents of each training
query; negatives are drawn (seeded, per query) from that query's top run candidates, never a
judged-relevant document.

`train()` fine-tunes on one source (or a mix of several) and writes an HF checkpoint with
`reranker.json` (what it was trained on, how, checksums, fingerprint), `train_log.jsonl` and
`loss.png`. `train_chain()` fine-tunes on several sources in turn (A, then B from A's weights),
keeping each stage. A complete checkpoint whose inputs and hyper-parameters match is reused.

    python -m reranker train --base sentence-transformers/all-MiniLM-L6-v2 \\
        --docs docs.jsonl --topics topics.tsv --qrels qrels.txt --run bm25.run --out ckpt/scifact
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import hashlib
import json
import math
import os
import random
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import torch

from reranker.core import hardware
from reranker.core.arguments import add_config
from reranker.core.config import defaults as config_defaults
from reranker.core.flags import overlay
from reranker.core.settings import RULE_ONLY
from reranker.formats.atomic import atomic_dir, atomic_write, write_lines
from reranker.formats.docs import iter_docs, read_docs
from reranker.formats.errors import FormatError, InputError, exits_on_input_error
from reranker.formats.ids import qid_order
from reranker.formats.qrels import Qrels, read_qrels
from reranker.formats.runs import Run, read_run, sorted_docs
from reranker.formats.segments import SentenceSplitter, passage_units, sentence_units, title_and_body
from reranker.formats.text import file_sha256, open_text
from reranker.formats.topics import read_topics_tsv
from reranker.neural import models
from reranker.neural.batching import pad_batch, pad_id, tokenize_pairs
from reranker.neural.forward import cosines
from reranker.neural.objectives import Binary, Objective, calibrate, carried_map, level
from reranker.neural.pretraining import IGNORE, mask_tokens, nsp_pairs, split_documents

LOG_FILE = "train_log.jsonl"
VALIDATION_FILE = "validation_log.jsonl"
PLOT_FILE = "loss.png"
CLIP_NORM = 1.0
MIN_TEXT_TOKENS = 16
SELECTIONS = ("best", "last")
TRAINABLE = ("all", "head")
UNITS = ("documents", "passages", "sentences")
TEACHER_OBJECTIVES = ("distill", "soft_labels")
POSITIVES = ("all", "best")
PASSAGE_MARK = "#"  # a passage's text key: <doc_id>#<passage number>
BUCKET_BATCHES = 50  # batches per sorted window: similar lengths within a batch, random order across
HEAD_FIT_PAIRS = 512  # training pairs a carried head's map is fitted on: a forward pass each, 2 numbers per output


class _Settings:
    """Checks and conversions of TrainingConfig (whose fields come from the schema)."""

    def __post_init__(self) -> None:
        if not 0 <= self.validation_fraction < 1:
            raise InputError(f"validation_fraction must be in [0, 1), not {self.validation_fraction}")
        if self.select not in SELECTIONS:
            raise InputError(f"select must be one of {', '.join(SELECTIONS)}, not {self.select!r}")
        if self.eval_every < 1:
            raise InputError("eval_every must be positive")
        if self.trainable not in TRAINABLE:
            raise InputError(f"trainable must be one of {', '.join(TRAINABLE)}, not {self.trainable!r}")
        if self.unit not in UNITS:
            raise InputError(f"unit must be one of {', '.join(UNITS)}, not {self.unit!r}")
        if (self.objective in TEACHER_OBJECTIVES) != (self.teacher is not None):
            raise InputError(f"a teacher goes with the {' or '.join(TEACHER_OBJECTIVES)} objective: give both or neither")
        if self.head_from is not None and self.task == "mlm":
            raise InputError("head_from carries a relevance head: task mlm trains none")
        if self.positives not in POSITIVES:
            raise InputError(f"positives must be one of {', '.join(POSITIVES)}, not {self.positives!r}")
        if (self.positives == "best") != (self.positive_filter is not None):
            raise InputError("a positive_filter goes with positives: best (it picks each relevant document's best unit): "
                             "give both or neither")
        if self.positives == "best" and (self.unit == "documents" or self.task != "rank"):
            raise InputError("positives: best picks among a relevant document's units: it needs task rank and unit "
                             "passages or sentences")

    @classmethod
    def from_mapping(cls, values: Mapping[str, Any]) -> TrainingConfig:
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(values) - known
        if unknown:
            raise InputError(f"unknown training settings: {', '.join(sorted(unknown))}; known: {', '.join(sorted(known))}")
        return cls(**values)

    def as_dict(self) -> dict[str, Any]:
        """JSON's view: sequences as lists (so a written reranker.json compares equal)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(self).items()}


# Hyper-parameters: one field per `training:` setting of the config schema, with its default and
# description there (`gpus` is the scheduler's, not the trainer's; `negatives_from` picks the --run a rule
# hands the trainer: reranker.core.settings.RULE_ONLY).
TrainingConfig = dataclasses.make_dataclass(
    "TrainingConfig",
    [(name, Any, dataclasses.field(default=tuple(value) if isinstance(value, list) else value))
     for name, value in config_defaults()["training"].items() if name not in ("gpus", *RULE_ONLY)],
    bases=(_Settings,), frozen=True)
TrainingConfig.__module__ = __name__
DEFAULT_TRAINING = TrainingConfig()


@dataclass(frozen=True)
class Source:
    """One collection's training files. `train_qids` (when given) are the only queries trained on."""

    name: str
    docs: Path
    topics: Path
    qrels: Path
    run: Path
    train_qids: frozenset[str] | None = None
    relevant_min_grade: int = 1

    def files(self) -> dict[str, Path]:
        return {"docs": Path(self.docs), "topics": Path(self.topics), "qrels": Path(self.qrels), "run": Path(self.run)}


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


def fold_training_queries(folds_path: str | os.PathLike, fold: str, topics_path: str | os.PathLike) -> frozenset[str]:
    """The collection's queries outside `fold`'s test queries; every query of the folds must be in the topics."""
    from reranker.formats.folds import fold_queries, fold_test_queries

    (folds, test), topics = fold_test_queries(folds_path, fold), read_topics_tsv(topics_path)
    unknown = sorted(fold_queries(folds) - topics.keys(), key=lambda q: (len(q), q))
    if unknown:
        raise FormatError(folds_path, None, f"{len(unknown)} queries of the folds are not in the collection's topics "
                          f"{topics_path}, e.g. {', '.join(unknown[:5])}")
    return frozenset(topics) - test


def read_qids(path: str | os.PathLike) -> frozenset[str]:
    """Query ids separated by whitespace (one per line, typically)."""
    with open_text(path) as f:
        qids = frozenset(f.read().split())
    if not qids:
        raise FormatError(path, None, "no query ids")
    return qids


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


def _corpus(source: Source) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """All documents of a source, and the record of what a pre-training checkpoint read."""
    docs = {doc.doc_id: (doc.title, doc.text) for _, doc in iter_docs(source.docs)}
    record = {"name": source.name, "files": {"docs": str(source.docs)}, "sha256": {"docs": file_sha256(source.docs)},
              "train_qids": None, "relevant_min_grade": None, "documents": len(docs)}
    return docs, record


def capped(items: list, config: TrainingConfig) -> list:
    """At most `max_pairs` of the items (pairs or documents), a seeded sample in their order."""
    if config.max_pairs is None or len(items) <= config.max_pairs:
        return items
    return [items[i] for i in sorted(random.Random(config.seed).sample(range(len(items)), config.max_pairs))]


def load_nsp_source(source: Source, config: TrainingConfig) -> Examples:
    """Next-sentence pairs of a source's documents: pairs from `pretrain_fraction` of them, validation from the rest."""
    docs, record = _corpus(source)
    trained, held = split_documents(list(docs), config.pretrain_fraction, config.seed)
    texts: dict[str, str] = {}

    def as_pairs(doc_ids: Sequence[str]) -> list[TrainingPair]:
        pairs = []
        for number, pair in enumerate(nsp_pairs({d: docs[d] for d in doc_ids}, config.nsp_pairs, config.seed)):
            first, second = f"{pair.doc_id}/{number}/a", f"{pair.doc_id}/{number}/b"
            texts[first], texts[second] = pair.first, pair.second
            pairs.append(TrainingPair(first, second, pair.label, pair.label))
        return pairs

    pairs, validation = capped(as_pairs(trained), config), capped(as_pairs(held), config)
    record.update(pairs=len(pairs), positives=sum(p.label for p in pairs), validation_pairs=len(validation),
                  nsp_pairs=config.nsp_pairs, levels=[0, 1])
    return Examples(pairs, validation, texts, texts, record)


def load_mlm_source(source: Source, config: TrainingConfig, tokenizer: Any) -> Examples:
    """A source's documents, masked: `pretrain_fraction` to train on, the rest held out (Encoded, not pairs)."""
    docs, record = _corpus(source)
    trained, held = split_documents(list(docs), config.pretrain_fraction, config.seed)

    def masked(doc_ids: Sequence[str], offset: int) -> Encoded:
        texts = [" ".join(part for part in docs[d] if part) for d in doc_ids]
        result = mask_tokens(tokenizer, texts, config.max_length, config.mask_probability, config.consecutive_masking,
                             config.seed + offset)
        return Encoded(result.ids, [[0] * len(ids) for ids in result.ids], torch.empty(0), list(doc_ids),
                       token_labels=result.labels)

    train_part, held_part = masked(capped(trained, config), 0), masked(capped(held, config), 1)
    record.update(pairs=len(trained), validation_pairs=len(held), mask_probability=config.mask_probability,
                  consecutive_masking=config.consecutive_masking,
                  masked_tokens=sum(label != IGNORE for labels in train_part.token_labels for label in labels))
    return Examples(train_part, held_part, {}, {}, record)


def _padded_labels(encoded: Encoded, rows: Sequence[int], device: torch.device) -> torch.Tensor:
    width = max(len(encoded.token_labels[i]) for i in rows)
    return torch.tensor([encoded.token_labels[i] + [IGNORE] * (width - len(encoded.token_labels[i])) for i in rows],
                        device=device)


def masked_lm_loss(logits: torch.Tensor, encoded: Encoded, rows: Sequence[int], device: torch.device) -> torch.Tensor:
    labels = _padded_labels(encoded, rows, device)
    return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE)


def validate_masked_lm(model: Any, encoded: Encoded, pad_id: int, device: torch.device, dtype: torch.dtype,
                       batch_size: int = 64) -> dict[str, float]:
    """Held-out masked-LM loss and token accuracy (the share of masked tokens predicted exactly)."""
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        for start in range(0, len(encoded.ids), batch_size):
            rows = list(range(start, min(start + batch_size, len(encoded.ids))))
            logits = model(**collate(encoded, rows, pad_id, device)).logits.float()
            labels = _padded_labels(encoded, rows, device)
            kept = labels != IGNORE
            total_loss += float(torch.nn.functional.cross_entropy(logits[kept], labels[kept], reduction="sum"))
            correct += int((logits[kept].argmax(dim=-1) == labels[kept]).sum())
            count += int(kept.sum())
    model.train(was_training)
    return {"loss": total_loss / max(count, 1), "accuracy": correct / max(count, 1)}


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _inputs(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a checkpoint depends on: base weights, hyper-parameters, data (by content, not path)."""
    return {
        "base_fingerprint": meta.get("base_fingerprint"),
        "training": meta.get("training"),
        "sources": [{key: source.get(key) for key in ("name", "sha256", "train_qids", "relevant_min_grade")}
                    for source in meta.get("sources", [])],
    }


def inputs_key(meta: Mapping[str, Any]) -> str:
    """A digest of what a checkpoint depends on: a resume state is used only for the same inputs."""
    return hashlib.sha256(json.dumps(_inputs(meta), sort_keys=True, default=str).encode()).hexdigest()


def resume_path(out_dir: str | os.PathLike) -> Path:
    """Where training keeps its state between checks (beside the checkpoint, removed once it is published)."""
    out_dir = Path(out_dir)
    return out_dir.with_name(out_dir.name + ".resume.pt")


def write_resume(path: Path, state: dict[str, Any]) -> None:
    """Written beside and renamed: a kill, or a full disk, while saving leaves the previous state intact."""
    with atomic_write(path, binary=True) as f:  # makes the folder: a chain's stages live in the checkpoint's
        torch.save(state, f)


def load_resume(path: Path, key: str) -> dict[str, Any] | None:
    """The saved state for these inputs, or None (absent, unreadable, or from other inputs: then removed)."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 (a truncated file from an older version: start over)
        print(f"{path}: unreadable resume state ({type(err).__name__}), training from the start", file=sys.stderr)
        state = None
    if state is None or state.get("key") != key:
        path.unlink(missing_ok=True)
        return None
    return state


def is_complete(out_dir: str | os.PathLike) -> bool:
    return bool(models.read_meta(out_dir).get("complete")) if Path(out_dir).is_dir() else False


@contextlib.contextmanager
def deterministic(seed: int) -> Iterator[None]:
    """Seed python, numpy and torch; deterministic torch kernels for the duration, and cuDNN's attention
    off as in scoring (hardware.disable_cudnn_attention says why). PyTorch's own flash and
    memory-efficient attention still warn that their backward pass is not deterministic; 20 steps run
    twice from one seed were bit-identical on an H200, with cuDNN's attention on and off
    (results/benchmarks/gpu_train_throughput*.json)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    cudnn_attention = hardware.disable_cudnn_attention()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)
        torch.backends.cuda.enable_cudnn_sdp(cudnn_attention)


def optimizer_for(model: torch.nn.Module, config: TrainingConfig) -> torch.optim.AdamW:
    """AdamW; biases and LayerNorm weights are not decayed."""
    no_decay = {id(p) for module in model.modules() if isinstance(module, torch.nn.LayerNorm) for p in module.parameters()}
    no_decay |= {id(p) for name, p in model.named_parameters() if name.endswith("bias")}
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if id(p) not in no_decay], "weight_decay": config.weight_decay},
              {"params": [p for p in params if id(p) in no_decay], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.learning_rate)


class Encoded(NamedTuple):
    """Pairs tokenised once: `[CLS] query [SEP] text [SEP]`, the text truncated to fit."""

    ids: list[list[int]]
    types: list[list[int]]
    targets: torch.Tensor  # each pair's target under the objective
    qids: list[str]
    relevant: Sequence[bool] = ()  # judged relevant (for MRR)
    token_labels: Sequence[list[int]] = ()  # masked-LM targets per token (IGNORE where not masked)


def encode_texts(tokenizer: Any, queries: Sequence[str], texts: Sequence[str], targets: torch.Tensor, max_length: int,
                 qids: Sequence[str] = (), relevant: Sequence[bool] = (), truncation: str = "only_second") -> Encoded:
    """Tokenise (query, text) pairs once, without padding; the text is truncated to fit."""
    if not queries:
        return Encoded([], [], targets[:0], list(qids), list(relevant))
    ids, types = tokenize_pairs(tokenizer, queries, texts, truncation, max_length)
    return Encoded(ids, types, targets, list(qids), list(relevant))


def split_pairs(examples: Sequence[Examples], split: str) -> list[tuple[Examples, TrainingPair]]:
    """Every source's pairs of `split` ("pairs" or "validation") with their source, in the one order that
    encode() and a teacher's scores share."""
    return [(example, pair) for example in examples for pair in getattr(example, split)]


def encode(tokenizer: Any, examples: Sequence[Examples], split: str, objective: Objective, max_length: int,
           truncation: str = "only_second") -> Encoded:
    """The `split` ("pairs" or "validation") of every source, tokenised; qids are `source<TAB>qid`."""
    pairs = split_pairs(examples, split)
    targets = objective.targets([p.level for _, p in pairs], [p.label for _, p in pairs])
    return encode_texts(tokenizer, [ex.topics[p.qid] for ex, p in pairs], [ex.docs[p.doc_id] for ex, p in pairs],
                        targets, max_length, [f"{ex.record['name']}\t{p.qid}" for ex, p in pairs],
                        [bool(p.label) for _, p in pairs], truncation)


def collate(encoded: Encoded, rows: Sequence[int], pad_id: int, device: torch.device) -> dict[str, torch.Tensor]:
    """A batch padded to its own longest pair."""
    return pad_batch([encoded.ids[i] for i in rows], [encoded.types[i] for i in rows], pad_id, device)


def epoch_batches(lengths: Sequence[int], batch_size: int, generator: torch.Generator, bucketed: bool) -> list[list[int]]:
    """One epoch's batches. Bucketed: a random permutation, sorted by length within windows of
    BUCKET_BATCHES batches, cut into batches, and the batches shuffled (little padding, random order)."""
    order = torch.randperm(len(lengths), generator=generator).tolist()
    if not bucketed:
        return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    window = batch_size * BUCKET_BATCHES
    batches = []
    for start in range(0, len(order), window):
        chunk = sorted(order[start:start + window], key=lambda i: lengths[i])
        batches += [chunk[j:j + batch_size] for j in range(0, len(chunk), batch_size)]
    return [batches[i] for i in torch.randperm(len(batches), generator=generator).tolist()]


def freeze_encoder(model: torch.nn.Module) -> None:
    """Only the head trains: the classifier (and BERT's pooler, part of the [CLS] head)."""
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name.startswith("classifier") or ".pooler." in f".{name}"


def batched_logits(model: Any, encoded: Encoded, n_logits: int, pad_id: int, device: torch.device,
                   dtype: torch.dtype, batch_size: int = 64) -> torch.Tensor:
    """Logits of tokenised pairs in their order, scored in batches of similar length."""
    order = sorted(range(len(encoded.ids)), key=lambda i: (len(encoded.ids[i]), i))
    logits = torch.empty((len(order), n_logits))
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            logits[rows] = model(**collate(encoded, rows, pad_id, device)).logits.float().cpu()
    return logits


def teacher_logits(teacher: models.Classifier, encoded: Encoded, relevant_index: int, pad_id: int,
                   dtype: torch.dtype) -> torch.Tensor:
    """A two-way teacher's logits on tokenised pairs, ordered so that the relevant one is at `relevant_index`."""
    if teacher.n_logits != 2:
        raise models.CheckpointError(f"a teacher needs a two-way head, {teacher.source} has {teacher.n_logits} logit(s)")
    out = batched_logits(teacher.model, encoded, 2, pad_id, next(teacher.model.parameters()).device, dtype)
    return out if teacher.relevant_index == relevant_index else out.flip(1)


def teacher_cosines(teacher: models.Classifier, examples: Sequence[Examples], split: str, max_length: int,
                    dtype: torch.dtype) -> torch.Tensor:
    """A bi-encoder teacher's cosine of each pair of `split`, in encode()'s order (each side within `max_length`).

    Each split is encoded on its own: in bf16 a batch's make-up moves a cosine by up to ~6e-4, so encoding
    the splits together would not give the measured checkpoint (results/ablation/birch_soft_labels.md) again."""
    pairs = split_pairs(examples, split)
    return relevance_scores(teacher, [ex.topics[p.qid] for ex, p in pairs], [ex.docs[p.doc_id] for ex, p in pairs],
                            max_length, dtype)


def relevance_scores(scorer: models.Classifier, queries: Sequence[str], texts: Sequence[str], max_length: int,
                     dtype: torch.dtype) -> torch.Tensor:
    """A checkpoint's relevance score of each (query, text): a bi-encoder's cosine, a two-way classifier's log-odds."""
    device = next(scorer.model.parameters()).device
    if not queries:
        return torch.empty(0)
    if scorer.head == "bi_encoder":
        return cosines(scorer.model, scorer.tokenizer, queries, texts, max_length, 64, device, dtype)
    if scorer.n_logits != 2:
        raise models.CheckpointError(f"a filter needs a two-way head or a bi-encoder, {scorer.source} has "
                                     f"{scorer.n_logits} logit(s)")
    ids, types = tokenize_pairs(scorer.tokenizer, queries, texts, "only_second", max_length)
    logits = batched_logits(scorer.model, Encoded(ids, types, torch.empty(0), []), 2, pad_id(scorer.tokenizer),
                            device, dtype)
    return logits[:, scorer.relevant_index] - logits[:, 1 - scorer.relevant_index]


def best_units(examples: Sequence[Examples], config: TrainingConfig, device: torch.device,
               dtype: torch.dtype) -> tuple[list[Examples], dict[str, Any]]:
    """Cleaner positives (positives: best): of each relevant document's units only the one the filter
    checkpoint scores highest stays a positive; its other units are left out, neither positive (they may
    not be relevant) nor negative (they may be). Held-out pairs alike, so that the kept step is chosen on
    the same task; the cap on training pairs is applied after."""
    scorer = models.load_classifier(config.positive_filter, head=config.positive_filter_head, device=device)
    kept, record = [], {"checkpoint": str(config.positive_filter), "head": scorer.head,
                        "fingerprint": scorer.fingerprint}
    for example in examples:
        splits = {}
        for split in ("pairs", "validation"):
            pairs = getattr(example, split)
            positive = [pair for pair in pairs if pair.label]
            scores = relevance_scores(scorer, [example.topics[p.qid] for p in positive],
                                      [example.docs[p.doc_id] for p in positive], config.max_length, dtype).tolist()
            best: dict[tuple[str, str], tuple[float, str]] = {}
            for pair, score in zip(positive, scores):
                key = (pair.qid, unit_document(pair.doc_id))
                if key not in best or score > best[key][0]:  # the first unit wins a tie
                    best[key] = (score, pair.doc_id)
            chosen = {(qid, unit) for (qid, _), (_, unit) in best.items()}
            splits[split] = [pair for pair in pairs if not pair.label or (pair.qid, pair.doc_id) in chosen]
        pairs = capped(splits["pairs"], config)
        left_out = {"pairs": len(example.pairs) - len(splits["pairs"]),
                    "validation_pairs": len(example.validation) - len(splits["validation"])}
        kept.append(example._replace(pairs=pairs, validation=splits["validation"], record={
            **example.record, **pair_counts(pairs, splits["validation"]), "positives_left_out": left_out}))
    return kept, record


def soft_labels(teacher: models.Classifier, examples: Sequence[Examples], data: Encoded, held_out: Encoded,
                objective: Objective, config: TrainingConfig, pad_id: int, dtype: torch.dtype,
                record: dict[str, Any]) -> tuple[Encoded, Encoded]:
    """Targets (1 - w) x judged + w x the teacher's P(relevant), w = teacher_weight: a two-way classifier's
    softmax, or a bi-encoder's cosine calibrated on the training pairs (never on the held-out ones)."""
    relevant, weight = objective.relevant_index, config.teacher_weight
    if teacher.head == "bi_encoder":
        train_cos, held_cos = (teacher_cosines(teacher, examples, split, config.max_length, dtype)
                               for split in ("pairs", "validation"))
        a, b = calibrate(train_cos, data.relevant)
        probabilities = [torch.sigmoid(a * c.double() + b).float() for c in (train_cos, held_cos)]
        record["calibration"] = {"a": round(a, 6), "b": round(b, 6)}
    else:
        probabilities = [torch.softmax(teacher_logits(teacher, encoded, relevant, pad_id, dtype), dim=1)[:, relevant]
                         for encoded in (data, held_out)]
    record["weight"] = weight
    # The teacher's own held-out MRR beside the student's (validation_mrr): whether the student passes it.
    held = probabilities[1].tolist()
    record["validation_mrr"] = round(mrr(held_out.qids, held, held_out.relevant), 6)
    record["validation_mrr_by_source"] = mrr_by_source(held_out.qids, held, held_out.relevant)
    mixed = []
    for encoded, p in zip((data, held_out), probabilities):
        teacher_rows = torch.stack([1 - p, p] if relevant == 1 else [p, 1 - p], dim=1)
        mixed.append(encoded._replace(targets=(1 - weight) * encoded.targets + weight * teacher_rows))
    return mixed[0], mixed[1]


def subset(encoded: Encoded, rows: Sequence[int]) -> Encoded:
    """The pairs `rows` of tokenised pairs (ranking pairs: no token labels)."""
    return Encoded([encoded.ids[i] for i in rows], [encoded.types[i] for i in rows], encoded.targets[list(rows)],
                   [encoded.qids[i] for i in rows], [encoded.relevant[i] for i in rows])


def head_fit_scores(model: Any, data: Encoded, n_logits: int, column: int, pad_id: int, device: torch.device,
                    dtype: torch.dtype, seed: int) -> tuple[Encoded, torch.Tensor]:
    """HEAD_FIT_PAIRS training pairs drawn with their own seeded generator (the training RNG is left as it
    was), and logit `column` on each, in eval mode (no dropout in what a head's start is fitted to)."""
    generator = torch.Generator().manual_seed(seed)
    sample = subset(data, torch.randperm(len(data.ids), generator=generator)[:HEAD_FIT_PAIRS].tolist())
    was_training = model.training
    model.eval()
    scores = batched_logits(model, sample, n_logits, pad_id, device, dtype)[:, column]
    model.train(was_training)
    return sample, scores


def carry_head(classifier: models.Classifier, source: str, data: Encoded, objective: Objective, pad_id: int,
               device: torch.device, dtype: torch.dtype, seed: int) -> dict[str, Any]:
    """Start the classifier's head from `source`'s trained two-way head, so that rows of every objective
    start alike: a two-way objective's head is copied; any other's outputs are each an affine map of the
    two-way head's log-odds (on this encoder), fitted to the objective's loss on HEAD_FIT_PAIRS training pairs."""
    donor = models.load_classifier(source)
    if donor.n_logits != 2 or not models.LOADERS[donor.head].sized:
        raise models.CheckpointError(f"head_from {source}: needs a two-way linear head, it has a {donor.head} "
                                     f"head with {donor.n_logits} logit(s)")
    if donor.head != classifier.head:
        raise models.CheckpointError(f"head_from {source}: its {donor.head} head reads other features than the "
                                     f"{classifier.head} head of {classifier.source}")
    weight, bias = donor.model.classifier.weight.detach().float(), donor.model.classifier.bias.detach().float()
    head = classifier.model.classifier
    if weight.shape[1] != head.weight.shape[1]:
        raise models.CheckpointError(f"head_from {source}: hidden size {weight.shape[1]}, not {head.weight.shape[1]}")
    record: dict[str, Any] = {"checkpoint": str(source), "head": donor.head, "fingerprint": donor.fingerprint}
    relevant = donor.relevant_index
    with torch.no_grad():
        if isinstance(objective.rule, Binary):  # the same two-way head, relevant row where the student reads it
            flip = relevant != objective.relevant_index
            head.weight.copy_(weight.flip(0) if flip else weight)
            head.bias.copy_(bias.flip(0) if flip else bias)
            return record | {"copied": True}
        log_odds, offset = weight[relevant] - weight[1 - relevant], bias[relevant] - bias[1 - relevant]
        head.weight.zero_()
        head.bias.zero_()
        head.weight[0], head.bias[0] = log_odds, offset  # output 0 reads the log-odds while the map is fitted
    sample, scores = head_fit_scores(classifier.model, data, objective.outputs, 0, pad_id, device, dtype, seed)
    alpha, beta = carried_map(objective, scores, sample.targets)
    with torch.no_grad():
        head.weight.copy_((alpha[:, None] * log_odds[None, :]).to(head.weight))
        head.bias.copy_((alpha * offset + beta).to(head.bias))
    return record | {"copied": False, "pairs": len(sample.ids), "alpha": [round(float(a), 6) for a in alpha],
                     "beta": [round(float(b), 6) for b in beta]}


def calibrate_cosine(classifier: models.Classifier, data: Encoded, pad_id: int, device: torch.device,
                     dtype: torch.dtype, seed: int) -> dict[str, Any]:
    """Start a bi-encoder's log-odds at sigmoid(a cosine + b), fitted to the judgments of HEAD_FIT_PAIRS
    training pairs: at step 0 it ranks exactly as the zero-shot bi-encoder, on the judgments' scale."""
    # Column 1 of a fresh CosineClassifier's logits is the cosine itself.
    sample, cosine = head_fit_scores(classifier.model, data, 2, 1, pad_id, device, dtype, seed)
    a, b = calibrate(cosine, sample.relevant)
    head = classifier.model.classifier
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[0.0], [a]]))
        head.bias.copy_(torch.tensor([0.0, b]))
    return {"pairs": len(sample.ids), "a": round(a, 6), "b": round(b, 6)}


def validate(model: Any, encoded: Encoded, objective: Objective, pad_id: int, device: torch.device,
             dtype: torch.dtype, batch_size: int = 64) -> dict[str, float]:
    """The objective's mean loss on the held-out pairs, and the MRR of each query's first relevant pair
    ranked by the objective's score."""
    was_training = model.training
    model.eval()
    logits = batched_logits(model, encoded, objective.outputs, pad_id, device, dtype, batch_size)
    model.train(was_training)
    loss = float(objective.loss(logits, encoded.targets))
    return {"loss": loss, "mrr": mrr(encoded.qids, objective.score(logits).tolist(), encoded.relevant)}


def reciprocal_ranks(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> dict[str, float]:
    """Each query's reciprocal rank of its first judged-relevant pair, its pairs ranked by score (0 if none)."""
    by_query: dict[str, list[tuple[float, bool]]] = {}
    for qid, score, judged in zip(qids, scores, relevant):
        by_query.setdefault(qid, []).append((score, judged))
    reciprocal = {}
    for qid, entries in by_query.items():
        ranked = sorted(entries, key=lambda entry: -entry[0])
        first = next((rank for rank, (_, judged) in enumerate(ranked, start=1) if judged), None)
        reciprocal[qid] = 1 / first if first else 0.0
    return reciprocal


def mrr(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> float:
    reciprocal = reciprocal_ranks(qids, scores, relevant)
    return sum(reciprocal.values()) / len(reciprocal)


def mrr_by_source(qids: Sequence[str], scores: Sequence[float], relevant: Sequence[bool]) -> dict[str, float]:
    """MRR per source, for qids of encode()'s form `source<TAB>qid`."""
    per_source: dict[str, list[float]] = {}
    for qid, value in reciprocal_ranks(qids, scores, relevant).items():
        per_source.setdefault(qid.split("\t", 1)[0], []).append(value)
    return {source: round(sum(values) / len(values), 6) for source, values in per_source.items()}


def objective_for(config: TrainingConfig, examples: Sequence[Examples], relevant_index: int) -> Objective:
    """The configured objective over the grade levels the sources' qrels use; a grade beyond a mapping stops here."""
    levels = 1 + max((lv for example in examples for lv in example.record["levels"]), default=1)
    for setting in ("grade_values", "class_weights"):
        values = getattr(config, setting)
        if values is not None and len(values) < levels:
            example = next(e for e in examples if max(e.record["levels"]) >= len(values))
            raise InputError(f"{example.record['files']['qrels']}: grade {max(example.record['levels'])} is outside "
                             f"the mapping {setting} {list(values)} (levels 0..{len(values) - 1}; negative grades are 0)")
    mapped = max(len(config.grade_values or ()), len(config.class_weights or ()))
    return Objective(config.objective, max(levels, mapped), relevant_index,
                     None if config.class_weights is None else tuple(config.class_weights),
                     tuple(config.loss_weights),
                     None if config.grade_values is None else tuple(config.grade_values))


class Task(NamedTuple):
    """What the training loop needs of a task: its data, the loss of a batch, and a held-out pass."""

    data: Encoded
    held_out: Encoded
    baseline: float  # the held-out loss of a constant guess (label prior; uniform vocabulary for mlm)
    batch_loss: Callable[[torch.Tensor, Sequence[int]], torch.Tensor]
    evaluate_held_out: Callable[[], dict[str, float]]
    metric: str  # the held-out score besides the loss: mrr (pairs) or accuracy (mlm)


def load_task(base: str, sources: Sequence[Source], config: TrainingConfig, device: torch.device,
              fresh: bool) -> tuple[models.Classifier, list[Examples], Objective | None]:
    """The model and examples of `config.task`: a masked LM and its masked documents (mlm), or a
    classifier with its objective and pairs (rank: judged pairs; nsp: sentence pairs)."""
    if config.task == "mlm":
        classifier = models.load_masked_lm(base, num_layers=config.num_layers, device=device)
        models.check_length(classifier, config.max_length)
        return classifier, [load_mlm_source(sources[0], config, classifier.tokenizer)], None
    examples = [(load_nsp_source if config.task == "nsp" else load_source)(source, config) for source in sources]
    objective = objective_for(config, examples, relevant_index=1)
    classifier = models.load_classifier(base, head=config.head, num_layers=config.num_layers, seed=config.seed,
                                        device=device, num_labels=objective.outputs, fresh_head=fresh)
    models.check_length(classifier, config.max_length)
    if classifier.head == "bi_encoder":  # trains as a two-way classifier of its cosine (calibrate_cosine starts it)
        classifier = models.as_cosine_classifier(classifier)
    if classifier.n_logits != objective.outputs:
        raise models.CheckpointError(f"{base}: the {objective.name} objective needs {objective.outputs} "
                                     f"logit(s), this head has {classifier.n_logits}")
    if config.trainable == "head":
        freeze_encoder(classifier.model)
    return classifier, examples, dataclasses.replace(objective, relevant_index=classifier.relevant_index)


def masked_lm_task(classifier: models.Classifier, example: Examples, pad_id: int, device: torch.device,
                   dtype: torch.dtype) -> Task:
    data, held_out = example.pairs, example.validation
    return Task(data, held_out, math.log(classifier.tokenizer.vocab_size),
                lambda logits, rows: masked_lm_loss(logits, data, rows, device),
                lambda: validate_masked_lm(classifier.model, held_out, pad_id, device, dtype), "accuracy")


def pair_task(classifier: models.Classifier, sources: Sequence[Source], examples: Sequence[Examples],
              objective: Objective, config: TrainingConfig, pad_id: int, device: torch.device, dtype: torch.dtype,
              meta: dict[str, Any]) -> Task:
    """(query, text) or sentence pairs under the objective; a teacher's logits as targets when distilling."""
    # A query is kept whole; a sentence pair (nsp) is cut on its longer side.
    truncation = "longest_first" if config.task == "nsp" else "only_second"
    if config.task == "rank":
        examples = [_without_long_queries(classifier.tokenizer, source, example, config.max_length)
                    for source, example in zip(sources, examples)]
        meta["sources"] = [example.record for example in examples]  # with the queries left out, for reranker.json
    data = encode(classifier.tokenizer, examples, "pairs", objective, config.max_length, truncation)
    held_out = encode(classifier.tokenizer, examples, "validation", objective, config.max_length, truncation)
    if config.teacher is not None:  # the student learns the teacher's logits (or probabilities) on the same pairs
        teacher = models.load_classifier(config.teacher, head=config.teacher_head, device=device)
        meta["teacher"] = {"checkpoint": str(config.teacher), "head": teacher.head, "fingerprint": teacher.fingerprint}
        if teacher.head != "bi_encoder" and teacher.tokenizer.get_vocab() != classifier.tokenizer.get_vocab():
            raise models.CheckpointError(f"teacher {config.teacher} has another vocabulary than {classifier.source}: "
                                         "its logits would be of other token sequences")
        if objective.name == "soft_labels":
            data, held_out = soft_labels(teacher, examples, data, held_out, objective, config, pad_id, dtype, meta["teacher"])
        elif teacher.head == "bi_encoder":
            raise models.CheckpointError(f"teacher {config.teacher} is a bi-encoder: it has no logits to distill "
                                         "(the soft_labels objective takes its calibrated cosine)")
        else:
            data = data._replace(targets=teacher_logits(teacher, data, objective.relevant_index, pad_id, dtype))
            held_out = held_out._replace(targets=teacher_logits(teacher, held_out, objective.relevant_index, pad_id, dtype))
    return Task(data, held_out, objective.prior_loss(data.targets, held_out.targets),
                lambda logits, rows: objective.loss(logits, data.targets[rows].to(device)),
                lambda: validate(classifier.model, held_out, objective, pad_id, device, dtype), "mrr")


def checkpoint_meta(base: str, classifier: models.Classifier, objective: Objective | None, fresh: bool,
                    examples: Sequence[Examples], config: TrainingConfig) -> dict[str, Any]:
    """reranker.json's account of what training starts from and on (the run's results are added when it ends)."""
    model = classifier.model
    return {
        "head": classifier.head,
        "task": config.task,
        "relevant_index": classifier.relevant_index,
        "num_labels": None if objective is None else objective.outputs,
        "base": str(base),
        "base_fingerprint": classifier.fingerprint,
        "fresh_head": fresh,
        "num_layers": model.config.num_hidden_layers,
        "shape": f"{model.config.num_hidden_layers}/{model.config.hidden_size}",
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "sources": [example.record for example in examples],
        "training": config.as_dict(),
    }


@dataclass
class Loop:
    """The training loop's state: what it trains, where it stands, and what it has seen.

    A resume file holds where it stands and what it has seen, with the weights, the optimiser's and
    scheduler's state and torch's RNG: a killed run goes on from its last check bit for bit.
    """

    model: Any
    task: Task
    config: TrainingConfig
    optimizer: torch.optim.Optimizer
    scheduler: Any  # the linear warm-up and decay
    shuffler: torch.Generator  # draws each epoch's batches, apart from the dropout's RNG
    pad_id: int
    device: torch.device
    dtype: torch.dtype
    steps_per_epoch: int
    total_steps: int
    name: str  # the checkpoint's, for messages
    resume_file: Path
    resume_key: str
    autocast: Any  # the training forward's torch.autocast, built once and entered each step
    trainable: list[torch.nn.Parameter]  # the parameters that train (in the model's order), clipped each step
    lengths: list[int]  # each training pair's token count, for drawing each epoch's batches
    # where it stands
    step: int = 0
    epoch_start: torch.Tensor | None = None  # the shuffler's state when the current epoch's batches were drawn
    skip: int = 0  # batches of the current epoch trained on before a resume
    stopped_early: bool = False
    # what it has seen
    log: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # one entry per step
    checks: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # one entry per held-out pass
    best: dict[str, Any] = dataclasses.field(default_factory=dict)  # the best pass's entry, and its weights with select: best
    pairs_seen: int = 0
    tokens_seen: int = 0
    padded_seen: int = 0
    train_seconds: float = 0.0
    smoothed: float | None = None  # the progress bar's moving loss (not resumed)
    bar: Any = None  # the progress bar, while the loop runs

    @classmethod
    def begin(cls, model: Any, task: Task, config: TrainingConfig, pad_id: int, device: torch.device,
              dtype: torch.dtype, out_dir: Path, resume_key: str) -> Loop:
        """A loop at step 0, or where a saved state of the same inputs left off."""
        from transformers import get_linear_schedule_with_warmup

        model.train()
        optimizer = optimizer_for(model, config)
        steps_per_epoch = math.ceil(len(task.data.ids) / config.batch_size)
        total_steps = max(1, math.ceil(config.epochs * steps_per_epoch))
        scheduler = get_linear_schedule_with_warmup(optimizer, round(config.warmup * total_steps), total_steps)
        loop = cls(model, task, config, optimizer, scheduler, torch.Generator().manual_seed(config.seed), pad_id, device,
                   dtype, steps_per_epoch, total_steps, out_dir.name, resume_path(out_dir), resume_key,
                   torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32),
                   [p for p in model.parameters() if p.requires_grad], [len(ids) for ids in task.data.ids])
        saved = load_resume(loop.resume_file, resume_key)
        if saved is not None:
            loop.restore(saved)
        return loop

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from a saved state (see `save`)."""
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])  # dropout continues where it was
        self.log, self.checks, self.best = saved["log"], saved["checks"], saved["best"]
        self.step, self.pairs_seen, self.tokens_seen, self.padded_seen, self.train_seconds = saved["counters"]
        self.epoch_start, self.skip, self.stopped_early = saved["epoch_start"], saved["in_epoch"], saved["stopped_early"]
        print(f"train {self.name}: resumed at step {self.step} of {self.total_steps} from {self.resume_file}",
              file=sys.stderr)

    def save(self, in_epoch: int) -> None:
        """Everything the loop needs to go on from here, bit for bit, after the process dies."""
        write_resume(self.resume_file, {
            "key": self.resume_key, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "torch_rng": torch.get_rng_state(), "log": self.log,
            "checks": self.checks, "best": self.best,
            "counters": (self.step, self.pairs_seen, self.tokens_seen, self.padded_seen, self.train_seconds),
            "epoch_start": self.epoch_start, "in_epoch": in_epoch, "stopped_early": self.stopped_early})

    def run(self) -> None:
        """Train to the planned steps, or until patience runs out; then keep the selected weights."""
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total_steps, initial=self.step, unit="step", desc=f"train {self.name}", file=sys.stderr)
        try:
            if self.step == 0:  # the untrained head, the reference for every later pass (a resumed loop has it)
                self.validate()
            while self.step < self.total_steps and not self.stopped_early:
                self.epoch()
        finally:
            self.bar.close()  # ended, so that an error's line is a line of its own
        if self.best.get("state") is not None:
            self.model.load_state_dict(self.best["state"])
        self.model.eval()

    def epoch(self) -> None:
        """The current epoch's batches, from the first not yet trained on; a check and a save every `eval_every` steps."""
        if self.epoch_start is None:
            self.epoch_start = self.shuffler.get_state()
        else:  # resumed mid-epoch: draw the same batches again
            self.shuffler.set_state(self.epoch_start)
        batches = epoch_batches(self.lengths, self.config.batch_size, self.shuffler, self.config.bucketed)
        for position, batch in enumerate(batches[self.skip:], start=self.skip):
            if self.step == self.total_steps or self.stopped_early:
                break
            tick = time.perf_counter()
            inputs, loss, lr = self.optimise(batch)
            self.record(batch, inputs, loss, lr, time.perf_counter() - tick)
            if self.step % self.config.eval_every == 0 or self.step == self.total_steps:
                self.validate()
                self.save(position + 1)
        self.epoch_start, self.skip = None, 0

    def optimise(self, batch: list[int]) -> tuple[dict[str, torch.Tensor], float, float]:
        """One optimiser step on a batch: its inputs, loss and learning rate."""
        inputs = collate(self.task.data, batch, self.pad_id, self.device)
        with self.autocast:
            logits = self.model(**inputs).logits
        loss = self.task.batch_loss(logits, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.trainable, CLIP_NORM)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return inputs, loss.item(), lr

    def record(self, batch: list[int], inputs: dict[str, torch.Tensor], loss: float, lr: float, seconds: float) -> None:
        """Count a step and log its loss."""
        self.step += 1
        self.train_seconds += seconds
        self.pairs_seen += len(batch)
        self.tokens_seen += int(inputs["attention_mask"].sum())
        self.padded_seen += inputs["attention_mask"].numel()
        self.log.append({"step": self.step, "epoch": round(self.step / self.steps_per_epoch, 4), "loss": loss, "lr": lr,
                         "width": int(inputs["input_ids"].shape[1])})
        self.smoothed = loss if self.smoothed is None else 0.95 * self.smoothed + 0.05 * loss
        self.bar.set_postfix(loss=f"{self.smoothed:.4f}", refresh=False)
        self.bar.update(1)

    def validate(self) -> None:
        """A held-out pass: log it, keep the best weights, and stop once patience has run out."""
        if not len(self.task.held_out.ids):
            return
        result, metric, baseline = self.task.evaluate_held_out(), self.task.metric, self.task.baseline
        entry = {"step": self.step, "epoch": round(self.step / self.steps_per_epoch, 4), "validation_loss": result["loss"],
                 f"validation_{metric}": result[metric], "prior_loss": baseline}
        self.checks.append(entry)
        print(f"train {self.name}: step {self.step}, validation loss {result['loss']:.4f} (prior {baseline:.4f}), "
              f"{metric} {result[metric]:.4f}", file=sys.stderr)
        if not self.best or result["loss"] < self.best["entry"]["validation_loss"]:
            self.best = {"entry": entry, "state": {k: v.detach().clone() for k, v in self.model.state_dict().items()}
                         if self.config.select == "best" else None}
        passes_since_best = len(self.checks) - 1 - self.checks.index(self.best["entry"])
        self.stopped_early = self.config.patience is not None and passes_since_best >= self.config.patience

    def summary(self) -> dict[str, Any]:
        """reranker.json's account of the run: steps, losses, the selected pass and throughput."""
        metric, seconds, checks = self.task.metric, self.train_seconds, self.checks
        chosen = self.best.get("entry") if self.config.select == "best" and self.best else (checks[-1] if checks else None)
        return {
            "steps": self.step, "planned_steps": self.total_steps, "stopped_early": self.stopped_early,
            "pairs": len(self.task.data.ids), "final_loss": self.log[-1]["loss"],
            "validation": None if chosen is None else {
                "selected_step": chosen["step"], "loss": chosen["validation_loss"], metric: chosen[f"validation_{metric}"],
                "prior_loss": self.task.baseline, "untrained_loss": checks[0]["validation_loss"],
                f"untrained_{metric}": checks[0][f"validation_{metric}"], "last_loss": checks[-1]["validation_loss"],
                "pairs": len(self.task.held_out.ids), "select": self.config.select},
            "throughput": {
                "pairs_per_second": round(self.pairs_seen / seconds, 2) if seconds else None,
                "tokens_per_second": round(self.tokens_seen / seconds, 1) if seconds else None,
                "padding_fraction": round(1 - self.tokens_seen / self.padded_seen, 4) if self.padded_seen else None,
                "threads": torch.get_num_threads() if self.device.type == "cpu" else None},
        }


def publish(out_dir: Path, classifier: models.Classifier, loop: Loop, meta: dict[str, Any], precision: str,
            started: float, usage: hardware.DeviceUsage) -> None:
    """Write the trained checkpoint, its logs and loss plot; reranker.json last: a checkpoint without it is incomplete."""
    import transformers

    model = classifier.model
    with atomic_dir(out_dir, last=models.META_FILE) as tmp:
        model.save_pretrained(tmp)
        classifier.tokenizer.save_pretrained(tmp)
        write_lines(tmp / LOG_FILE, (json.dumps(entry) for entry in loop.log))
        write_lines(tmp / VALIDATION_FILE, (json.dumps(entry) for entry in loop.checks))
        plot_loss(loop.log, tmp / PLOT_FILE, title=out_dir.name, validation=loop.checks)
        if isinstance(model, models.CosineClassifier):  # saved as the plain encoder, read back as a bi-encoder
            model, index = model.encoder, 0
            meta.update(relevant_index=index, num_labels=None)
        else:
            index = classifier.relevant_index
        meta.update(
            fingerprint=models.fingerprints(model, classifier.head, index)[1],
            device=str(loop.device), precision=precision, dtype=str(loop.dtype).removeprefix("torch."), **loop.summary(),
            seconds=round(time.perf_counter() - started, 1), device_usage=usage.record(), machine=hardware.machine(),
            versions={"torch": torch.__version__, "transformers": transformers.__version__}, complete=True)
        models.write_meta(tmp, meta)
    resume_path(out_dir).unlink(missing_ok=True)  # published: nothing left to resume


def train(base: str, sources: Source | Sequence[Source], out_dir: str | os.PathLike,
          config: TrainingConfig = DEFAULT_TRAINING) -> Path:
    """Fine-tune `base` (HF id or checkpoint dir) on the pairs of `sources`, shuffled together.

    A `validation_fraction` of each source's queries is held out; every `eval_every` steps the
    held-out loss and MRR are logged, and with `select: best` the checkpoint keeps the weights of
    the step with the lowest held-out loss. Returns `out_dir`. A complete checkpoint there with the
    same inputs is kept as it is.
    """
    sources = [sources] if isinstance(sources, Source) else list(sources)
    if not sources:
        raise InputError("train() needs at least one source")
    out_dir = Path(out_dir)
    device = models.pick_device(config.device)
    precision = hardware.resolve_precision(config.precision, device)
    dtype = hardware.compute_dtype(precision, device)
    started = time.perf_counter()
    usage = hardware.DeviceUsage(device)
    if config.task != "rank" and len(sources) != 1:
        raise InputError(f"task {config.task} pre-trains on one collection's documents, not {len(sources)}")
    with deterministic(config.seed):
        base_meta = models.read_meta(base) if Path(base).is_dir() else {}
        fresh = config.fresh_head or base_meta.get("task", "rank") == "mlm"
        classifier, examples, objective = load_task(base, sources, config, device, fresh)
        meta = checkpoint_meta(base, classifier, objective, fresh, examples, config)
        if is_complete(out_dir) and _inputs(models.read_meta(out_dir)) == _inputs(meta):
            print(f"{out_dir}: complete checkpoint with the same inputs, not retrained", file=sys.stderr)
            return out_dir
        if config.positives == "best":  # after the reuse check: the filter's pass is paid only when training
            examples, meta["positive_filter"] = best_units(examples, config, device, dtype)

        pad = pad_id(classifier.tokenizer)
        if objective is None:
            task = masked_lm_task(classifier, examples[0], pad, device, dtype)
        else:
            task = pair_task(classifier, sources, examples, objective, config, pad, device, dtype, meta)
            if isinstance(classifier.model, models.CosineClassifier):
                meta["cosine_head"] = calibrate_cosine(classifier, task.data, pad, device, dtype, config.seed)
            if config.head_from is not None:
                meta["head_from"] = carry_head(classifier, config.head_from, task.data, objective, pad, device,
                                               dtype, config.seed)
        loop = Loop.begin(classifier.model, task, config, pad, device, dtype, out_dir, inputs_key(meta))
        loop.run()
    publish(out_dir, classifier, loop, meta, precision, started, usage)
    return out_dir


def train_chain(base: str, sources: Sequence[Source], out_dir: str | os.PathLike,
                config: TrainingConfig = DEFAULT_TRAINING) -> Path:
    """Fine-tune on each source in turn, each stage starting from the previous one's weights.

    Stage i < n is kept in `out_dir/stage-i-<name>`; the last stage is `out_dir` itself.
    """
    if not sources:
        raise InputError("train_chain() needs at least one source")
    out_dir = Path(out_dir)
    current = str(base)
    for number, source in enumerate(sources[:-1], start=1):
        current = str(train(current, source, out_dir / f"stage-{number}-{source.name.replace('/', '-')}", config))
    return train(current, sources[-1], out_dir, config)


def _without_long_queries(tokenizer: Any, source: Source, example: Examples, max_length: int) -> Examples:
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


def plot_loss(log: Sequence[Mapping[str, Any]], path: Path, title: str = "",
              validation: Sequence[Mapping[str, Any]] = ()) -> None:
    """Training loss per step (raw and moving average), held-out loss, and the label-prior line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([entry["step"] for entry in log])
    loss = np.array([entry["loss"] for entry in log])
    window = max(1, min(50, len(loss) // 10))
    average = np.convolve(loss, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, loss, lw=0.8, alpha=0.3, label="training loss")
    ax.plot(steps[window - 1:], average, lw=1.8, label=f"training, moving average ({window} steps)")
    if validation:
        ax.plot([e["step"] for e in validation], [e["validation_loss"] for e in validation], "o-", lw=1.8,
                label="held-out loss")
        ax.axhline(validation[0]["prior_loss"], color="grey", ls="--", lw=1.2, label="label prior")
        best = min(validation, key=lambda e: e["validation_loss"])
        ax.annotate(f"best {best['validation_loss']:.3f} @ {best['step']}", (best["step"], best["validation_loss"]),
                    textcoords="offset points", xytext=(0, -14), ha="center", fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def parse_source(spec: str) -> Source:
    """`NAME:DOCS:TOPICS:QRELS:RUN[:TRAIN_QIDS]`."""
    parts = spec.split(":")
    if len(parts) not in (5, 6) or not all(parts):
        raise InputError(f"--source {spec!r}: expected NAME:DOCS:TOPICS:QRELS:RUN[:TRAIN_QIDS]")
    name, docs, topics, qrels, run = parts[:5]
    return Source(name, Path(docs), Path(topics), Path(qrels), Path(run),
                  read_qids(parts[5]) if len(parts) == 6 else None)


HYPER_PARAMETERS = {  # flag -> TrainingConfig field
    "--lr": ("learning_rate", float), "--epochs": ("epochs", float), "--batch-size": ("batch_size", int),
    "--max-length": ("max_length", int), "--warmup": ("warmup", float), "--weight-decay": ("weight_decay", float),
    "--seed": ("seed", int), "--negatives": ("negatives_per_positive", int), "--negatives-depth": ("negatives_depth", int),
    "--max-pairs": ("max_pairs", int), "--device": ("device", str), "--num-layers": ("num_layers", int),
    "--head": ("head", str), "--precision": ("precision", str), "--validation-fraction": ("validation_fraction", float),
    "--eval-every": ("eval_every", int), "--select": ("select", str), "--patience": ("patience", int),
    "--task": ("task", str), "--objective": ("objective", str), "--enrich": ("enrich", str),
    "--nsp-pairs": ("nsp_pairs", str), "--unit": ("unit", str), "--trainable": ("trainable", str),
    "--teacher": ("teacher", str), "--teacher-head": ("teacher_head", str), "--teacher-weight": ("teacher_weight", float),
    "--head-from": ("head_from", str), "--positives": ("positives", str), "--positive-filter": ("positive_filter", str),
    "--positive-filter-head": ("positive_filter_head", str),
}


# flag -> the schema path of the setting it overrides (reranker.core.flags): a flag is checked as the configuration is
FLAGS = {**{flag: f"training.{field}" for flag, (field, _) in HYPER_PARAMETERS.items()},
         "--no-bucketing": "training.bucketed", "--threads": "threads"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reranker train", description=__doc__.split("\n\n")[0],
        epilog="One source: --docs --topics --qrels --run [--train-qids] [--name]. A chain (A, then B from A's "
               "weights): repeat --source NAME:DOCS:TOPICS:QRELS:RUN[:TRAIN_QIDS] in training order. "
               "Hyper-parameters: TrainingConfig defaults, then --config's training: (and the checkpoint's own "
               "training:), then the flags.")
    p.add_argument("--base", help="HF id or checkpoint directory to start from (default: the --checkpoint's base)")
    p.add_argument("--out", required=True, type=Path, help="checkpoint directory to write")
    p.add_argument("--docs", type=Path, help='docs.jsonl: {"id", "title", "text"} per line')
    p.add_argument("--topics", type=Path, help="topics.tsv: qid<TAB>text")
    p.add_argument("--qrels", type=Path, help="TREC qrels")
    p.add_argument("--run", type=Path, help="TREC run the negatives are drawn from")
    p.add_argument("--train-qids", type=Path, help="file of the query ids to train on (default: all judged)")
    p.add_argument("--name", help="source name (default: the docs file's folder)")
    p.add_argument("--relevant-min-grade", type=int, help="lowest relevant grade (default: the collection's, else 1)")
    p.add_argument("--source", action="append", default=[], metavar="NAME:DOCS:TOPICS:QRELS:RUN[:QIDS]")
    p.add_argument("--mix", action="store_true", help="train on the --source collections shuffled together, in one "
                   "stage (default: in turn, each from the previous weights)")
    add_config(p, "training:, the --checkpoint's entry and lineage, its collections' relevant_min_grade")
    p.add_argument("--checkpoint", help="with --config: the finetune checkpoint's name (its base and training:)")
    p.add_argument("--folds", type=Path, help="folds JSON ({fold: [test qids]}) of a checkpoint with train_fold: it "
                   "trains on the queries outside that fold")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the cores this process may use)")
    p.add_argument("--no-bucketing", dest="bucketed", action="store_const", const=False,
                   help="random batches padded to their longest pair (default: length-bucketed)")
    for flag, (field, kind) in HYPER_PARAMETERS.items():
        p.add_argument(flag, type=kind, dest=field, help=f"default: {getattr(TrainingConfig(), field)}")
    return p


def fetched_model(entry: dict, name: str, flag: str) -> str:
    """A fetched checkpoint's hub id or folder; a fine-tuned one's folder must be handed in."""
    if entry["source"] != "hf":
        raise InputError(f"checkpoint {name} is fine-tuned: give {flag}, the folder training wrote")
    return entry["model"]


@exits_on_input_error("train")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.source = [parse_source(spec) for spec in args.source]  # here, not as argparse's type: a one-line error
    single = [args.docs, args.topics, args.qrels, args.run]
    if args.source and any(single):
        raise InputError("give either --docs/--topics/--qrels/--run or --source, not both")
    if not args.source and not all(single):
        raise InputError("give --docs, --topics, --qrels and --run (or --source, repeated for a chain)")
    sources = args.source or [Source(args.name or args.docs.parent.name, args.docs, args.topics, args.qrels, args.run,
                                     read_qids(args.train_qids) if args.train_qids else None)]

    from reranker.core.config import CHECKPOINT_SETTINGS, checkpoint_config, collection_config, load_config

    flags = overlay({}, args, FLAGS)  # each flag given, checked by its setting's schema: a 0 is kept or refused
    threads = flags.pop("threads", None)
    if args.config or args.checkpoint:  # settings from the configuration alone
        # with --config, the folders the rule hands for the checkpoints the settings name, as --base
        folders = {setting: flags.pop(setting, None) for setting in CHECKPOINT_SETTINGS}
        if not args.checkpoint or flags or args.mix or args.relevant_min_grade is not None:
            raise InputError("with --config, name the --checkpoint and give no --mix or hyper-parameter flags (only "
                             "--base, --teacher and --head-from, the folders of the checkpoints it names): its settings "
                             "come from the configuration")
        from reranker.core import settings as stage_settings

        config = load_config(args.config)
        stage = stage_settings.train(config, args.checkpoint)
        checkpoint, start, mix = stage["checkpoint"], stage["base"], stage["checkpoint"]["mix"]
        base = args.base or fetched_model(start, checkpoint["base"], "--base")
        settings = stage["training"]
        settings.pop("gpus")  # a scheduler resource, not a training setting
        if start["source"] == "hf":  # a fetched base: its declared head and layer slice
            settings["head"] = settings["head"] or start.get("head")
            settings["num_layers"] = settings["num_layers"] or start.get("num_layers")
        grades = {s.name: collection_config(config, s.name)["relevant_min_grade"]
                  for s in sources if s.name in config["collections"]}
        sources = [dataclasses.replace(s, relevant_min_grade=grades.get(s.name, 1)) for s in sources]
        for setting, head in CHECKPOINT_SETTINGS.items():  # a checkpoint name of the configuration: its folder or id
            if settings.get(setting):
                entry = checkpoint_config(config, settings[setting])
                settings[setting] = folders[setting] or fetched_model(entry, settings[setting],
                                                                      f"--{setting.replace('_', '-')}")
                if head:  # and the head a hub checkpoint declares
                    settings[head] = settings[head] or (entry.get("head") if entry["source"] == "hf" else None)
        if checkpoint.get("train_fold") is not None:
            if args.folds is None or len(sources) != 1:
                raise InputError(f"checkpoint {args.checkpoint} trains on fold {checkpoint['train_fold']}'s training "
                                 "queries: give --folds and one source")
            sources = [dataclasses.replace(sources[0], train_qids=fold_training_queries(
                args.folds, checkpoint["train_fold"], sources[0].topics))]
    else:  # settings from flags alone; TrainingConfig's defaults are the schema's
        if args.base is None:
            raise InputError("give --base (or --config with --checkpoint)")
        base, mix, settings = args.base, args.mix, flags
        if args.relevant_min_grade is not None:
            sources = [dataclasses.replace(s, relevant_min_grade=args.relevant_min_grade) for s in sources]
    torch.set_num_threads(threads or hardware.cpu_threads())

    config = TrainingConfig.from_mapping(settings)
    out = train(base, sources, args.out, config) if mix else train_chain(base, sources, args.out, config)
    meta = models.read_meta(out)
    chosen = meta.get("validation") or {}
    print(f"{out}: {meta['pairs']} pairs, {meta['steps']} steps, final loss {meta['final_loss']:.4f}"
          + (f", held-out loss {chosen['loss']:.4f} at step {chosen['selected_step']} (label prior "
             f"{chosen['prior_loss']:.4f})" if chosen else "") + f", fingerprint {meta['fingerprint']}")
    return 0
