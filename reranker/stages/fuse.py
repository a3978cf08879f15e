"""Birch's cross-validated score fusion, and aggregation baselines, over per-unit relevance scores.

`fuse birch` fuses the n best unit scores with the first-stage score, weights chosen per fold
(reranker.ranking.fusion, whose docstring gives the conventions); `fuse aggregate` ranks documents by
an aggregate of their unit scores (reranker.ranking.aggregation).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping, Sequence
from dataclasses import asdict

import numpy as np

from reranker.core import run_metadata
from reranker.core.arguments import add_config, add_files
from reranker.core.config import entry_defaults, load_config
from reranker.core.flags import checked
from reranker.core.registry import AGGREGATORS
from reranker.core.settings import fuse as fuse_settings
from reranker.formats.atomic import write_json
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.folds import fold_queries, read_folds
from reranker.formats.ids import refuse_near_misses
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import Run, read_run, write_run
from reranker.formats.unit_scores import UnitIds, UnitScores, read_unit_scores, read_unit_scores_with_units
from reranker.ranking.aggregation import aggregate
from reranker.ranking.evidence import FoldFusion, write_fusion_evidence
from reranker.ranking.fusion import (
    NORMALISATIONS,
    TOP_N,
    Candidates,
    FoldChoice,
    birch_candidates,
    coefficients,
    cross_validate_sets,
    describe,
)


def run_birch(args: argparse.Namespace) -> int:
    evidence = evidence_inputs(args)
    tracker = run_metadata.Tracker()
    config = load_config(args.config)
    fusion = fuse_settings(config, args.collection, args.section)
    min_grade = fusion["relevant_min_grade"] if args.collection else entry_defaults("collection")["relevant_min_grade"]
    alpha_step, weight_step, normalise = fusion["alpha_step"], fusion["weight_step"], fusion["normalise"]
    run, qrels, folds = read_run(args.run), read_qrels(args.qrels), read_folds(args.folds)
    refuse_near_misses(run, qrels.keys(), args.run, args.qrels)
    in_folds = fold_queries(folds)
    unjudged = [qid for qid in run if qid not in in_folds and qid not in qrels]  # judged ones: refused below
    if unjudged:
        print(f"{len(unjudged)} unjudged queries of {args.run} are in no fold of {args.folds} and are left out "
              f"(e.g. {unjudged[0]})", file=sys.stderr)
    unit_scores, unit_ids = read_unit_scores_with_units(args.scores) if evidence else (read_unit_scores(args.scores), {})
    methods = NORMALISATIONS if normalise == "cv" else (normalise,)
    candidate_sets = {m: birch_candidates(run, unit_scores, args.top_n, m, fusion["short_docs"]) for m in methods}
    fused, choices, chosen = cross_validate_sets(run, candidate_sets, qrels, folds, args.top_n, alpha_step, weight_step,
                                                 min_grade, fusion["cutoff"])
    tested = sum(c.test_queries for c in choices)
    test_ap = sum(c.test_ap * c.test_queries for c in choices if c.test_queries) / tested
    settings = describe(args.top_n, alpha_step, weight_step, normalise, fusion["short_docs"], min_grade, fusion["cutoff"])
    if evidence:  # first: bad segments or docs leave nothing behind
        write_birch_evidence(args, run, fused, folds, candidate_sets, choices, chosen, settings, unit_scores, unit_ids)
    write_json(args.params_out, {**settings, "inputs": {"run": str(args.run), "scores": str(args.scores),
                                                        "qrels": str(args.qrels), "folds": str(args.folds)},
                                 "test_ap": test_ap, "test_queries": tested, "folds": [asdict(c) for c in choices],
                                 **({"normalise_per_fold": chosen} if normalise == "cv" else {})})
    # The run last: where it exists, so do the parameters and the evidence that made it (each written atomically).
    weights = {c.fold: {"a": c.a, "w2": c.w2, "w3": c.w3} | ({"normalise": chosen[c.fold]} if normalise == "cv" else {})
               for c in choices}
    step = {"name": args.tag or f"birch-{args.top_n}S", "method": settings["formula"], "top_n": args.top_n,
            "weight": weights, "normalise": normalise, "short_docs": settings["short_docs_handling"],
            "chosen by": f"grid search on the other folds' {settings['measure']}; {settings['tie_break']}",
            "tail": settings["tail"]}
    meta = run_metadata.reranked(args.command_line, args.run, args.scores, step, True, tracker.record(), config,
                                 args.collection, {"qrels": args.qrels, "folds": args.folds, "parameters": args.params_out})
    write_run(fused, args.out, tag=args.tag or f"birch-{args.top_n}S", metadata=meta)
    for c in choices:
        how = f" {chosen[c.fold]}" if normalise == "cv" else ""
        print(f"{c.fold}:{how} a={c.a:g} w2={c.w2:g} w3={c.w3:g}  train AP {c.train_ap:.4f}  test AP {c.test_ap:.4f}")
    print(f"{settings['method']}: test AP {test_ap:.4f} over {tested} queries -> {args.out}")
    return 0


def evidence_inputs(args: argparse.Namespace) -> bool:
    """Whether to write the evidence; it needs the unit texts and the documents."""
    given = [flag for flag, value in (("--segments", args.segments), ("--docs", args.docs)) if value]
    if args.evidence_out and len(given) < 2:
        raise InputError("--evidence-out needs --segments and --docs (the sentences' texts, and the documents their "
                         "offsets point into)")
    if given and not args.evidence_out:
        raise InputError(f"{' and '.join(given)}: read for the evidence only; give --evidence-out too, or leave "
                         f"{' and '.join(given)} out")
    return bool(args.evidence_out)


def write_birch_evidence(args: argparse.Namespace, run: Run, fused: Run, folds: Mapping[str, Sequence[str]],
                         candidate_sets: Mapping[str, Mapping[str, Candidates]], choices: Sequence[FoldChoice],
                         chosen: Mapping[str, str], settings: dict, unit_scores: UnitScores, unit_ids: UnitIds) -> None:
    """The sentences behind every fused score, beside the run (reranker/ranking/evidence.py)."""
    applied = {c.fold: FoldFusion(candidate_sets[chosen[c.fold]], (c.a, c.w2, c.w3), chosen[c.fold],
                                  coefficients(np.array([[c.a, c.w2, c.w3]]), args.top_n)[0]) for c in choices}
    inputs = {name: str(getattr(args, name)) for name in ("run", "scores", "segments", "docs")}
    count = write_fusion_evidence(args.evidence_out, settings, args.tag or f"birch-{args.top_n}S", inputs, run, fused,
                                  folds, applied, unit_scores, unit_ids)
    print(f"evidence of {count} documents -> {args.evidence_out}", file=sys.stderr)


def run_aggregate(args: argparse.Namespace) -> int:
    tracker = run_metadata.Tracker()
    candidates = None if args.candidates is None else checked("--candidates", args.candidates, "segment.candidates")
    fused = aggregate(read_run(args.run), read_unit_scores(args.scores), args.method, candidates)
    step = {"name": args.tag or args.method, "method": f"{AGGREGATORS[args.method].label} of the unit scores per document "
            "(no first-stage score); top-K documents without units, then the tail, in first-stage order"}
    if candidates is not None:
        step["candidates"] = candidates
    meta = run_metadata.reranked(args.command_line, args.run, args.scores, step, False, tracker.record())
    write_run(fused, args.out, tag=args.tag or args.method, metadata=meta)
    print(f"{args.method}: {len(fused)} queries -> {args.out}")
    return 0


@exits_on_input_error("fuse")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker fuse", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)

    birch = commands.add_parser("birch", help="cross-validated a*S_doc + (1-a)*sum w_i S_i fusion (1S/2S/3S)")
    add_files(birch, "run", "scores", "qrels", "folds")
    birch.add_argument("--top-n", type=int, choices=TOP_N, required=True, help="n of nS: how many top unit scores")
    birch.add_argument("--out", required=True, help="fused TREC run (the joined test folds)")
    birch.add_argument("--params-out", required=True, help="JSON with the choice per fold and the conventions")
    add_config(birch, "SECTION.fusion; the collection's relevant_min_grade")
    birch.add_argument("--section", required=True, help="the configuration section whose fusion: settings apply "
                       "(the paper's that runs the fusion; its rules pass it)")
    birch.add_argument("--collection", help="the collection id (its relevant_min_grade)")
    birch.add_argument("--tag", help="run tag (default birch-<n>S)")
    birch.add_argument("--evidence-out", help="the sentences behind each fused score, gzipped JSONL (docs/evidence.md): "
                       "needs --segments and --docs")
    add_files(birch, optional=("segments", "docs"), segments="the segments the scores were made from (the evidence's texts)",
              docs="docs.jsonl (the documents the evidence's offsets point into)")
    birch.set_defaults(handler=run_birch)

    agg = commands.add_parser("aggregate", help="FirstP / MaxP / SumP / MeanP of the unit scores")
    agg.add_argument("--method", required=True, choices=list(AGGREGATORS))
    agg.add_argument("--run", required=True, help="first-stage TREC run (.gz ok)")
    agg.add_argument("--scores", required=True, help="unit scores TSV: qid, doc_id, unit, score")
    agg.add_argument("--out", required=True, help="TREC run")
    agg.add_argument("--candidates", type=int, help="rerank only the first stage's top R (default: every scored one)")
    agg.add_argument("--tag", help="run tag (default the method)")
    agg.set_defaults(handler=run_aggregate)

    args = parser.parse_args(argv)
    args.command_line = run_metadata.command_line("fuse", argv)
    return args.handler(args)
