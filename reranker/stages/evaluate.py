"""Evaluate TREC runs with ir_measures, keeping per-query values for paired tests.

`AP@1000` is trec_eval's `-M1000 map`; P@20, nDCG@20, RR@10 and R@k are ir_measures' usual ones;
names registered in reranker.measures (RadboudNDCG@20, the Radboud thesis' own nDCG@20) resolve to
their ir_measures expressions.
As in trec_eval without `-c`, only queries that are both in the run and in the qrels are evaluated; how many
of the run's queries that is, and which were left out, goes to stderr and the output JSON (`coverage`). No
query in common is an error, and so is a query id written two ways (`001` and `1`: reranker.formats.ids).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence

import ir_measures

from reranker import measures
from reranker.core.arguments import add_config, add_files
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import FormatError, InputError
from reranker.formats.evaluations import Evaluation, write_evaluation
from reranker.formats.ids import near_misses, qid_order, refuse_near_misses
from reranker.formats.qrels import Qrels, read_qrels
from reranker.formats.runs import Run, read_run, sorted_docs


def parse_measures(names: Sequence[str]) -> list:
    """ir_measures objects for names in its syntax or registered in reranker.measures (e.g. RadboudNDCG@20)."""
    parsed = []
    for name in names:
        try:
            measure = ir_measures.parse_measure(measures.expression(name))
        except (ValueError, NameError, SyntaxError) as err:
            raise InputError(f"unknown measure {name!r} (ir_measures syntax, e.g. AP@1000, P@20, nDCG@20, RR@10, R@100; "
                             f"or a named one: {', '.join(measures.MEASURES)})") from err
        cutoff = measure.params.get("cutoff")
        if cutoff is not None and (not isinstance(cutoff, int) or isinstance(cutoff, bool) or cutoff < 1):
            # trec_eval aborts the process in C on a cutoff below 1 (pytrec_eval's assertion, exit 134)
            raise InputError(f"measure {name!r}: its cutoff @{cutoff} must be a whole number of documents, 1 or more")
        parsed.append(measure)
    return parsed


def coverage(run: Run, qrels: Qrels, run_name: str = "the run", qrels_name: str = "the qrels") -> dict:
    """How many of the run's queries are judged, which are not (left out) and which judged ones the run lacks;
    an error when none is judged, or when ids match only written alike."""
    refuse_near_misses(run, qrels.keys(), run_name, qrels_name)
    refuse_unmatched_documents(run, qrels, run_name, qrels_name)
    judged = sum(qid in qrels for qid in run)
    if not judged:
        raise FormatError(run_name, None, f"none of its {len(run)} queries is judged in {qrels_name} (run: "
                                          f"{', '.join(qid_order(run)[:3])}; qrels: {', '.join(qid_order(qrels)[:3])}): "
                                          "nothing to evaluate; are they for the same collection?")
    return {"run_queries": len(run), "judged": judged, "left_out": qid_order(run.keys() - qrels.keys()),
            "not_in_run": qid_order(qrels.keys() - run.keys())}


def refuse_unmatched_documents(run: Run, qrels: Qrels, run_name: str = "the run", qrels_name: str = "the qrels") -> None:
    """A FormatError when none of the documents the run ranks for judged queries is judged, but some match judged
    ones written otherwise (case, Unicode form, leading zeros): as trec_eval compares ids exactly, every such query
    would score 0 without a word. Checked only when nothing matches: ids are compared exactly, never rewritten."""
    ranked = set().union(*(run[qid].keys() for qid in run if qid in qrels))
    judged = set().union(*(qrels[qid].keys() for qid in run if qid in qrels))
    if not ranked or ranked & judged:
        return
    pairs = near_misses(ranked, judged)
    if pairs:
        ours, theirs = pairs[0]
        raise FormatError(run_name, None, f"none of its documents is judged in {qrels_name}, but {len(pairs)} match judged "
                                          f"ones written otherwise (e.g. {ours!r} here, {theirs!r} there): case, Unicode "
                                          "form or leading zeros differ; ids are compared exactly, as trec_eval does: "
                                          "write them the same way in both files")


def describe_coverage(covered: dict, qrels_name: str = "the qrels") -> str:
    """One line: the run's queries evaluated, left out and missing."""
    left, missing = covered["left_out"], covered["not_in_run"]
    line = f"{covered['judged']} of the run's {covered['run_queries']} queries judged and evaluated"
    line += f"; {len(left)} left out, no judgments in {qrels_name} (e.g. {', '.join(left[:5])})" if left else "; none left out"
    if missing:
        line += f"; {len(missing)} judged queries are not in the run (e.g. {', '.join(missing[:5])}), not evaluated"
    return line


def evaluate(run: Run, qrels: Qrels, measures: Sequence[str], run_name: str = "the run",
             qrels_name: str = "the qrels") -> Evaluation:
    """Aggregate and per-query values of `measures` for `run` against `qrels`; the names are for errors."""
    covered = coverage(run, qrels, run_name, qrels_name)
    names = list(dict.fromkeys(measures))
    parsed = parse_measures(names)
    by_measure = {str(m): name for m, name in zip(parsed, names)}
    if len(by_measure) < len(names):
        raise InputError(f"measures {', '.join(names)} name one ir_measures measure twice")
    per_query: dict[str, dict[str, float]] = {name: {} for name in names}
    # One call per gain mapping: ir_measures 0.4.3 (pytrec_eval) given nDCG@20 and nDCG(gains=...)@20 in
    # one call computes both with the same gains and reports 0 for one of them (measured).
    by_gains: dict[str, list] = {}
    for measure in parsed:
        by_gains.setdefault(repr(measure.params.get("gains")), []).append(measure)
    for group in by_gains.values():
        for metric in ir_measures.iter_calc(group, qrels, run):
            # ir_measures also reports judged queries the run lacks (as 0); trec_eval without -c skips them.
            if run.get(metric.query_id):
                per_query[by_measure[str(metric.measure)]][metric.query_id] = float(metric.value)
    per_query = {name: {qid: values[qid] for qid in qid_order(values)} for name, values in per_query.items()}
    queries = len(next(iter(per_query.values()))) if per_query else 0
    aggregate = {name: (sum(values.values()) / len(values) if values else math.nan) for name, values in per_query.items()}
    return Evaluation(names, aggregate, per_query, queries, coverage=covered)


def agreement(run: Run, reference: Run, depth: int | None = None) -> dict:
    """How alike two runs rank: per query, Kendall's tau-b (scipy) between the two runs' scores over the documents both
    rank among the reference's top `depth` (the candidates a reranker reorders: below them both runs keep the first
    stage's order, which would pull tau towards 1 whatever the reranker did), then its mean over the queries both have
    (with two or more such documents); `identical` is the share of those queries ranked in exactly the same order
    (tau 1). Ties within a run count as tau-b counts them."""
    from scipy import stats

    taus = {}
    for qid in qid_order(reference):
        if qid not in run:
            continue
        top = [d for d, _ in sorted_docs(reference[qid])][:depth]
        docs = [d for d in top if d in run[qid]]
        if len(docs) < 2:
            continue
        tau = stats.kendalltau([run[qid][d] for d in docs], [reference[qid][d] for d in docs]).statistic
        taus[qid] = 1.0 if math.isnan(tau) else float(tau)  # nan: both constant, so the same (tied) order
    if not taus:
        raise InputError("the two runs share no query with two or more documents: nothing to compare")
    return {"kendall_tau": sum(taus.values()) / len(taus), "identical": sum(t == 1.0 for t in taus.values()) / len(taus),
            "queries": len(taus), "depth": depth, "per_query": {q: round(t, 6) for q, t in taus.items()}}


def main_agreement(argv: list[str]) -> int:
    """How alike a run ranks to a reference run (Kendall's tau-b per query, its mean): JSON."""
    from reranker.formats.atomic import write_json

    parser = argparse.ArgumentParser(prog="python -m reranker evaluate agreement", description=main_agreement.__doc__)
    parser.add_argument("--run", required=True, help="a TREC run")
    parser.add_argument("--reference", required=True, help="the TREC run it is compared with (e.g. the baseline reranker's)")
    parser.add_argument("--depth", type=int, help="compare over the reference's top DEPTH documents per query: the candidates "
                        "a reranker reorders (default: every document both runs rank)")
    parser.add_argument("--out", required=True, help="the JSON to write: kendall_tau, identical, queries, depth, per_query")
    args = parser.parse_args(argv)
    if args.depth is not None and args.depth < 2:
        raise InputError(f"--depth {args.depth}: Kendall's tau needs two or more documents per query")
    result = {"run": args.run, "reference": args.reference} | agreement(read_run(args.run), read_run(args.reference), args.depth)
    write_json(args.out, result, indent=1)
    print(f"Kendall tau {result['kendall_tau']:.4f} over {result['queries']} queries; identical order: {result['identical']:.1%}")
    return 0


def main_reproduction(argv: list[str]) -> int:
    """Our run against the original's own run of the same system: KTU, RBO, RMSE and paired t-tests (repro-eval;
    reranker.reproduction.run_level), the pair's settings from the configuration's `reproduction:`."""
    from reranker.core import settings as stage_settings
    from reranker.core.config import load_config
    from reranker.core.provenance import portable_name, provenance
    from reranker.formats.atomic import write_json
    from reranker.reproduction import run_level as rpd

    parser = argparse.ArgumentParser(prog="python -m reranker evaluate reproduction", description=main_reproduction.__doc__)
    add_config(parser, "reproduction.<pair>: its measures, depth, rbo_p, label and note")
    parser.add_argument("--pair", required=True, help="the pair's name under `reproduction:` in the configuration")
    parser.add_argument("--original", required=True, help="the original's own TREC run (gzipped or not)")
    add_files(parser, "run", "qrels", run="our TREC run of the same system")
    parser.add_argument("--out", required=True, help="the JSON to write (reranker.reproduction.run_level's format)")
    args = parser.parse_args(argv)
    config = load_config(args.config)
    settings = stage_settings.reproduction(config, args.pair)  # resolved: every key present
    depth = settings["depth"]
    original, ours, qrels = read_run(args.original), read_run(args.run), read_qrels(args.qrels)
    refuse_near_misses(ours, original.keys(), args.run, args.original)
    orders = rpd.order_measures(original, ours, depth, settings["rbo_p"])
    # the measures on the runs as compared: each cut to its top `depth`
    evaluated = [evaluate(rpd.top(run, depth), qrels, settings["measures"], name, args.qrels)
                 for run, name in ((original, args.original), (ours, args.run))]
    scores = rpd.score_measures(evaluated[0].per_query, evaluated[1].per_query)
    files = {"original": args.original, "reproduced": args.run, "qrels": args.qrels}
    made_by = provenance(config["run_command"], list(files.values()))
    made_by["versions"]["repro-eval"] = _version("repro-eval")
    record = rpd.record(args.pair, settings, {k: portable_name(v) for k, v in files.items()}, orders, scores,
                        evaluated[0].per_query, evaluated[1].per_query, made_by)
    write_json(args.out, record, indent=1)
    first = settings["measures"][0]
    print(f"{args.pair}: KTU {rpd.number_text(record['numbers']['KTU'])}, RBO {rpd.number_text(record['numbers']['RBO'])}, "
          f"RMSE {rpd.number_text(scores['RMSE'][first])} and p {rpd.p_text(scores['p'][first])} on {first}, "
          f"over {orders['topics']['compared']} topics")
    return 0


def _version(package: str) -> str:
    from importlib import metadata

    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "not installed"


def evaluate_files(run_path: str | os.PathLike, qrels_path: str | os.PathLike,
                   measures: Sequence[str]) -> Evaluation:
    result = evaluate(read_run(run_path), read_qrels(qrels_path), measures, str(run_path), str(qrels_path))
    result.source = {"run": str(run_path), "qrels": str(qrels_path)}
    return result


@exits_on_input_error("evaluate")
def main(argv: list[str] | None = None) -> int:
    if argv is not None and argv[:1] == ["agreement"]:
        return main_agreement(argv[1:])
    if argv is not None and argv[:1] == ["reproduction"]:
        return main_reproduction(argv[1:])
    parser = argparse.ArgumentParser(prog="python -m reranker evaluate", description=__doc__.splitlines()[0])
    add_files(parser, "run", "qrels")
    add_config(parser, "measures, and the collection's own")
    parser.add_argument("--collection", help="a collection id whose entry adds measures (e.g. RR@10; Cranfield: RadboudNDCG@20)")
    parser.add_argument("--measures", nargs="+", metavar="MEASURE",
                        help="these measures instead of the configured ones: ir_measures names or registered ones "
                             f"({', '.join(measures.MEASURES)})")
    parser.add_argument("--out", help="write aggregate and per-query values as JSON")
    args = parser.parse_args(argv)
    from reranker.core import settings as stage_settings
    from reranker.core.config import load_config

    names = args.measures or stage_settings.measures(load_config(args.config), args.collection)
    result = evaluate_files(args.run, args.qrels, names)
    print(f"{args.run}: {describe_coverage(result.coverage, args.qrels)}", file=sys.stderr)
    if args.out:
        write_evaluation(result, args.out)
    width = max(map(len, result.measures))
    for name in result.measures:
        print(f"{name:<{width}}  {result.aggregate[name]:.4f}")
    print(f"{'queries':<{width}}  {result.queries}")
    return 0
