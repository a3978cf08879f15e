"""Score every (query, unit) pair of a run's top-K documents with a relevance classifier.

The scoring (kinds, precision, speed, shards, the cache, the output) is reranker.neural.scoring's;
`score gather` and `score join` concatenate parts and runs (reranker.neural.shards).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reranker.core.arguments import add_config, add_files
from reranker.core.flags import overlay
from reranker.core.hardware import resolve_precision
from reranker.core.registry import RANKINGS
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.folds import fold_test_queries
from reranker.formats.unit_scores import record_unit_scores
from reranker.neural.models import pick_device
from reranker.neural.scoring import score_run
from reranker.neural.shards import gather_parts, join_runs, parse_part

JOINS = {"gather": ("Concatenate the parts of a sharded score run (score --part I/N).", gather_parts),
         "join": ("Concatenate whole score runs of disjoint queries (one per fold), in the order given.", join_runs)}


def join_main(verb: str, argv: list[str]) -> int:
    """`score gather` or `score join`: each part checked against its sidecar, the whole given one."""
    about, join = JOINS[verb]
    parser = argparse.ArgumentParser(prog=f"python -m reranker score {verb}", description=about)
    parser.add_argument("--parts", nargs="+", required=True, help="the score TSVs (gather: any order)")
    parser.add_argument("--out", required=True, help="the joined TSV")
    args = parser.parse_args(argv)
    meta = join(args.parts, args.out)  # a part missing, foreign or changed: score's one line, exit 2
    print(f"{meta['pairs']} pairs from {len(args.parts)} parts -> {args.out}", file=sys.stderr)
    return 0


def record_main(argv: list[str]) -> int:
    """`score record`: the sidecar of scores files made elsewhere, so that fuse takes them as they are."""
    parser = argparse.ArgumentParser(prog="python -m reranker score record", description=record_main.__doc__.split(": ")[1])
    parser.add_argument("files", nargs="+", help="score TSVs (qid, doc_id, unit, score), each read first")
    args = parser.parse_args(argv)
    for path in args.files:
        meta = record_unit_scores(path)
        print(f"{path}: {meta['output']['lines']} lines recorded", file=sys.stderr)
    return 0


@exits_on_input_error("score")
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] and argv[0] in JOINS:
        return join_main(argv[0], argv[1:])
    if argv[:1] == ["record"]:
        return record_main(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m reranker score", description=__doc__.split("\n\n")[0],
                                     epilog="`python -m reranker score gather|join --parts ... --out OUT` joins --part "
                                     "runs, or runs of disjoint queries; `score record FILE` takes a scores file "
                                     "made elsewhere as it is.")
    parser.add_argument("--checkpoint", required=True, help="a checkpoint name of the configuration (checkpoints.yaml)")
    add_files(parser, "segments", "run", "topics", "out", optional=("qrels",), out="output TSV: qid, doc_id, unit, score",
              qrels="score only the queries these qrels judge (the others cannot be evaluated)")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write the score cache")
    parser.add_argument("--shard-size", type=int, help="pairs per resumable shard (default: score.shard_size)")
    parser.add_argument("--part", default="1/1", help="I/N: score only the I-th of N blocks of shards (gather them after)")
    parser.add_argument("--max-length", type=int, help="truncate pairs to this many tokens (default: the model's)")
    parser.add_argument("--threads", type=int, help="CPU threads (default: the cores this process may use)")
    add_config(parser, "score, segment.candidates, the checkpoint's entry; the cache under run_dir")
    parser.add_argument("--model", help="what to load: the fine-tuned checkpoint's folder, or a hub id or folder "
                        "(default: the checkpoint's own `model` where it is fetched)")
    parser.add_argument("--cache", help="the score cache's folder (default: the run folder's work/cache/scores)")
    parser.add_argument("--section", help="a configuration section (radboud, ntnu) whose candidates K, max length "
                        "and precision replace segment:'s and score:'s")
    parser.add_argument("--candidates", type=int, help="score the run's top K (default: the settings')")
    parser.add_argument("--ranking", choices=RANKINGS, help="radboud: how a document is ranked from the logits")
    parser.add_argument("--folds", help="folds JSON: score only the test queries of the checkpoint's train_fold")
    args = parser.parse_args(argv)
    from reranker.core import settings as stage_settings
    from reranker.core.config import load_config
    from reranker.formats.layout import PATTERNS

    part = parse_part(args.part)
    config = load_config(args.config)
    settings = stage_settings.score(config, args.checkpoint, args.section)
    # a section's K and length replace the suite's: so do the flags, checked where the setting is
    settings = overlay(settings, args, {"--candidates": stage_settings.replaced(config, args.section, "candidates", "segment"),
                                        "--max-length": stage_settings.replaced(config, args.section, "max_length", "score"),
                                        "--shard-size": "score.shard_size", "--threads": "score.threads"})
    entry = settings["checkpoint"]
    if args.model is None and entry["source"] != "hf":
        raise InputError(f"checkpoint {args.checkpoint} is fine-tuned: give --model, the folder training wrote")
    head = entry.get("head") or (entry.get("training") or {}).get("head")  # a fine-tuned bi-encoder's is its training's
    kind = "cosine" if head == "bi_encoder" else settings["kind"]
    candidates, max_length, relevant_index = settings["candidates"], settings["max_length"], None
    # auto is resolved here, on this machine's device: bf16 where it has bf16 arithmetic, else fp32
    precision = resolve_precision(settings["precision"], pick_device(settings["device"]))
    if args.ranking:
        kind = "argmax" if args.ranking == "argmax" else "logit"
        relevant_index = int(args.ranking.removeprefix("label")) if args.ranking.startswith("label") else None
    queries = None
    if entry.get("train_fold") is not None:
        if not args.folds:
            raise InputError(f"checkpoint {args.checkpoint} was trained on fold {entry['train_fold']}'s training "
                             "queries: give --folds to score its test queries only")
        _, queries = fold_test_queries(args.folds, entry["train_fold"])
    cache_dir = None if args.no_cache else args.cache or str(Path(config["run_dir"]) / PATTERNS["score_cache"])
    fetched = entry["source"] == "hf"
    meta = score_run(args.model or entry["model"], args.segments, args.run, args.topics, args.out,
                     candidates=candidates, kind=kind, batch_size=settings["batch_size"],
                     batch_tokens=settings["batch_tokens"],
                     precision=precision, cache_dir=cache_dir, shard_size=settings["shard_size"],
                     device=settings["device"], max_length=max_length, queries=queries,
                     num_layers=entry.get("num_layers") if fetched else None, threads=args.threads,
                     qrels_path=args.qrels, head=entry.get("head") if fetched else None,
                     relevant_index=relevant_index if relevant_index is not None else
                     entry.get("relevant_index") if fetched else None, part=part,
                     name=args.checkpoint)
    print(f"{meta['pairs']} pairs ({meta['cache_hits']} from the cache) in {meta['seconds']:.1f}s "
          f"-> {args.out}", file=sys.stderr)
    return 0
