"""Why a document moved in a Birch fusion: its first-stage score and rank, its top sentences with their
text and contributions, its rank after fusion; read from the evidence fuse birch writes beside the run.

    python -m reranker explain --run RUN QID DOCID
    python -m reranker explain diff RUN_A RUN_B [--out diff.json]
    python -m reranker explain moves --run LABEL:RUN ... [--topics LABEL:TOPICS ...] --out page.html

`diff` compares the evidence of two fusions of the same queries (a rerun and the stored run): per
document in both, the share of its top sentences that both name. `moves` writes the HTML page of the
report: per run, the documents that rose and fell most from the first stage, each with its evidence.
The format: docs/evidence.md.
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from reranker.formats.atomic import write_json, write_text
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.formats.evidence import evidence_path, read_evidence
from reranker.formats.runs import read_run, sorted_docs
from reranker.formats.topics import read_topics_tsv
from reranker.ranking.evidence import evidence_diff, largest_moves

EXAMPLES = 3  # moves up and down per run on the report's page


def _g(x: float | None) -> str:
    return "–" if x is None else f"{x:.6g}"


def find(run_path: str, qid: str, doc_id: str, evidence: str | None = None) -> tuple[dict, dict | None, int]:
    """The evidence's header, the document's record (None below the re-scored top K) and its rank in the run."""
    run = read_run(run_path)
    if qid not in run:
        raise InputError(f"{run_path}: no query {qid!r} (it ranks {len(run)} queries, e.g. {', '.join(list(run)[:3])})")
    if doc_id not in run[qid]:
        raise InputError(f"{run_path}: query {qid} does not rank document {doc_id!r}: check the id")
    rank = next(i for i, (d, _) in enumerate(sorted_docs(run[qid]), start=1) if d == doc_id)
    path = evidence or evidence_path(run_path)
    header, records = read_evidence(path)
    found, seen = None, False
    for record in records:
        if record["qid"] == qid:
            seen = True
            if record["doc_id"] == doc_id:
                found = record
                break
    if not seen:
        raise InputError(f"{path}: no evidence for query {qid}, which {run_path} ranks: is it the evidence of another "
                         "run? Make both again with `fuse birch --evidence-out`")
    if found is not None and float(f"{found['fused']['score']:.9g}") != run[qid][doc_id]:
        raise InputError(f"{path}: document {doc_id} of query {qid} has fused score {found['fused']['score']:.9g} there "
                         f"but {run[qid][doc_id]:.9g} in {run_path}: the evidence is of another fusion; make both "
                         "again with `fuse birch --evidence-out`")
    return header, found, rank


def explain_lines(header: Mapping[str, Any], record: Mapping[str, Any] | None, qid: str, doc_id: str, rank: int) -> list[str]:
    """What `explain` prints."""
    if record is None:
        return [f"query {qid}, document {doc_id}: rank {rank} after fusion, below the documents {header['method']} "
                "re-scored (kept in first-stage order): no sentence evidence"]
    fold = header["folds"][record["fold"]]
    weights = f"a={fold['a']:g}" + "".join(f", w{i}={fold[f'w{i}']:g}" for i in (2, 3) if i <= header["top_n"])
    normalised = "" if fold["normalise"] == "none" else f", scores {fold['normalise']}-normalised per query"
    first, fused = record["first_stage"], record["fused"]
    gained = first["rank"] - rank  # the rank in the run as read, as trec_eval ranks it
    lines = [f"query {qid}, document {doc_id}: {header['method']}, fold {record['fold']} ({weights}{normalised})",
             f"first stage: rank {first['rank']}, score {_g(first['score'])}",
             f"fused:       rank {rank}, score {_g(fused['score'])}"
             + (f" ({'up' if gained > 0 else 'down'} {abs(gained)})" if gained else " (unmoved)"),
             f"  S_doc  value {_g(record['doc']['value'])}  x a={record['doc']['weight']:g}"
             f"  = {_g(record['doc']['contribution'])}"]
    for s in record["sentences"]:
        where = f"[{s['start']}, {s['end']})" if s["start"] is not None else "[offsets unknown]"
        repeat = ", the lowest repeated (short_docs repeat_min)" if s.get("filled") else ""
        lines += [f"  S_{s['term']}    value {_g(s['value'])}  x (1-a)*w{s['term']}={(1 - fold['a']) * s['weight']:g}"
                  f"  = {_g(s['contribution'])}   unit {s['unit']} {where}{repeat}",
                  f"         \"{s['text']}\""]
    if not record["sentences"]:
        lines.append("  no unit scores: every sentence term is 0")
    parts = [record["doc"]["contribution"]] + [s["contribution"] for s in record["sentences"]]
    terms = _g(parts[0]) + "".join(f" − {_g(-p)}" if p < 0 else f" + {_g(p)}" for p in parts[1:])
    lines.append(f"  S_f = {terms} = {_g(fused['score'])}")
    return lines


# ---------------------------------------------------------------------------------------------
# The report's page

STYLE = ("body{font:14px sans-serif;margin:1em}table{border-collapse:collapse;margin:.3em 0 1.2em}"
         "td,th{border:1px solid #ccc;padding:2px 6px;vertical-align:top}td.n{text-align:right;white-space:nowrap}")


def labelled(spec: str, option: str) -> tuple[str, str]:
    label, sep, path = spec.partition(":")
    if not (sep and label and path):
        raise InputError(f"{option} {spec!r}: expected LABEL:PATH")
    return label, path


def moves_page(runs: Sequence[tuple[str, str]], topics: Mapping[str, Mapping[str, str]], count: int) -> str:
    sections = []
    for label, run_path in runs:
        header, records = read_evidence(evidence_path(run_path))
        ups, downs = largest_moves(records, count)
        queries = topics.get(label, {})
        parts = [f"<h2>{html.escape(label)}: {html.escape(header['method'])} ({html.escape(str(run_path))})</h2>"]
        for title, chosen in (("Up most", ups), ("Down most", downs)):
            parts.append(f"<h3>{title}</h3>" + ("".join(_example(r, queries) for r in chosen) or "<p>none moved</p>"))
        sections.append("".join(parts))
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><style>{STYLE}</style></head><body>"
            "<p>Per collection, the documents that rose and fell most from the first stage to the fused run, each "
            "with the terms of its fused score S_f = a·S_doc + (1−a)·Σ w_i·S_i (docs/evidence.md).</p>"
            + "".join(sections) + "</body></html>\n")


def _example(record: Mapping[str, Any], queries: Mapping[str, str]) -> str:
    e = html.escape
    query = f" “{e(queries[record['qid']])}”" if record["qid"] in queries else ""
    head = (f"<p><b>query {e(record['qid'])}</b>{query}, document <b>{e(record['doc_id'])}</b>: rank "
            f"{record['first_stage']['rank']} → {record['fused']['rank']}; S_f = {_g(record['fused']['score'])}</p>")
    rows = [f"<tr><td>S_doc</td><td></td><td class=n>{_g(record['doc']['value'])}</td>"
            f"<td class=n>a = {record['doc']['weight']:g}</td><td class=n>{_g(record['doc']['contribution'])}</td></tr>"]
    rows += [f"<tr><td>S_{s['term']}</td><td>{e(s['text'])} <small>(unit {s['unit']})</small></td>"
             f"<td class=n>{_g(s['value'])}</td><td class=n>w{s['term']} = {s['weight']:g}</td>"
             f"<td class=n>{_g(s['contribution'])}</td></tr>" for s in record["sentences"]]
    return (head + "<table><tr><th>term</th><th>sentence</th><th>value</th><th>weight</th><th>contribution</th></tr>"
            + "".join(rows) + "</table>")


# ---------------------------------------------------------------------------------------------
# Command line

def run_diff(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker explain diff",
                                     description="the overlap of two fusions' top sentences per document")
    parser.add_argument("run_a", help="a fused run (its evidence beside it)")
    parser.add_argument("run_b", help="another fusion of the same queries (a rerun, say)")
    parser.add_argument("--out", help="write the summary as JSON too")
    args = parser.parse_args(argv)
    (_, a), (_, b) = read_evidence(evidence_path(args.run_a)), read_evidence(evidence_path(args.run_b))
    diff = evidence_diff(a, b)
    if not diff["documents"]:
        raise InputError(f"{args.run_a} and {args.run_b} share no (query, document) with evidence: are they runs of "
                         "the same collection?")
    print(f"{diff['documents']} documents in both ({diff['only_a']} only in A, {diff['only_b']} only in B): "
          f"mean overlap of the top sentences {diff['mean_overlap']:.4f}; {diff['identical']} identical, "
          f"{diff['disjoint']} disjoint; {diff['same_fused_rank']} at the same fused rank")
    for low in diff["lowest"]:
        if low["overlap"] < 1:
            print(f"  query {low['qid']}, document {low['doc_id']}: overlap {low['overlap']:.2f}, fused rank "
                  f"{low['fused_rank_a']} in A, {low['fused_rank_b']} in B")
    if args.out:
        write_json(args.out, {"a": args.run_a, "b": args.run_b, **diff})
    return 0


def run_moves(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker explain moves",
                                     description="the report's page: the largest moves per run, with their evidence")
    parser.add_argument("--run", action="append", required=True, help="LABEL:RUN, a fused run with its evidence")
    parser.add_argument("--topics", action="append", default=[], help="LABEL:topics.tsv, the query texts of LABEL")
    parser.add_argument("--count", type=int, default=EXAMPLES, help=f"moves up and down per run (default {EXAMPLES})")
    parser.add_argument("--out", required=True, help="the HTML page")
    args = parser.parse_args(argv)
    if args.count < 1:
        raise InputError(f"--count must be positive, not {args.count}")
    runs = [labelled(spec, "--run") for spec in args.run]
    topics = {label: read_topics_tsv(path) for label, path in (labelled(spec, "--topics") for spec in args.topics)}
    write_text(args.out, moves_page(runs, topics, args.count))
    print(f"largest moves of {len(runs)} runs -> {args.out}", file=sys.stderr)
    return 0


@exits_on_input_error("explain")
def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["diff"]:
        return run_diff(argv[1:])
    if argv[:1] == ["moves"]:
        return run_moves(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m reranker explain", description=__doc__.split("\n\n")[0],
                                     epilog="also: `explain diff RUN_A RUN_B`, `explain moves --run LABEL:RUN ... --out "
                                            "page.html` (--help each)")
    parser.add_argument("--run", required=True, help="a fused run of fuse birch, its evidence beside it")
    parser.add_argument("--evidence", help="its evidence, if not beside it (RUN.evidence.jsonl.gz; .jsonl read as it is)")
    parser.add_argument("qid")
    parser.add_argument("doc_id")
    args = parser.parse_args(argv)
    header, record, rank = find(args.run, args.qid, args.doc_id, args.evidence)
    print("\n".join(explain_lines(header, record, args.qid, args.doc_id, rank)))
    return 0

