"""Run-level reproduction: an original's own run against ours, by repro-eval's measures (Breuer et al., "How to
Measure the Reproducibility of System-oriented IR Experiments", SIGIR 2020; PyPI repro-eval).

Where ER and ΔRI (reranker.reproduction.effects) compare effects from the sources' means, these compare two runs of one
system, topic by topic:

- KTU, Kendall's tau union: per topic, Kendall's tau between the two rankings, each written as its documents'
  positions in the union of both lists sorted by document id (repro-eval's KTU: 1 for the same list in the same
  order; a reversal scores -1 only where ids sort as one of the lists does); mean.
- RBO, rank-biased overlap (persistence p): per topic, the top-weighted overlap of the rankings; mean.
- RMSE of a measure: root mean square of its per-topic differences (original - ours).
- p of a measure: a two-sided paired t-test over the topics (repro-eval's `ttest`, rpd=True).

Both runs are cut to their top `depth` (the original's depth, where it stops early) in trec_eval's order (score
descending, then document id descending, as repro-eval breaks ties) before anything is measured. KTU and RBO go
to the depth both runs reach on a topic (repro-eval's KTU needs equal lengths, and RBO to a depth past both runs'
ends would score a run against itself below 1). The per-topic values of the measures come from our evaluation
(reranker.stages.evaluate), as every table's do.

One JSON per pair (`numbers/reproduction/<pair>.json` under a run folder), FORMAT_VERSION 1:

    {"format_version": 1, "pair": ..., "label": ..., "note": ..., "collection": ...,
     "files": {"original": ..., "reproduced": ..., "qrels": ...},
     "depth": 100, "rbo_p": 0.95, "measures": ["RadboudNDCG@20", "nDCG@20"],
     "topics": {"compared": 225, "evaluated": 225, "only_original": [], "only_reproduced": [], "short": {}},
     "numbers": {"KTU": .., "RBO": .., "RMSE": {measure: ..}, "p": {measure: ..},
                 "mean_original": {measure: ..}, "mean_reproduced": {measure: ..}},
     "per_topic": {"KTU": {qid: ..}, "RBO": {qid: ..}, "original": {measure: {qid: ..}}, "reproduced": {...}},
     "provenance": {...}}

`short`: topics where a run has fewer than `depth` documents, with the depth both reach. A value that is not a
number (a t-test over differences without variance) is null. The seed index shows each pair in one row
(`section`).
"""

from __future__ import annotations

import json
import math
import os
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from pathlib import Path

from reranker.formats.errors import FormatError, InputError
from reranker.formats.ids import qid_order
from reranker.formats.runs import Run, sorted_docs

FORMAT_VERSION = 1
RBO_P = 0.95  # repro-eval's default persistence
MEANINGS = {
    "KTU": "Kendall's tau union as repro-eval computes it: tau between the two top lists, each written as its "
           "documents' places in the union of both sorted by id; 1 only for the same list in the same order, lower "
           "the more they differ (where the lists differ it also depends on the ids, so read it beside RBO; mean "
           "over topics)",
    "RBO": "rank-biased overlap: how much the two rankings share, the top ranks weighted most (1 the same list, 0 "
           "disjoint; mean over topics)",
    "RMSE": "root mean square error of the measure per topic, original against ours (0: the same score on every "
            "topic, whatever the order)",
    "p": "two-sided paired t-test of the measure over the topics: a small p says the two score distributions differ; "
         "a large one does not show they are the same",
}


def _repro_eval():
    """repro-eval's measure modules; their `scipy.stats.stats` imports warn of SciPy 2.0, which is no concern here."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        from repro_eval.measure import document_order, effectiveness, statistics
    return document_order, effectiveness, statistics


def top(run: Run, depth: int | None) -> Run:
    """Each query's top `depth` documents (all where None), in trec_eval's order, as ordered dicts."""
    return {qid: OrderedDict(sorted_docs(docs)[:depth]) for qid, docs in run.items()}


def _number(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def _mean(values: Sequence[float | None]) -> float | None:
    kept = [v for v in values if v is not None]
    return sum(kept) / len(kept) if kept else None


def order_measures(original: Run, reproduced: Run, depth: int | None = None, p: float = RBO_P) -> dict:
    """KTU and RBO (repro-eval), per topic of both runs and their means, with the topics only one run has and those
    where a run stops short of `depth`. Runs are cut with `top` first. No topic in common: an InputError."""
    document_order = _repro_eval()[0]
    shared = qid_order(original.keys() & reproduced.keys())
    if not shared:
        raise InputError(f"the two runs share no query (original: {', '.join(qid_order(original)[:3])}; ours: "
                         f"{', '.join(qid_order(reproduced)[:3])}): are they for the same collection?")
    original, reproduced = top(original, depth), top(reproduced, depth)
    ktu, rbo, short = {}, {}, {}
    for qid in shared:
        n = min(len(original[qid]), len(reproduced[qid]))
        if depth is not None and n < depth:
            short[qid] = n
        o, r = ({qid: OrderedDict(list(run[qid].items())[:n])} for run in (original, reproduced))
        # tau of fewer than 2 documents is undefined (scipy: nan); kept as null
        ktu[qid] = _number(document_order.KTU(o, r, trim_thresh=n, per_topic=True)[qid]) if n > 1 else None
        rbo[qid] = _number(document_order.RBO(o, r, p=p, depth=n, pbar=False, per_topic=True)[qid])
    return {"KTU": _mean(list(ktu.values())), "RBO": _mean(list(rbo.values())), "per_topic": {"KTU": ktu, "RBO": rbo},
            "topics": {"compared": len(shared), "only_original": qid_order(original.keys() - reproduced.keys()),
                       "only_reproduced": qid_order(reproduced.keys() - original.keys()), "short": short}}


def score_measures(original: Mapping[str, Mapping[str, float]], reproduced: Mapping[str, Mapping[str, float]]) -> dict:
    """RMSE and the paired t-test's p (repro-eval) per measure, from per-topic values (measure -> qid -> value) over
    the topics both have, with each side's mean. A measure both sides give the same value on every topic has p 1
    (repro-eval's rule); a p that is not a number (differences without variance) is None."""
    _, effectiveness, statistics = _repro_eval()
    result: dict = {"RMSE": {}, "p": {}, "mean_original": {}, "mean_reproduced": {}, "evaluated": {}}
    for measure, values in original.items():
        topics = qid_order(values.keys() & reproduced[measure].keys())
        if not topics:
            raise InputError(f"{measure}: no judged topic is in both runs: nothing to compare")
        # repro-eval's layout: qid -> measure -> value, both sides over the same topics in the same order
        o = {qid: {measure: values[qid]} for qid in topics}
        r = {qid: {measure: reproduced[measure][qid]} for qid in topics}
        result["RMSE"][measure] = _number(effectiveness.RMSE(o, r)[measure])
        result["p"][measure] = _number(statistics.ttest(o, r, rpd=True)[measure])
        result["mean_original"][measure] = sum(values[q] for q in topics) / len(topics)
        result["mean_reproduced"][measure] = sum(reproduced[measure][q] for q in topics) / len(topics)
        result["evaluated"][measure] = len(topics)
    return result


def record(pair: str, settings: Mapping, files: Mapping[str, str], orders: Mapping, scores: Mapping,
           original_per_topic: Mapping, reproduced_per_topic: Mapping, provenance: Mapping) -> dict:
    """The pair's JSON (the module's format) from `order_measures`, `score_measures` and the two evaluations."""
    measures = list(settings["measures"])
    return {
        "format_version": FORMAT_VERSION, "pair": pair, "label": settings.get("label") or pair,
        "note": settings.get("note") or "", "collection": settings["collection"], "files": dict(files),
        "depth": settings.get("depth"), "rbo_p": settings["rbo_p"], "measures": measures,
        "topics": {**orders["topics"], "evaluated": min(scores["evaluated"].values())},
        "numbers": {"KTU": orders["KTU"], "RBO": orders["RBO"], "RMSE": scores["RMSE"], "p": scores["p"],
                    "mean_original": scores["mean_original"], "mean_reproduced": scores["mean_reproduced"]},
        "per_topic": {**orders["per_topic"], "original": {m: dict(original_per_topic[m]) for m in measures},
                      "reproduced": {m: dict(reproduced_per_topic[m]) for m in measures}},
        "provenance": dict(provenance),
    }


# The index ----------------------------------------------------------------------------------------------------
REQUIRED = ("format_version", "pair", "label", "measures", "depth", "rbo_p", "topics", "numbers")


def read_record(path: str | os.PathLike) -> dict:
    """A pair's JSON, checked enough to render; a FormatError naming the file and the fix otherwise."""
    again = "make it again: python -m reranker evaluate reproduction (or rerun the workflow's run_reproduction job)"
    try:
        document = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise FormatError(path, None, f"not valid JSON ({err}); {again}") from None
    if not isinstance(document, dict):
        raise FormatError(path, None, f"expected a JSON object (a run-level reproduction); {again}")
    missing = [key for key in REQUIRED if key not in document]
    if missing:
        raise FormatError(path, None, f"not a run-level reproduction: it lacks {', '.join(missing)}; {again}")
    if document["format_version"] != FORMAT_VERSION:
        raise FormatError(path, None, f"format_version {document['format_version']!r}, this suite reads {FORMAT_VERSION}; {again}")
    numbers, measures = document["numbers"], document["measures"]
    tables = ("RMSE", "p", "mean_original", "mean_reproduced")
    if (not isinstance(measures, list) or not measures or not isinstance(numbers, dict) or not isinstance(document["topics"], dict)
            or not all(k in numbers for k in ("KTU", "RBO")) or not all(isinstance(numbers.get(k), dict) for k in tables)):
        raise FormatError(path, None, f"its numbers lack KTU, RBO or a measure's {', '.join(tables)}, or it names no "
                                      f"measure; {again}")
    return document


def records_in(folder: str | os.PathLike) -> list[dict]:
    """Every pair's JSON in `folder` (a run folder's numbers/reproduction), by file name; none: []."""
    return [read_record(path) for path in sorted(Path(folder).glob("*.json"))]


def number_text(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def p_text(value: float | None) -> str:
    return "n/a" if value is None else ("< 0.0001" if value < 1e-4 else f"{value:.4f}")


def section(records: Sequence[Mapping]) -> list[str]:
    """The index's lines for the pairs: a table (KTU, RBO, then RMSE and p of the pair's first measure, and both
    means), each pair's note, and what each measure says in one line. No pair: no lines."""
    if not records:
        return []
    lines = ["## Runs against the originals' own runs (repro-eval)", "",
             "Beside ER and ΔRI, which compare effects from the sources' means, these compare a run of ours with the "
             "original's own run of the same system, topic by topic (`numbers/reproduction/<pair>.json`: every "
             "measure, per topic, with provenance).", "",
             "| pair | depth | topics | KTU | RBO | RMSE | p (t-test) | mean: original → ours |", "|---|---:|---:|---:|---:|---|---|---|"]
    for rec in records:
        first, numbers, topics = rec["measures"][0], rec["numbers"], rec["topics"]
        depth = rec["depth"] if rec["depth"] is not None else "all"
        judged = topics.get("evaluated", topics.get("compared"))
        counted = f"{topics.get('compared')}" + (f" ({judged} judged)" if judged != topics.get("compared") else "")
        cells = [rec["label"], str(depth), counted, number_text(numbers["KTU"]), number_text(numbers["RBO"]),
                 f"{number_text(numbers['RMSE'].get(first))} ({first})", f"{p_text(numbers['p'].get(first))} ({first})",
                 f"{number_text(numbers['mean_original'].get(first))} → {number_text(numbers['mean_reproduced'].get(first))} ({first})"]
        lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
    lines.append("")
    for rec in records:
        said = [f"RMSE {number_text(rec['numbers']['RMSE'].get(m))}, p {p_text(rec['numbers']['p'].get(m))}, mean "
                f"{number_text(rec['numbers']['mean_original'].get(m))} → {number_text(rec['numbers']['mean_reproduced'].get(m))} on {m}"
                for m in rec["measures"][1:]]
        short = rec["topics"].get("short") or {}
        parts = [rec.get("note") or ""] + ([f"Also: {'; '.join(said)}."] if said else [])
        if short:
            parts.append(f"{len(short)} topics have fewer than {rec['depth']} documents in a run: compared to the depth both reach.")
        text = " ".join(p.strip() for p in parts if p.strip())
        if text:
            lines += [f"- {rec['label']}: {text}"]
    persistence = sorted({rec["rbo_p"] for rec in records})
    lines += ["", f"What each says (RBO with p = {' or '.join(map(str, persistence))}):", ""]
    lines += [f"- {name}: {meaning}." for name, meaning in MEANINGS.items()]
    return lines + [""]
