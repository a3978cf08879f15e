"""Birch's cross-validated score fusion over per-unit relevance scores (the `fuse birch` stage's library).

Birch (Yilmaz et al., EMNLP 2019) scores each sentence of a document's top-K first-stage documents
with BERT and fuses the n best sentence scores with the first-stage score:

    S_f = a * S_doc + (1 - a) * sum_{i <= n} w_i * S_i        w_1 = 1;  a, w_2, w_3 in [0, 1]

with (a, w_2, w_3) chosen per fold by grid search on the other folds' queries (mean AP@1000).

Conventions (each is also written to the parameters JSON):
- Top-K and tail. K is the deepest first-stage rank holding a document with unit scores. Ranks
  1..K are re-scored (a document there without units has every unit term missing); ranks K+1..depth
  keep their first-stage order below all re-scored documents, scored min(re-scored) - 1, - 2, ...
- Short documents. Birch's `eval_bert.py` zips the sorted unit scores with the weights, so a
  document with fewer than n units just lacks the missing terms (they add 0): `short_docs="birch"`.
  `short_docs="repeat_min"` fills them with the document's lowest unit score instead. A document
  without any unit gets 0 for every unit term either way.
- Normalisation (`normalise`) is per query: S_doc over the top-K documents, unit scores over all
  units of those documents; `none` keeps the raw scores as Birch did. minmax maps to [0, 1], zscore
  to mean 0 / sd 1; a constant list maps to 0. `cv` chooses one of them per fold, on the training
  folds, jointly with a and w (the normalisation whose best grid point has the highest train AP).
- AP is AP@1000 (trec_eval -M1000 map): rank by score descending as a C float (trec_eval keeps
  scores in single precision, so nearly equal doubles tie), ties by doc_id descending; a
  document is relevant at grade >= `relevant_min_grade`, divide by the query's relevant count in
  the qrels. Means are over the queries in both the run and the qrels (trec_eval without -c).
- Ties in the grid search: points whose train AP is within `TIE_TOLERANCE` of the best are equal;
  the largest a wins, then the smallest w_2, then the smallest w_3 (the point closest to the
  first-stage run, using the fewest units).

The grid is evaluated once for every query with vectorised AP (scores are docs x grid points; each
relevant document's rank is counted, not sorted for), so cross-validation only averages rows of a
queries x grid matrix.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from tqdm import tqdm

from reranker.formats.errors import InputError
from reranker.formats.folds import fold_queries
from reranker.formats.ids import qid_order
from reranker.formats.qrels import Qrels
from reranker.formats.runs import Run, sorted_docs
from reranker.formats.unit_scores import UnitScores

NORMALISATIONS = ("none", "minmax", "zscore")
SHORT_DOCS = ("birch", "repeat_min")
TOP_N = (1, 2, 3)
CUTOFF = 1000
TIE_TOLERANCE = 1e-12  # absorbs summation-order rounding between AP implementations (~1e-16)
MAX_CELLS = 1 << 22  # docs x relevant docs x grid points per block of the grid evaluation

# ---------------------------------------------------------------------------------------------
# Candidates: the re-scored top-K of a query and the tail below it

@dataclass(frozen=True)
class Candidates:
    """One query's first-stage ranking, split at K."""

    doc_ids: list[str]  # ranks 1..K, first-stage order
    features: np.ndarray  # K x (1 + n): S_doc, then the n highest unit scores
    tail: list[str]  # ranks K+1..depth, first-stage order


def split_at_k(ranking: Mapping[str, float], scored: Mapping[str, object], qid: str) -> tuple[list[str], list[str]]:
    """First-stage order (as trec_eval ranks) split after the deepest document that has unit scores."""
    order = [doc_id for doc_id, _ in sorted_docs(ranking)]
    missing = [doc_id for doc_id in scored if doc_id not in ranking]
    if missing:
        raise InputError(f"query {qid}: {len(missing)} documents with unit scores are not in the first-stage run "
                         f"(e.g. {missing[0]}); were the scores made from another run?")
    k = max((i + 1 for i, doc_id in enumerate(order) if doc_id in scored), default=0)
    return order[:k], order[k:]


def normalise(values: np.ndarray, method: str) -> np.ndarray:
    """Per-query normalisation of a score vector (see the module docstring)."""
    if method == "none" or values.size == 0:
        return values
    if method == "minmax":
        spread = values.max() - values.min()
        return (values - values.min()) / spread if spread > 0 else np.zeros_like(values)
    if method == "zscore":
        sd = values.std()
        return (values - values.mean()) / sd if sd > 0 else np.zeros_like(values)
    raise InputError(f"normalise must be one of {', '.join(NORMALISATIONS)}, not {method!r}")


def top_unit_features(units: Sequence[np.ndarray], top_n: int, short_docs: str) -> np.ndarray:
    """The `top_n` highest unit scores of each document, missing ones filled as `short_docs` says."""
    if short_docs not in SHORT_DOCS:
        raise InputError(f"short_docs must be one of {', '.join(SHORT_DOCS)}, not {short_docs!r}")
    out = np.zeros((len(units), top_n))
    for row, scores in enumerate(units):
        best = np.sort(scores)[::-1][:top_n]
        out[row, :best.size] = best
        if short_docs == "repeat_min" and 0 < best.size < top_n:
            out[row, best.size:] = scores.min()
    return out


def birch_candidates(run: Run, unit_scores: UnitScores, top_n: int, normalise_scores: str = "none",
                     short_docs: str = "birch") -> dict[str, Candidates]:
    """Features [S_doc, S_1..S_n] of every query's top-K documents."""
    if top_n not in TOP_N:
        raise InputError(f"top_n must be one of {TOP_N}, not {top_n}")
    extra = sorted(set(unit_scores) - set(run))
    if extra:
        raise InputError(f"{len(extra)} queries have unit scores but no first-stage ranking (e.g. {extra[0]})")
    candidates = {}
    for qid, ranking in run.items():
        scored = unit_scores.get(qid, {})
        top, tail = split_at_k(ranking, scored, qid)
        doc_scores = normalise(np.array([ranking[doc_id] for doc_id in top], dtype=float), normalise_scores)
        units = [np.array(scored.get(doc_id, ()), dtype=float) for doc_id in top]
        sizes = [u.size for u in units]
        flat = normalise(np.concatenate(units) if units else np.zeros(0), normalise_scores)
        units = np.split(flat, np.cumsum(sizes)[:-1]) if units else []
        features = np.column_stack([doc_scores, top_unit_features(units, top_n, short_docs)])
        candidates[qid] = Candidates(top, features, tail)
    return candidates


# ---------------------------------------------------------------------------------------------
# The grid and the fused scores

def parameter_grid(top_n: int, alpha_step: float = 0.1, weight_step: float = 0.1) -> np.ndarray:
    """Rows (a, w2, w3) for nS fusion; weights beyond n are 0. Order: a, then w2, then w3 ascending."""
    if top_n not in TOP_N:
        raise InputError(f"top_n must be one of {TOP_N}, not {top_n}")
    alphas, weights = _steps(alpha_step, "alpha_step"), _steps(weight_step, "weight_step")
    axes = [alphas] + [weights if i <= top_n else np.zeros(1) for i in (2, 3)]
    mesh = np.meshgrid(*axes, indexing="ij")
    return np.column_stack([m.ravel() for m in mesh])


def _steps(step: float, name: str) -> np.ndarray:
    count = round(1 / step) if step > 0 else 0
    if count < 1 or not math.isclose(count * step, 1.0, rel_tol=1e-9):
        raise InputError(f"{name} must divide 1 into whole steps (0.1, 0.05, 0.25, ...), not {step}")
    return np.arange(count + 1) / count  # exact decimals: 3/10 is 0.3, unlike 3 * 0.1


def coefficients(params: np.ndarray, top_n: int) -> np.ndarray:
    """Per grid row, the multipliers of [S_doc, S_1, S_2, S_3][:1 + n]: a, (1-a), (1-a)w2, (1-a)w3."""
    a = params[:, 0]
    return np.column_stack([a, 1 - a, (1 - a) * params[:, 1], (1 - a) * params[:, 2]])[:, :1 + top_n]


def combine(features: np.ndarray, coefs: np.ndarray) -> np.ndarray:
    """docs x grid fused scores. Plain elementwise products summed in column order, so one grid
    point gives bit-identical scores whether evaluated alone or within a block (no BLAS reordering)."""
    scores = features[:, :1] * coefs[:, 0]
    for j in range(1, coefs.shape[1]):
        scores += features[:, j:j + 1] * coefs[:, j]
    return scores


def with_tail(scores: Mapping[str, float], tail: Sequence[str], ranking: Mapping[str, float]) -> dict[str, float]:
    """Re-scored documents, then the tail in its given order strictly below them."""
    if not scores:
        return {doc_id: ranking[doc_id] for doc_id in tail}
    floor = min(scores.values())
    return {**scores, **{doc_id: floor - i for i, doc_id in enumerate(tail, start=1)}}


def fuse_query(candidates: Candidates, params: Sequence[float], top_n: int, ranking: Mapping[str, float]) -> dict[str, float]:
    fused = combine(candidates.features, coefficients(np.array([params], dtype=float), top_n))[:, 0]
    return with_tail(dict(zip(candidates.doc_ids, fused.tolist())), candidates.tail, ranking)


def fuse(run: Run, candidates: Mapping[str, Candidates], params: Sequence[float], top_n: int,
         qids: Sequence[str] | None = None) -> Run:
    """The fused run for (a, w2, w3), over `qids` (default: every query of the run)."""
    return {qid: fuse_query(candidates[qid], params, top_n, run[qid]) for qid in (qids if qids is not None else run)}


# ---------------------------------------------------------------------------------------------
# Vectorised AP over the grid

def grid_average_precision(candidates: Candidates, judgements: Mapping[str, int], params: np.ndarray, top_n: int,
                           relevant_min_grade: int = 1, cutoff: int = CUTOFF, max_cells: int = MAX_CELLS) -> np.ndarray:
    """AP@cutoff of one query for every row of `params`, as trec_eval computes it.

    AP needs only the ranks of the relevant documents: 1 + the top-K documents ahead in
    trec_eval's order (a higher float32 score, or an equal one and a larger doc_id). The tail adds
    the same for every grid point (the top-K holds the same relevant documents in any order).
    """
    n_relevant = sum(grade >= relevant_min_grade for grade in judgements.values())
    if n_relevant == 0:
        return np.zeros(len(params))
    doc_ids = np.array(candidates.doc_ids, dtype=str)
    relevant = np.array([judgements.get(d, 0) >= relevant_min_grade for d in candidates.doc_ids], dtype=bool)
    tail_relevant = np.array([judgements.get(d, 0) >= relevant_min_grade for d in candidates.tail], dtype=bool)
    tail_ranks = np.arange(doc_ids.size + 1, doc_ids.size + 1 + tail_relevant.size)
    tail_hits = relevant.sum() + np.cumsum(tail_relevant)
    keep = tail_relevant & (tail_ranks <= cutoff)
    tail_sum = float(np.sum(tail_hits[keep] / tail_ranks[keep]))
    if not relevant.any():
        return np.full(len(params), tail_sum / n_relevant)

    later_doc_id = doc_ids[:, None] > doc_ids[relevant][None, :]  # K x R: ahead of the relevant doc on a tie
    coefs = coefficients(params, top_n)
    block = max(1, max_cells // later_doc_id.size)
    ap = np.empty(len(params))
    for start in range(0, len(params), block):
        scores = combine(candidates.features, coefs[start:start + block]).astype(np.float32)  # K x g
        mine = scores[relevant][None]  # 1 x R x g
        ahead = (scores[:, None] > mine) | ((scores[:, None] == mine) & later_doc_id[:, :, None])
        ranks = np.sort(ahead.sum(axis=0) + 1, axis=0)  # R x g: the relevant documents' ranks, best first
        top = np.zeros(ranks.shape[1])
        for hits, rank in enumerate(ranks, start=1):  # in rank order, as trec_eval adds the precisions
            top += np.where(rank <= cutoff, hits / rank, 0.0)
        ap[start:start + block] = top
    return (ap + tail_sum) / n_relevant


def grid_ap_matrix(candidates: Mapping[str, Candidates], qrels: Qrels, qids: Sequence[str], params: np.ndarray,
                   top_n: int, relevant_min_grade: int = 1, cutoff: int = CUTOFF, max_cells: int = MAX_CELLS,
                   show_progress: bool = True) -> np.ndarray:
    """queries x grid AP@cutoff for `qids` (each must be in `candidates` and `qrels`)."""
    matrix = np.empty((len(qids), len(params)))
    for row, qid in enumerate(tqdm(qids, desc=f"AP over {len(params)} grid points", unit="query", file=sys.stderr,
                                   disable=not show_progress)):
        matrix[row] = grid_average_precision(candidates[qid], qrels[qid], params, top_n, relevant_min_grade, cutoff, max_cells)
    return matrix


def best_grid_point(mean_ap: np.ndarray, params: np.ndarray) -> int:
    """Index of the best mean AP; ties (within TIE_TOLERANCE) go to the largest a, smallest w2, smallest w3."""
    tied = np.flatnonzero(mean_ap >= mean_ap.max() - TIE_TOLERANCE)
    order = np.lexsort((params[tied, 2], params[tied, 1], -params[tied, 0]))
    return int(tied[order[0]])


# ---------------------------------------------------------------------------------------------
# Cross-validation

@dataclass(frozen=True)
class FoldChoice:
    fold: str
    n: int
    a: float
    w2: float
    w3: float
    train_ap: float
    test_ap: float
    train_queries: int
    test_queries: int


def cross_validate(run: Run, candidates: Mapping[str, Candidates], qrels: Qrels, folds: Mapping[str, Sequence[str]],
                   top_n: int, alpha_step: float = 0.1, weight_step: float = 0.1, relevant_min_grade: int = 1,
                   cutoff: int = CUTOFF, max_cells: int = MAX_CELLS, show_progress: bool = True) -> tuple[Run, list[FoldChoice]]:
    """Choose (a, w2, w3) on each fold's training queries (the other folds), apply it to the fold.

    Returns the joined test-fold runs (every fold query in the run) and the choice per fold.
    """
    joined, choices, _ = cross_validate_sets(run, {"given": candidates}, qrels, folds, top_n, alpha_step, weight_step,
                                             relevant_min_grade, cutoff, max_cells, show_progress)
    return joined, choices


def cross_validate_sets(run: Run, candidate_sets: Mapping[str, Mapping[str, Candidates]], qrels: Qrels,
                        folds: Mapping[str, Sequence[str]], top_n: int, alpha_step: float = 0.1,
                        weight_step: float = 0.1, relevant_min_grade: int = 1, cutoff: int = CUTOFF,
                        max_cells: int = MAX_CELLS, show_progress: bool = True
                        ) -> tuple[Run, list[FoldChoice], dict[str, str]]:
    """Cross-validation over several feature sets (e.g. one per normalisation) as well as the grid.

    On each fold's training queries, the best grid point of each set is found, and the set whose
    best is highest wins (ties: the earlier set). Returns the joined run, the choices, and the set
    chosen per fold.
    """
    params = parameter_grid(top_n, alpha_step, weight_step)
    in_folds = fold_queries(folds)
    evaluated = [qid for qid in qid_order(in_folds) if qid in run and qid in qrels]
    if not evaluated:
        raise InputError("no fold query is both in the run and in the qrels")
    uncovered = qid_order({q for q in run if q in qrels} - in_folds)
    if uncovered:  # they would leave the fused run and its evaluation, quietly
        raise InputError(f"{len(uncovered)} judged queries of the run are in no fold (e.g. {', '.join(uncovered[:5])}): "
                         "the folds must cover every query that is evaluated")
    unknown = qid_order(in_folds - run.keys() - qrels.keys())
    if unknown:
        raise InputError(f"{len(unknown)} fold queries are neither in the run nor in the qrels (e.g. "
                         f"{', '.join(unknown[:5])}): are the folds for this collection?")
    matrices = {name: grid_ap_matrix(candidates, qrels, evaluated, params, top_n, relevant_min_grade, cutoff, max_cells,
                                     show_progress) for name, candidates in candidate_sets.items()}
    row = {qid: i for i, qid in enumerate(evaluated)}
    joined: Run = {}
    choices, chosen = [], {}
    for fold, test_qids in folds.items():
        test = set(test_qids)
        train_rows = [row[q] for q in evaluated if q not in test]
        test_rows = [row[q] for q in evaluated if q in test]
        if not train_rows:
            raise InputError(f"fold {fold!r}: no training query (other folds) is both in the run and in the qrels")
        best_of = {name: best_grid_point(matrix[train_rows].mean(axis=0), params) for name, matrix in matrices.items()}
        train_ap = {name: float(matrices[name][train_rows, best].mean()) for name, best in best_of.items()}
        name = next(n for n in candidate_sets if train_ap[n] >= max(train_ap.values()) - TIE_TOLERANCE)
        best, matrix = best_of[name], matrices[name]
        a, w2, w3 = (float(x) for x in params[best])
        joined.update(fuse(run, candidate_sets[name], (a, w2, w3), top_n, [q for q in test_qids if q in run]))
        choices.append(FoldChoice(fold, top_n, a, w2, w3, train_ap[name],
                                  float(matrix[test_rows, best].mean()) if test_rows else math.nan,
                                  len(train_rows), len(test_rows)))
        chosen[fold] = name
    return joined, choices, chosen


def describe(top_n: int, alpha_step: float, weight_step: float, normalise_scores: str, short_docs: str,
             relevant_min_grade: int, cutoff: int) -> dict:
    """The settings and conventions of a fusion run, for the parameters JSON."""
    return {
        "method": f"birch-{top_n}S",
        "formula": "a*S_doc + (1-a)*(S_1 + w2*S_2 + w3*S_3), S_i the i-th highest unit score; weights beyond n are 0",
        "top_n": top_n,
        "alpha_step": alpha_step,
        "weight_step": weight_step,
        "normalise": normalise_scores,
        "short_docs": short_docs,
        "short_docs_handling": {
            "birch": "missing unit terms add 0 (as Birch's eval_bert.py, which zips scores with weights)",
            "repeat_min": "missing unit terms take the document's lowest unit score",
        }[short_docs] + "; a top-K document without units gets 0 for every unit term",
        "tail": "first-stage ranks K+1..depth (K: deepest document with unit scores) keep their order below the re-scored top-K",
        "measure": f"AP@{cutoff} (trec_eval -M{cutoff} map: float32 scores, ties by docid descending), "
                   f"relevant grade >= {relevant_min_grade}, mean over queries in both run and qrels",
        "tie_break": f"train AP within {TIE_TOLERANCE:g} is a tie: largest a, then smallest w2, then smallest w3",
    }
