"""Score every (query, unit) pair of a run's top-K documents with a relevance classifier.

Which score is kept (`kind`):

* `logit` — the raw logit of the relevant class, no softmax. This is what Birch used:
  castorini/birch kept `predictions[:, 1]`, the index-1 logit of BertForNextSentencePrediction,
  and Capreolus' Birch port does the same. Birch's fusion weights are fitted on this scale.
* `log_prob` — log_softmax of the logits at the relevant index (logsigmoid for one-logit heads).
* `cosine` — for bi-encoders (head `bi_encoder`): the cosine of the mean-pooled query and unit
  vectors, each distinct text encoded once. A zero-shot reference, not Birch's classifier.

Precision: `exact` runs in fp32. `fast` runs in bf16 autocast on CPUs that have bf16 arithmetic
(AMX or avx512_bf16 in /proc/cpuinfo) and in bf16 (or fp16) on CUDA; elsewhere it raises
PrecisionNotApplicable with the reason instead of emulating bf16 slowly.

Speed: every pair is tokenised once, pairs are sorted by token length into batches padded only to
their own longest pair, and the model runs under torch.inference_mode with SDPA attention (no mask
when a batch has no padding). For BERT models the encoder runs in reranker.neural.forward, layer by layer
on the model's own modules, so that the last layer computes only what the head reads ([CLS] alone
for a [CLS] head). The test suite checks it against the plain Hugging Face forward, pair by pair.

Pairs are ordered by query (numeric), the document's rank in the run, then unit, and cut into
shards of whole queries (about `shard_size` pairs) written atomically to `<out>.shards/`; a killed run
resumes at the shards still missing, and scores again a shard or cache row whose checksum fails (both
are caches: reranker.neural.shards, reranker.formats.score_cache; the meta counts `shards_rejected` and
`cache_rejected`). `--part I/N` scores only the I-th of N contiguous blocks of
those shards, so that one collection spreads over N jobs (a cluster's nodes); `score gather`
concatenates the parts (the plan and the gather: reranker.neural.shards); `score join` concatenates whole runs of
disjoint queries (Radboud's folds), each checked against its sidecar. A shard's batches depend only on
its own pairs and the cache, and pairs of one query stay in one shard, so the gathered file equals
an unsharded run's byte for byte (from the same cache state; two queries with the same text are the
one way a pair can recur across shards). Scores are cached in SQLite (reranker.formats.score_cache)
under keys of (model fingerprint, kind, dtype, max length, query text, unit text), committed per
shard, so reruns and other experiments reuse them and two processes can share a cache. Batches are
formed within a shard from its uncached pairs only, so an interrupted and resumed run produces the
same bytes as an uninterrupted one from the same cache state.

Output: TSV `qid<TAB>doc_id<TAB>unit<TAB>score` and `<out>.meta.json`, whose `output` (sha256, bytes,
lines) fuse checks before it reads the scores (reranker.formats.sidecar). The segments read are checked
against theirs.
"""

from __future__ import annotations

import os
import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from reranker.core.hardware import DeviceUsage, compute_dtype, cpu_threads, disable_cudnn_attention, machine
from reranker.core.registry import SCORE_KINDS
from reranker.formats.atomic import write_json
from reranker.formats.errors import FormatError, InputError
from reranker.formats.ids import refuse_near_misses
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import Run, read_run, top_k_docs
from reranker.formats.score_cache import ScoreCache
from reranker.formats.segments import Segments, read_segments
from reranker.formats.text import meta_path
from reranker.formats.topics import read_topics_tsv
from reranker.formats.unit_scores import join_unit_scores, write_unit_scores
from reranker.neural.batching import length_batches, pad_batch, pad_id, tokenize_pairs
from reranker.neural.forward import bert_logits, cosines, supports_fast_path
from reranker.neural.models import Classifier, check_length, load_classifier, pick_device, resolve_source
from reranker.neural.objectives import argmax_score
from reranker.neural.shards import (
    part_range,
    plan_digest,
    plan_shards,
    prepare_shards,
    seal_shard,
    shard_dir,
    shards_to_score,
)

KINDS = tuple(SCORE_KINDS)  # cosine: bi-encoders only
DEFAULT_SHARD_SIZE = 20_000


@dataclass(frozen=True)
class UnitPair:
    """A query and one unit of one of its candidate documents, to be scored."""

    qid: str
    doc_id: str
    unit: int
    query: str
    text: str


# ---------------------------------------------------------------- inputs

def make_pairs(run: Run, topics: Mapping[str, str], segments: Segments,
               candidates: int, segments_path: str | os.PathLike = "segments") -> list[UnitPair]:
    """Every (query, unit) pair of the top-`candidates` documents, in the output order."""
    pairs: list[UnitPair] = []
    for qid, doc_ids in top_k_docs(run, candidates).items():
        if qid not in topics:
            raise InputError(f"query {qid} of the run has no text in the topics file")
        for rank, doc_id in enumerate(doc_ids, start=1):
            if doc_id not in segments:
                raise FormatError(segments_path, None,
                                  f"no segments for document {doc_id} (query {qid}, rank {rank}); segment the same run "
                                  f"with --candidates >= {candidates}")
            pairs.extend(UnitPair(qid, doc_id, unit, topics[qid], text) for unit, text in segments[doc_id])
    return pairs


# ---------------------------------------------------------------- model

class Scorer:
    """Batched, length-bucketed, dynamically padded scoring of (query, text) pairs."""

    def __init__(self, classifier: Classifier, kind: str = "logit", precision: str = "exact",
                 device: str = "auto", batch_size: int = 64, max_length: int | None = None,
                 threads: int | None = None, batch_tokens: int | None = None):
        if kind not in KINDS:
            raise InputError(f"kind must be one of {', '.join(KINDS)}, not {kind!r}")
        if (kind == "cosine") != (classifier.head == "bi_encoder"):
            raise InputError(f"kind {kind!r} does not fit head {classifier.head!r}: bi-encoders score by cosine, "
                             "classifiers by logit or log_prob")
        if batch_size < 1 or (batch_tokens is not None and batch_tokens < 1):
            raise InputError("batch size and batch tokens must be positive")
        self.classifier = classifier
        self.batch_tokens = batch_tokens
        self.kind = kind
        self.device = pick_device(device)
        self.dtype = compute_dtype(precision, self.device)
        self.precision = precision
        self.batch_size = batch_size
        check_length(classifier, max_length)
        self.max_length = min(max_length or classifier.max_length, classifier.max_length)
        if self.device.type == "cpu":
            self.threads = threads or cpu_threads()
            torch.set_num_threads(self.threads)
        else:
            self.threads = None
            disable_cudnn_attention()
        classifier.model.to(self.device)
        self.pad_id = pad_id(classifier.tokenizer)
        self.fast_path = classifier.head != "bi_encoder" and supports_fast_path(classifier.model)

    @property
    def cache_context(self) -> list[Any]:
        """What a pair's cached logits depend on besides the two texts (not how a score is read from them)."""
        output = "cosine" if self.kind == "cosine" else "logits"
        return [self.classifier.weights_fingerprint, output, str(self.dtype).removeprefix("torch."), self.max_length]

    @property
    def score_context(self) -> list[Any]:
        """What a written score depends on besides the two texts."""
        return [self.classifier.fingerprint, self.kind, str(self.dtype).removeprefix("torch."), self.max_length]

    def tokenize(self, queries: Sequence[str], texts: Sequence[str]) -> tuple[list[list[int]], list[list[int]]]:
        return tokenize_pairs(self.classifier.tokenizer, queries, texts, "longest_first", self.max_length)

    def _batch(self, ids: Sequence[list[int]], types: Sequence[list[int]]) -> dict[str, torch.Tensor]:
        return pad_batch(ids, types, self.pad_id, self.device)

    def read(self, logits: np.ndarray) -> np.ndarray:
        """Scores from rows of logits (or of cosines, one column), as float32."""
        if self.kind == "cosine":
            return np.asarray(logits, dtype=np.float32).reshape(len(logits), -1)[:, 0].copy()
        return self._kept(torch.from_numpy(np.asarray(logits, dtype=np.float32))).numpy()

    def _kept(self, logits: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        index = self.classifier.relevant_index
        if self.kind == "argmax":
            return argmax_score(logits)
        if self.kind == "logit":
            return logits[:, index]
        if logits.shape[1] == 1:
            return torch.nn.functional.logsigmoid(logits[:, 0])
        return torch.log_softmax(logits, dim=1)[:, index]

    def logits_tokens(self, ids: Sequence[list[int]], types: Sequence[list[int]],
                      progress: tqdm | None = None) -> np.ndarray:
        """Every logit of tokenised pairs, in their order; batches hold pairs of similar length.

        On a GPU the logits stay there until every batch has been queued: a copy to the host per
        batch would make the CPU wait for each batch before padding the next."""
        if not ids:
            return np.empty((0, 1), dtype=np.float32)
        batches = length_batches([len(x) for x in ids], self.batch_size, self.batch_tokens)
        on_device: list[tuple[list[int], torch.Tensor]] = []
        logits_out: np.ndarray | None = None
        autocast = torch.autocast(self.device.type, dtype=self.dtype, enabled=self.dtype != torch.float32)
        with torch.inference_mode(), autocast:
            for rows in batches:
                batch = self._batch([ids[i] for i in rows], [types[i] for i in rows])
                logits = (bert_logits(self.classifier.model, self.classifier.head, batch) if self.fast_path
                          else self.classifier.model(**batch).logits)
                if self.device.type != "cpu":
                    on_device.append((rows, logits.float()))
                    continue
                if logits_out is None:
                    logits_out = np.empty((len(ids), logits.shape[1]), dtype=np.float32)
                logits_out[rows] = logits.float().numpy()
                if progress is not None:
                    progress.update(len(rows))
        if on_device:
            values = torch.cat([logits for _, logits in on_device]).cpu().numpy()
            logits_out = np.empty((len(ids), values.shape[1]), dtype=np.float32)
            logits_out[[i for rows, _ in on_device for i in rows]] = values
            if progress is not None:
                progress.update(len(ids))
        return logits_out

    def score_bi_encoder(self, queries: Sequence[str], texts: Sequence[str], progress: tqdm | None = None) -> np.ndarray:
        """Cosine of each (query, text) pair; every distinct text is encoded once."""
        scores = cosines(self.classifier.model, self.classifier.tokenizer, queries, texts, self.max_length,
                         self.batch_size, self.device, self.dtype).numpy().astype(np.float32)
        if progress is not None:
            progress.update(len(scores))
        return scores

    def prepare(self, queries: Sequence[str], texts: Sequence[str]) -> tuple[list[list[int]], list[list[int]]] | None:
        """The CPU work before the model (tokens), so that it can run beside the model's work on a GPU;
        bi-encoders encode each distinct text once and prepare nothing."""
        return None if self.kind == "cosine" or not queries else self.tokenize(queries, texts)

    def logits(self, queries: Sequence[str], texts: Sequence[str], progress: tqdm | None = None,
               prepared: tuple[list[list[int]], list[list[int]]] | None = None) -> np.ndarray:
        """Every logit of (query, text) pairs (bi-encoders: the cosine, one column), float32, input order.
        `prepared`: `prepare(queries, texts)`, done earlier."""
        if not queries:
            return np.empty((0, 1), dtype=np.float32)
        if self.kind == "cosine":
            return self.score_bi_encoder(queries, texts, progress)[:, None]
        return self.logits_tokens(*(prepared or self.tokenize(queries, texts)), progress=progress)

    def score(self, queries: Sequence[str], texts: Sequence[str], progress: tqdm | None = None) -> np.ndarray:
        """Scores of (query, text) pairs, as float32 in input order."""
        if not queries:
            return np.empty(0, dtype=np.float32)
        return self.read(self.logits(queries, texts, progress))


# ---------------------------------------------------------------- shards and output

@dataclass
class _ShardWork:
    """A shard's pairs as the model will see them: cache hits, the unique pairs left, their tokens (pending)."""

    keys: list[bytes]
    known: dict[bytes, np.ndarray]
    todo: list[bytes]
    queries: list[str]  # of the pairs left, in `todo`'s order
    texts: list[str]
    tokens: Future


def score_pairs_sharded(scorer: Scorer, pairs: Sequence[UnitPair], out: str | os.PathLike,
                        cache: ScoreCache | None = None, shard_size: int = DEFAULT_SHARD_SIZE,
                        part: tuple[int, int] = (1, 1), prefetch: bool | None = None) -> dict[str, Any]:
    """Score pairs shard by shard into `out` (resuming finished shards); return counts for the meta.

    With `part` (I, N), only the shards of part I are scored, and `out` holds just those. With
    `prefetch` (default: on a GPU), the next shard is tokenised in a thread while the model scores this
    one: tokenising on the one thread that feeds the GPU leaves it idle. The bytes written are the same
    (but for a pair that recurs in the next shard, two queries with one text: it is scored again, not
    read from the cache).
    """
    out = Path(out)
    bounds = plan_shards(pairs, shard_size)
    shards = part_range(len(bounds), part)
    directory = shard_dir(out)
    prepare_shards(directory, plan_digest(pairs, [*scorer.score_context, list(part)], shard_size))
    shard_files = {i: directory / f"shard-{i:05d}.tsv" for i in shards}
    todo_shards, rejected = shards_to_score(shard_files)
    rejected_before = cache.rejected if cache is not None else 0
    part_pairs = bounds[shards.stop - 1][1] - bounds[shards.start][0] if shards else 0
    done = part_pairs - sum(bounds[i][1] - bounds[i][0] for i in todo_shards)
    counts = {"pairs": part_pairs, "shards": len(shards), "shards_resumed": len(shards) - len(todo_shards),
              "shards_rejected": rejected, "cache_hits": 0, "cache_rejected": 0, "scored": 0, "model_seconds": 0.0}
    if part != (1, 1):
        counts.update(part=f"{part[0]}/{part[1]}", plan_shards=len(bounds), plan_pairs=len(pairs),
                      first_shard=shards.start)
    progress = tqdm(total=part_pairs, initial=done, desc="score",
                    unit="pair", unit_scale=True, file=sys.stderr, smoothing=0.05)
    prefetch = scorer.device.type == "cuda" if prefetch is None else prefetch
    worker = ThreadPoolExecutor(max_workers=1) if prefetch else None

    def start(index: int) -> _ShardWork:
        """Cache lookup here (SQLite stays on this thread); tokens in the worker, or now without one."""
        shard = pairs[bounds[index][0]:bounds[index][1]]
        keys = [ScoreCache.key(scorer.cache_context, p.query, p.text) for p in shard]
        known = cache.get(list(dict.fromkeys(keys))) if cache is not None else {}
        first_pair = {}
        for key, pair in zip(keys, shard):
            first_pair.setdefault(key, pair)
        todo = [k for k in first_pair if k not in known]  # unique, in shard order
        queries, texts = [first_pair[k].query for k in todo], [first_pair[k].text for k in todo]
        if worker is not None:
            tokens = worker.submit(scorer.prepare, queries, texts)
        else:
            tokens = Future()
            tokens.set_result(None)  # tokenised inside `logits`, as the model needs them
        return _ShardWork(keys, known, todo, queries, texts, tokens)

    upcoming = start(todo_shards[0]) if todo_shards else None
    try:
        for n, index in enumerate(todo_shards):
            shard = pairs[bounds[index][0]:bounds[index][1]]
            after = todo_shards[n + 1] if n + 1 < len(todo_shards) else None
            work, upcoming = upcoming, start(after) if worker is not None and after is not None else None
            keys, known, todo = work.keys, work.known, work.todo
            counts["cache_hits"] += sum(key in known for key in keys)
            progress.update(len(shard) - len(todo))
            started = time.perf_counter()
            values = scorer.logits(work.queries, work.texts, progress, prepared=work.tokens.result())
            counts["model_seconds"] += time.perf_counter() - started
            counts["scored"] += len(todo)
            fresh = dict(zip(todo, values))
            if cache is not None:
                cache.put(fresh.items())
            known.update(fresh)
            scores = scorer.read(np.stack([known[key] for key in keys])) if keys else np.empty(0, dtype=np.float32)
            built = shard_files[index].with_name(shard_files[index].name + ".built")
            write_unit_scores(((pair.qid, pair.doc_id, pair.unit, float(value)) for value, pair in zip(scores, shard)),
                              built, record=False)
            seal_shard(built, shard_files[index])
            if worker is None and after is not None:  # looked up after this shard's scores are cached
                upcoming = start(after)
    finally:
        progress.close()  # ended, so that an error's line is a line of its own
        if worker is not None:
            worker.shutdown(wait=True, cancel_futures=True)
    counts["output"] = join_unit_scores([shard_files[i] for i in shards], out)  # the sidecar's sha256, for readers
    counts["cache_rejected"] = cache.rejected - rejected_before if cache is not None else 0
    shutil.rmtree(directory)
    return counts


def score_run(checkpoint: str, segments_path: str | os.PathLike, run_path: str | os.PathLike,
              topics_path: str | os.PathLike, out: str | os.PathLike, candidates: int = 100,
              kind: str = "logit", batch_size: int = 64, precision: str = "exact",
              cache_dir: str | os.PathLike | None = None, shard_size: int = DEFAULT_SHARD_SIZE,
              device: str = "auto", max_length: int | None = None, num_layers: int | None = None,
              threads: int | None = None, qrels_path: str | os.PathLike | None = None,
              head: str | None = None, relevant_index: int | None = None,
              queries: frozenset[str] | None = None, part: tuple[int, int] = (1, 1),
              batch_tokens: int | None = None, name: str | None = None) -> dict[str, Any]:
    """Score the top-`candidates` documents' units of a run; write `out` and `<out>.meta.json`; return the meta.

    `name` is the checkpoint's name in the configuration, recorded where `checkpoint` is the folder training wrote
    (a run's ir_metadata names the checkpoint, not a path on the machine that scored it).

    With `qrels_path`, only queries that have judgments are scored: the others cannot be evaluated.
    With `queries`, only those (a fold's test queries). With `part` (I, N), the I-th of N blocks of shards.
    """
    started = time.perf_counter()
    resolve_source(checkpoint)  # a missing checkpoint fails before the inputs are read
    run = read_run(run_path)
    if qrels_path is not None:
        judged = read_qrels(qrels_path).keys()
        refuse_near_misses(run, judged, run_path, qrels_path)
        run = {qid: docs for qid, docs in run.items() if qid in judged}
    if queries is not None:
        run = {qid: docs for qid, docs in run.items() if qid in queries}
    topics = read_topics_tsv(topics_path)
    pairs = make_pairs(run, topics, read_segments(segments_path), candidates, segments_path)
    classifier = load_classifier(checkpoint, head=head, relevant_index=relevant_index, num_layers=num_layers)
    scorer = Scorer(classifier, kind=kind, precision=precision, device=device, batch_size=batch_size,
                    max_length=max_length, threads=threads, batch_tokens=batch_tokens)
    usage = DeviceUsage(scorer.device)
    cache = ScoreCache(cache_dir) if cache_dir is not None else None
    try:
        counts = score_pairs_sharded(scorer, pairs, out, cache=cache, shard_size=shard_size, part=part)
    finally:
        if cache is not None:
            cache.close()
    seconds = time.perf_counter() - started
    meta = {
        "checkpoint": name or checkpoint, "model": str(checkpoint), "fingerprint": classifier.fingerprint, "num_layers": num_layers,
        "kind": kind, "precision": precision, "dtype": str(scorer.dtype).removeprefix("torch."),
        "device": str(scorer.device), "threads": scorer.threads, "batch_size": batch_size, "batch_tokens": batch_tokens,
        "max_length": scorer.max_length, "candidates": candidates, "shard_size": shard_size,
        "cache": str(cache.path) if cache is not None else None, **counts,
        "seconds": round(seconds, 3), "pairs_per_second": round(counts["pairs"] / seconds, 1),
        "model_pairs_per_second": round(counts["scored"] / counts["model_seconds"], 1) if counts["scored"] else None,
        "model_seconds": round(counts["model_seconds"], 3),
        "inputs": {"segments": str(segments_path), "run": str(run_path), "topics": str(topics_path),
                   "qrels": str(qrels_path) if qrels_path is not None else None},
        "queries": len(run), "relevant_index": classifier.relevant_index,
        "device_usage": usage.record(), "machine": machine(),
    }
    write_json(meta_path(out), meta, indent=2, sort_keys=True)
    return meta
