"""Birch's evidence: built from a fusion (fuse birch), and read back: a document's moves, two runs compared.

The format is reranker/formats/evidence.py's (docs/evidence.md). Not a stage: `fuse` builds records with
`fusion_records`, `explain` reads them with the rest.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from reranker.formats.docs import read_docs
from reranker.formats.errors import InputError
from reranker.formats.evidence import OFFSETS, document_text, total, unit_offsets, write_evidence
from reranker.formats.ids import qid_key
from reranker.formats.runs import Run, sorted_docs
from reranker.formats.segments import Segments, read_segments
from reranker.formats.unit_scores import UnitIds, UnitScores

TERMS = ("doc: a * value; sentence i: (1 - a) * w_i * value (w_1 = 1); value: the score as fused (normalised per "
         "query unless normalise is none); the contributions, added in order, give the fused score")


class FoldFusion(NamedTuple):
    """What fusion applied to one fold's queries: its candidates (doc_ids, features [S_doc, S_1..S_n] as
    fused), the grid point and the multipliers of each feature."""

    candidates: Mapping[str, Any]  # qid -> fuse.Candidates
    params: tuple[float, float, float]  # a, w2, w3
    normalise: str  # the normalisation of the features
    coefs: np.ndarray  # a, 1-a, (1-a)w2, (1-a)w3, the first 1 + n


class Sources(NamedTuple):
    """The unit scores with their unit ids, the unit texts, and the documents, with their paths for errors."""

    scores: UnitScores
    unit_ids: UnitIds
    segments: Segments
    docs: Mapping[str, tuple[str, str]]
    scores_path: str
    segments_path: str


class _Units:
    """Per document, unit id -> (text, offsets), computed once and shared by the queries that rank it."""

    def __init__(self, sources: Sources):
        self.sources, self.cache = sources, {}

    def __call__(self, doc_id: str) -> dict[int, tuple[str, tuple[int, int] | None]]:
        if doc_id not in self.cache:
            units = self.sources.segments.get(doc_id, [])
            title, text = self.sources.docs[doc_id]
            spans = unit_offsets(document_text(title, text), [t for _, t in units])
            self.cache[doc_id] = {unit: (t, span) for (unit, t), span in zip(units, spans)}
        return self.cache[doc_id]


def write_fusion_evidence(path: str, settings: Mapping[str, Any], tag: str, inputs: Mapping[str, str], run: Run,
                          fused: Run, folds: Mapping[str, Sequence[str]], applied: Mapping[str, FoldFusion],
                          scores: UnitScores, unit_ids: UnitIds) -> int:
    """Write a fusion's evidence (`inputs`: the paths of its run, scores, segments and docs); the record count."""
    segments = read_segments(inputs["segments"])
    docs = read_docs(inputs["docs"], {doc_id for per_query in scores.values() for doc_id in per_query})
    sources = Sources(scores, unit_ids, segments, docs, inputs["scores"], inputs["segments"])
    header = {**{key: settings[key] for key in ("method", "formula", "top_n", "normalise", "short_docs")},
              "terms": TERMS, "offsets": OFFSETS, "tag": tag, "inputs": dict(inputs),
              "folds": {fold: {"a": f.params[0], "w2": f.params[1], "w3": f.params[2], "normalise": f.normalise}
                        for fold, f in applied.items()}}
    records = fusion_records(run, fused, folds, applied, settings["top_n"], settings["short_docs"], sources)
    return write_evidence(path, header, records)


def fusion_records(run: Run, fused: Run, folds: Mapping[str, Sequence[str]], applied: Mapping[str, FoldFusion],
                   top_n: int, short_docs: str, sources: Sources) -> Iterator[dict[str, Any]]:
    """One record per (query, re-scored document) of the fused run, queries as write_run orders them, documents
    by fused rank. Each record's contributions add up to its fused score exactly (checked)."""
    fold_of = {qid: fold for fold, qids in folds.items() for qid in qids}
    units_of = _Units(sources)
    for qid in sorted(fused, key=qid_key):
        fold = fold_of[qid]
        fusion = applied[fold]
        candidates = fusion.candidates[qid]
        first = {doc_id: rank for rank, (doc_id, _) in enumerate(sorted_docs(run[qid]), start=1)}
        after = {doc_id: rank for rank, (doc_id, _) in enumerate(sorted_docs(fused[qid]), start=1)}
        rows = sorted(range(len(candidates.doc_ids)), key=lambda i: after[candidates.doc_ids[i]])
        for i in rows:
            doc_id = candidates.doc_ids[i]
            record = {"qid": qid, "doc_id": doc_id, "fold": fold,
                      "first_stage": {"rank": first[doc_id], "score": run[qid][doc_id]},
                      "fused": {"rank": after[doc_id], "score": fused[qid][doc_id]},
                      **_terms(qid, doc_id, run[qid][doc_id], candidates.features[i], fusion, top_n, short_docs,
                               sources, units_of)}
            if total(record) != fused[qid][doc_id]:  # the record would explain another score: a bug, not bad input
                raise AssertionError(f"evidence of {qid}/{doc_id} adds up to {total(record)!r}, fused {fused[qid][doc_id]!r}")
            yield record


def _terms(qid: str, doc_id: str, s_doc: float, features: np.ndarray, fusion: FoldFusion, top_n: int, short_docs: str,
           sources: Sources, units_of: _Units) -> dict[str, Any]:
    coefs, weights = fusion.coefs.tolist(), (1.0, fusion.params[1], fusion.params[2])
    values = features.tolist()
    raw = sources.scores.get(qid, {}).get(doc_id, [])
    ids = sources.unit_ids.get(qid, {}).get(doc_id, [])
    # fuse takes the n highest unit scores; among equal ones the earliest unit is named (the value is the same)
    order = sorted(range(len(raw)), key=lambda j: -raw[j])
    texts = units_of(doc_id) if raw else {}
    sentences = []
    for slot in range(top_n):
        filled = slot >= len(raw)
        if filled and not (short_docs == "repeat_min" and raw):
            continue  # a missing term adds 0 (short_docs birch, or a document without units)
        j = order[-1] if filled else order[slot]
        if ids[j] not in texts:
            raise InputError(f"{sources.scores_path}: unit {ids[j]} of document {doc_id} has a score but no text in "
                             f"{sources.segments_path}: were the scores made from another segments file?")
        text, span = texts[ids[j]]
        sentences.append({"term": slot + 1, "unit": ids[j], "start": span[0] if span else None,
                          "end": span[1] if span else None, "text": text, "score": raw[j], "value": values[1 + slot],
                          "weight": weights[slot], "contribution": values[1 + slot] * coefs[1 + slot],
                          **({"filled": True} if filled else {})})
    return {"doc": {"score": s_doc, "value": values[0], "weight": coefs[0], "contribution": values[0] * coefs[0]},
            "sentences": sentences}


# ---------------------------------------------------------------------------------------------
# Reading back

def move(record: Mapping[str, Any]) -> int:
    """Ranks gained from the first stage to the fused run (negative: lost)."""
    return record["first_stage"]["rank"] - record["fused"]["rank"]


def largest_moves(records: Iterable[Mapping[str, Any]], count: int) -> tuple[list, list]:
    """The `count` records that rose most and the `count` that fell most (ties: query, then document order)."""
    moved = [r for r in records if move(r)]
    key = lambda r: (qid_key(r["qid"]), r["doc_id"])  # noqa: E731
    ups = sorted((r for r in moved if move(r) > 0), key=lambda r: (-move(r), key(r)))[:count]
    downs = sorted((r for r in moved if move(r) < 0), key=lambda r: (move(r), key(r)))[:count]
    return ups, downs


def _sentences(record: Mapping[str, Any]) -> Counter:
    """A record's top sentences by text (a unit id may change where segmentation does); repeats for
    short_docs repeat_min are no further evidence."""
    return Counter(s["text"] for s in record["sentences"] if not s.get("filled"))


def overlap(a: Mapping[str, Any], b: Mapping[str, Any]) -> float:
    """Shared top sentences over the larger set of the two (1 when both have none)."""
    x, y = _sentences(a), _sentences(b)
    size = max(sum(x.values()), sum(y.values()))
    return sum((x & y).values()) / size if size else 1.0


def evidence_diff(a: Iterable[Mapping[str, Any]], b: Iterable[Mapping[str, Any]], examples: int = 5) -> dict[str, Any]:
    """Per (query, document) in both: the overlap of their top sentences; summed up, with the documents that
    differ most."""
    left = {(r["qid"], r["doc_id"]): r for r in a}
    right = {(r["qid"], r["doc_id"]): r for r in b}
    both = sorted(left.keys() & right.keys(), key=lambda k: (qid_key(k[0]), k[1]))
    scores = {k: overlap(left[k], right[k]) for k in both}
    lowest = sorted(both, key=lambda k: (scores[k], qid_key(k[0]), k[1]))[:examples]
    return {
        "documents": len(both), "only_a": len(left.keys() - right.keys()), "only_b": len(right.keys() - left.keys()),
        "mean_overlap": float(np.mean(list(scores.values()))) if both else None,
        "identical": sum(v == 1 for v in scores.values()), "disjoint": sum(v == 0 for v in scores.values()),
        "same_fused_rank": sum(left[k]["fused"]["rank"] == right[k]["fused"]["rank"] for k in both),
        "lowest": [{"qid": q, "doc_id": d, "overlap": scores[q, d], "fused_rank_a": left[q, d]["fused"]["rank"],
                    "fused_rank_b": right[q, d]["fused"]["rank"]} for q, d in lowest],
    }
