"""First-stage retrieval: BM25 and BM25+RM3 runs from a Lucene index (pyserini's LuceneSearcher).

Parameters can differ per cross-validation fold, as in Birch's Robust04 runs (RM3 tuned per
fold): each fold's test queries are searched with that fold's parameters and the results joined
into one run. `retrieve provided` takes a run that comes with the collection instead (reranker.stages.provided).
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import os
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tqdm import tqdm

from reranker.core import run_metadata
from reranker.core.arguments import add_config
from reranker.core.config import default as schema_default
from reranker.core.flags import checked
from reranker.core.java import start_jvm
from reranker.core.registry import FIRST_STAGES
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.folds import read_folds
from reranker.formats.ids import qid_order
from reranker.formats.runs import Run, write_run
from reranker.formats.topics import read_topics_tsv

log = logging.getLogger(__name__)

BATCH_SIZE = 50  # queries per batch_search call: the progress bar's step
LUCENE_CLAUSES = 1024  # Lucene's default limit on a query's clauses (IndexSearcher.getMaxClauseCount)


@dataclass(frozen=True)
class RetrievalParams:
    """BM25 (k1, b) and, for bm25_rm3, RM3's expansion terms, feedback docs and original-query weight."""

    model: str = "bm25"
    k1: float = 0.9
    b: float = 0.4
    fb_terms: int = 10
    fb_docs: int = 10
    original_query_weight: float = 0.5

    def __post_init__(self) -> None:
        if self.model not in FIRST_STAGES:
            raise InputError(f"unknown retrieval model {self.model!r}; known: {', '.join(FIRST_STAGES)}")
        if self.k1 < 0 or not 0 <= self.b <= 1 or not 0 <= self.original_query_weight <= 1:
            raise InputError(f"need k1 >= 0, 0 <= b <= 1 and 0 <= original_query_weight <= 1: {self}")
        if self.fb_terms < 1 or self.fb_docs < 1:
            raise InputError(f"need fb_terms >= 1 and fb_docs >= 1: {self}")

    @classmethod
    def from_mapping(cls, model: str, values: Mapping[str, Any]) -> RetrievalParams:
        """Parameters from a configuration mapping (unknown keys are an error)."""
        known = {f.name for f in dataclasses.fields(cls)} - {"model"}
        unknown = set(values) - known
        if unknown:
            raise InputError(f"unknown retrieval parameters {sorted(unknown)}; known: {sorted(known)}")
        return cls(model=model).replace(**values)

    def replace(self, **changes: Any) -> RetrievalParams:
        """A copy with the given values; None leaves a value as it is."""
        types = {"k1": float, "b": float, "fb_terms": int, "fb_docs": int, "original_query_weight": float, "model": str}
        return dataclasses.replace(self, **{k: types[k](v) for k, v in changes.items() if v is not None})

    def describe(self) -> str:
        text = f"{self.model} k1={self.k1} b={self.b}"
        if FIRST_STAGES[self.model].rm3:
            text += f" fb_terms={self.fb_terms} fb_docs={self.fb_docs} original_query_weight={self.original_query_weight}"
        return text


def open_searcher(index_dir: str | os.PathLike, heap: str | None = None):
    """A pyserini LuceneSearcher on index_dir (starting the JVM first)."""
    index_dir = Path(index_dir)
    if not any(index_dir.glob("segments_*")):
        raise FileNotFoundError(f"{index_dir}: no Lucene index there; build it with "
                                f"`python -m reranker index --docs docs.jsonl --index {index_dir}`")
    start_jvm(heap)
    from pyserini.search.lucene import LuceneSearcher

    return LuceneSearcher(str(index_dir))


def configure(searcher, params: RetrievalParams) -> None:
    searcher.set_bm25(params.k1, params.b)
    if FIRST_STAGES[params.model].rm3:
        searcher.set_rm3(params.fb_terms, params.fb_docs, params.original_query_weight)
    else:
        searcher.unset_rm3()


def fit_clause_limit(searcher, topics: Mapping[str, str], params: RetrievalParams) -> int:
    """Raise Lucene's clause limit to the longest query's, with a warning naming the queries beyond the default, and
    return it. A BM25 query has one clause per distinct analysed term (Anserini's bag of words), and RM3's expanded
    one up to `fb_terms` more; past the limit Lucene refuses the whole query (a traceback from the batch). The
    limit only refuses, so raising it changes no ranking: these queries are searched whole, the others as ever."""
    extra = params.fb_terms if FIRST_STAGES[params.model].rm3 else 0
    from jnius import autoclass

    lucene = autoclass("org.apache.lucene.search.IndexSearcher")
    terms = {}
    for qid, text in topics.items():
        if len(text) + extra > LUCENE_CLAUSES:  # shorter text cannot hold more terms: most queries skip the analyser
            analyse = autoclass("io.anserini.analysis.AnalyzerUtils").analyze
            terms[qid] = len(set(analyse(searcher.object.analyzer, text).toArray())) + extra
    long = qid_order(qid for qid, count in terms.items() if count > LUCENE_CLAUSES)
    if long:
        log.warning("%d queries need more clauses than Lucene's default limit of %d (queries %s; up to %d clauses): "
                    "the limit is raised and they are searched with all their terms", len(long), LUCENE_CLAUSES,
                    " ".join(long), max(terms.values()))
    needed = max([*terms.values(), 0])
    if needed > lucene.getMaxClauseCount():
        lucene.setMaxClauseCount(needed)
    return lucene.getMaxClauseCount()


def search(searcher, topics: Mapping[str, str], params: RetrievalParams, depth: int = 1000, threads: int = 2,
           progress: tqdm | None = None) -> Run:
    """Search every topic with `params`. Empty topics get no results (with a warning); a query with more terms than
    Lucene's clause limit is searched whole, with a warning (`fit_clause_limit`)."""
    configure(searcher, params)
    fit_clause_limit(searcher, topics, params)
    run: Run = {}
    empty = [qid for qid, text in topics.items() if not text.strip()]
    if empty:
        log.warning("%d queries have no text and get no results: %s", len(empty), " ".join(qid_order(empty)))
        run.update({qid: {} for qid in empty})
        if progress is not None:
            progress.update(len(empty))
    qids = [qid for qid in qid_order(topics) if topics[qid].strip()]
    for start in range(0, len(qids), BATCH_SIZE):
        batch = qids[start:start + BATCH_SIZE]
        hits = searcher.batch_search([topics[qid] for qid in batch], batch, k=depth, threads=threads)
        for qid in batch:
            run[qid] = {hit.docid: float(hit.score) for hit in hits.get(qid, [])}
        if progress is not None:
            progress.update(len(batch))
    unmatched = [qid for qid in qids if not run[qid]]
    if unmatched:
        log.warning("%d queries match no document (stopwords only?): %s", len(unmatched), " ".join(unmatched))
    return run


def _progress(total: int, desc: str) -> tqdm:
    return tqdm(total=total, unit="query", desc=desc, file=sys.stderr)


def retrieve(index_dir: str | os.PathLike, topics: Mapping[str, str], params: RetrievalParams,
             depth: int = 1000, threads: int = 2, heap: str | None = None) -> Run:
    """The top `depth` documents of every topic, {qid: {doc_id: score}}."""
    searcher = open_searcher(index_dir, heap)
    with _progress(len(topics), params.model) as progress:
        return search(searcher, topics, params, depth, threads, progress)


def retrieve_per_fold(index_dir: str | os.PathLike, topics: Mapping[str, str], default_params: RetrievalParams,
                      fold_params: Mapping[str, RetrievalParams], folds: Mapping[str, list[str]],
                      depth: int = 1000, threads: int = 2, heap: str | None = None) -> Run:
    """One run in which each fold's test queries use that fold's parameters.

    `folds` maps a fold to its test qids. Folds without parameters, and queries in no fold, use
    `default_params`. A query in two folds, or parameters for an unknown fold, is an error.
    """
    unknown = set(fold_params) - set(folds)
    if unknown:
        raise InputError(f"parameters given for folds {sorted(unknown)}, which the folds ({sorted(folds)}) do not have")
    fold_of: dict[str, str] = {}
    for fold, qids in folds.items():
        for qid in qids:
            if qid in fold_of:
                raise InputError(f"query {qid} is a test query of both fold {fold_of[qid]} and fold {fold}")
            fold_of[qid] = fold
    groups: dict[RetrievalParams, dict[str, str]] = {}
    for qid, text in topics.items():
        params = fold_params.get(fold_of.get(qid, ""), default_params)
        groups.setdefault(params, {})[qid] = text

    searcher = open_searcher(index_dir, heap)
    run: Run = {}
    with _progress(len(topics), f"{default_params.model} per fold") as progress:
        for params, group in groups.items():
            run.update(search(searcher, group, params, depth, threads, progress))
    return run


def params_from_settings(settings: Mapping, model: str) -> tuple[RetrievalParams, dict[str, RetrievalParams]]:
    """Default and per-fold parameters from the stage's settings (reranker.core.settings.retrieve): the model's
    entry, then the collection's overrides; a `folds:` mapping (fold -> parameters) in either is applied over the
    rest, fold by fold."""
    from reranker.core.config import merge

    values = merge(dict(settings["model"]), settings["overrides"] or {})
    folds = values.pop("folds", {})
    default = RetrievalParams.from_mapping(model, values)
    return default, {str(fold): RetrievalParams.from_mapping(model, merge(values, changes)) for fold, changes in folds.items()}


def metadata(command: str, config: Mapping, args: argparse.Namespace, default: RetrievalParams,
             fold_params: Mapping[str, RetrievalParams], depth: int, resources: Mapping) -> dict:
    """The run's ir_metadata: the index's analyser, the parameters (per fold where they differ), the collection."""
    step: dict[str, Any] = {"name": args.model, "method": f"{FIRST_STAGES[args.model].label} (Lucene via pyserini's LuceneSearcher)",
                            "params": dataclasses.asdict(default) | {"depth": depth}}
    step["params"].pop("model")
    if not FIRST_STAGES[args.model].rm3:
        step["params"] = {key: step["params"][key] for key in ("k1", "b", "depth")}
    if fold_params:
        step["params per fold"] = {fold: params.describe() for fold, params in fold_params.items()}
    inputs = {"index": args.index, "topics": args.topics, "folds": args.folds}
    if args.collection:
        data, goal = run_metadata.data(config, args.collection, inputs), run_metadata.research_goal(config, args.collection)
    else:
        data, goal = {"files": run_metadata.files(inputs)}, {}
    return run_metadata.metadata(command, [step], data, goal, run_metadata.indexing(args.index), resources=resources)


@exits_on_input_error("retrieve")
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["provided"]:  # a first stage that comes with the collection: checked and copied, no index
        from reranker.stages import provided

        return provided.main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m reranker retrieve", description=__doc__.splitlines()[0])
    parser.add_argument("--index", required=True, help="Lucene index built by `python -m reranker index`")
    parser.add_argument("--topics", required=True, help="topics.tsv: qid<TAB>text")
    parser.add_argument("--model", required=True, choices=list(FIRST_STAGES))
    parser.add_argument("--out", required=True, help="TREC run file to write")
    add_config(parser, "retrieval.depth, retrieval.models, retrieval.overrides, java_heap")
    parser.add_argument("--collection", help="collection id whose retrieval.overrides apply")
    parser.add_argument("--folds", help="JSON {fold: [test qids]}: needed when the overrides are per fold")
    parser.add_argument("--threads", type=int, default=schema_default("threads"), help="search threads (default: the schema's threads)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    from reranker.core import settings as stage_settings
    from reranker.core.config import load_config

    config = load_config(args.config)
    settings = stage_settings.retrieve(config, args.collection, args.model)
    default, fold_params = params_from_settings(settings, args.model)
    depth, heap, threads = settings["depth"], settings["java_heap"], checked("--threads", args.threads, "threads")
    if fold_params and not args.folds:
        raise InputError(f"the configuration sets per-fold parameters for folds {', '.join(sorted(fold_params))}"
                         f"{f' of {args.collection}' if args.collection else ''}: pass --folds, the folds JSON")

    topics = read_topics_tsv(args.topics)
    started = time.perf_counter()
    tracker = run_metadata.Tracker()
    if args.folds:
        run = retrieve_per_fold(args.index, topics, default, fold_params, read_folds(args.folds), depth, threads, heap)
    else:
        run = retrieve(args.index, topics, default, depth, threads, heap)
    meta = metadata(run_metadata.command_line("retrieve", argv), config, args, default, fold_params, depth, tracker.record())
    write_run(run, args.out, tag=args.model, depth=depth, metadata=meta)
    seconds = time.perf_counter() - started
    retrieved = sum(len(docs) for docs in run.values())
    print(f"{args.out}: {len(run)} queries, {retrieved / max(1, len(run)):.1f} docs/query, {seconds:.1f} s "
          f"({default.describe()}{', per-fold parameters' if fold_params else ''})")
    return 0
