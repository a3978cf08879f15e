"""`python -m reranker <stage> [options]`: every stage of the suite from the command line.

Each stage module has a `main(argv)`; `python -m reranker <stage> --help` lists its options.
"""

from __future__ import annotations

import importlib
import os
import sys

from reranker.core import opened

STAGES = {
    "data": "fetch, derive and check the files no library downloads (workflow/config/downloads.yaml)",
    "collections": "export a collection's docs, topics and qrels; dataset statistics",
    "index": "build a Lucene index with pyserini",
    "retrieve": "BM25 and BM25+RM3 TREC runs; a provided run, checked and copied",
    "segment": "split a run's top-K documents into sentences or word passages",
    "train": "fine-tune a BERT relevance classifier",
    "score": "score (query, unit) pairs with a checkpoint, cached and resumable",
    "fuse": "Birch's cross-validated fusion and aggregation baselines",
    "evaluate": "evaluate runs with ir_measures, per query",
    "tables": "experiment tables with significance marks",
    "speed": "queries per minute of a pipeline, from its jobs' Snakemake benchmark files",
    "compare": "a run's numbers against the stored reference; promote a run to be the reference",
    "explain": "why a document moved in a Birch fusion: its sentences and their contributions; evidence diff",
    "bundle": "a finished run's runs (ir_metadata headers), evaluations and index, for trec_eval, repro-eval and ranx",
}


def usage() -> str:
    width = max(map(len, STAGES))
    lines = ["usage: python -m reranker <stage> [options]", "", "stages:"]
    lines += [f"  {name:<{width}}  {about}" for name, about in STAGES.items()]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in {"-h", "--help"}:
        print(usage())
        return 0
    stage, rest = argv[0], argv[1:]
    if stage not in STAGES:
        print(f"unknown stage {stage!r}\n\n{usage()}", file=sys.stderr)
        return 2
    opened.record(argv)  # the files it reads, where BIRCH_OPENED asks (the declared-inputs test)
    # each stage's main reports an input error as one line and exit 2 (formats.entry.exits_on_input_error)
    try:
        code = int(importlib.import_module(f"reranker.stages.{stage}").main(rest) or 0)
        sys.stdout.flush()  # a reader gone early (`| head -1`) shows here, not in the flush at exit
    except KeyboardInterrupt:
        # Ctrl-C: one line and the shell's convention for SIGINT (128 + 2); what was being written stays in its
        # temporary file, never at an output path (reranker.formats.atomic)
        print(f"{stage}: interrupted; no output was left half-written", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # Python's recipe (the signal module's notes on SIGPIPE): what is left for stdout goes to devnull, so that
        # the flush at exit fails no more, and the exit is quiet, with 1 as Python's own EPIPE exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    return code


if __name__ == "__main__":
    sys.exit(main())
