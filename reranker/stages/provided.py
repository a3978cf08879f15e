"""A provided first-stage run (one that comes with a collection, such as the Radboud thesis' own BM25 run),
checked against the collection and written into the run folder, where the rerankers read their first stages:

    python -m reranker retrieve provided --run FILE[.gz] --topics topics.tsv --qrels qrels.txt [--docs docs.jsonl] --out RUN

Checked: the run's format (reranker.formats.runs), every query a topic, every judged topic ranked (a query left out
would drop out of the mean, and out of every paired test against another run), every document one of `--docs`.
Written line for line, the scores as Python reads them (repr round-trips a float), so that it evaluates as the
provided file does; nothing is written when a check fails.
"""

from __future__ import annotations

import argparse
import os

from reranker.core.arguments import add_files
from reranker.formats.atomic import atomic_write
from reranker.formats.docs import iter_docs
from reranker.formats.errors import FormatError
from reranker.formats.ids import qid_order, refuse_near_misses
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import RunLine, numbered_run_lines, read_run
from reranker.formats.topics import read_topics_tsv


def checked_lines(run_path: str | os.PathLike, topics_path: str | os.PathLike, qrels_path: str | os.PathLike,
                  docs_path: str | os.PathLike | None = None) -> list[RunLine]:
    """The run's lines, once every check has passed (see the module's docstring)."""
    ranked = read_run(run_path)  # format, repeated pairs and an empty file first, each with its line
    topics = read_topics_tsv(topics_path)
    refuse_near_misses(ranked, topics, run_path, topics_path)
    lines = [line for _, line in numbered_run_lines(run_path)]
    unknown = qid_order(set(ranked) - set(topics))
    if unknown:
        first = next(n for n, line in numbered_run_lines(run_path) if line.qid == unknown[0])
        raise FormatError(run_path, first, f"query {unknown[0]} is not a topic of {topics_path} ({len(unknown)} such): "
                                           "is this run of another collection?")
    judged = read_qrels(qrels_path)
    missing = qid_order(q for q in topics if judged.get(q) and q not in ranked)
    if missing:
        raise FormatError(run_path, None, f"judged query {missing[0]} of {topics_path} has no ranking ({len(missing)} such): "
                                          "a provided run ranks every judged query, or its mean is over other queries than "
                                          "the rows it is compared with")
    if docs_path is not None:
        known = {doc.doc_id for _, doc in iter_docs(docs_path)}
        for line_no, line in numbered_run_lines(run_path):
            if line.doc_id not in known:
                raise FormatError(run_path, line_no, f"document {line.doc_id} is not in {docs_path}: "
                                                     "is this run of another collection (or another version of it)?")
    return lines


def write_provided(lines: list[RunLine], out: str | os.PathLike) -> None:
    with atomic_write(out) as f:
        for line in lines:
            f.write(f"{line.qid} Q0 {line.doc_id} {line.rank} {line.score!r} {line.tag}\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker retrieve provided", description=__doc__.split("\n\n")[0])
    add_files(parser, "run", "topics", "qrels", optional=("docs",), run="the provided TREC run (.gz ok)",
              docs="docs.jsonl: every document of the run must be one of them")
    parser.add_argument("--out", required=True, help="the run in the run folder (TREC, uncompressed)")
    args = parser.parse_args(argv)
    lines = checked_lines(args.run, args.topics, args.qrels, args.docs)
    write_provided(lines, args.out)
    print(f"{args.out}: {len({line.qid for line in lines})} queries, {len(lines)} lines, checked against {args.topics}"
          f"{' and ' + args.docs if args.docs else ''}")
    return 0
