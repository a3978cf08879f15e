"""Birch fusion and aggregation: vectorised AP and cross-validation against brute-force ir_measures.

Inputs are seeded random runs, unit scores and qrels rounded to one decimal, so that first-stage
scores, unit scores and fused scores tie and the doc_id tie-break matters.
"""

from __future__ import annotations

import json

import ir_measures
import numpy as np
import pytest
from ir_measures import AP

from reranker.corpora.load import load_collection
from reranker.formats.errors import FormatError
from reranker.formats.folds import read_folds
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import read_run, sorted_docs
from reranker.formats.text import meta_path
from reranker.formats.unit_scores import record_unit_scores
from reranker.ranking import fusion
from reranker.ranking.aggregation import aggregate
from reranker.stages import fuse

STEP = 0.5  # a coarse grid keeps the brute-force ir_measures search fast
FOLDS = {"f1": ["1", "2", "3", "4"], "f2": ["5", "6", "7", "8"], "f3": ["9", "10", "11", "12", "13"]}


def synthetic(seed: int = 0, queries: int = 13, depth: int = 40, k: int = 20):
    """Run, unit scores and qrels with ties, short documents, relevant documents missed by the run,
    a query without relevant documents (13) and an unjudged query (12)."""
    rng = np.random.default_rng(seed)
    run, units, qrels = {}, {}, {}
    for q in range(1, queries + 1):
        qid = str(q)
        doc_ids = [f"d{d:03d}" for d in rng.choice(200, depth, replace=False)]
        judged = rng.choice(doc_ids + ["missed1", "missed2"], 15, replace=False).tolist()
        grades = rng.choice([-1, 0, 0, 1, 2], len(judged)) if qid != "13" else np.zeros(len(judged), dtype=int)
        relevant = {d for d, g in zip(judged, grades) if g >= 1}
        # Both stages carry some signal, so that folds choose different parameters.
        run[qid] = {d: round(rng.uniform(5, 8) + 0.5 * (d in relevant), 1) for d in doc_ids}
        top = [doc_id for doc_id, _ in sorted_docs(run[qid])[:k]]
        units[qid] = {d: np.round(rng.normal(0, 1, rng.integers(1, 6)) + 0.8 * (d in relevant), 1).tolist() for d in top}
        if qid != "12":
            qrels[qid] = dict(zip(judged, grades.tolist()))
    return run, units, qrels


def ir_measures_ap(run, qrels, qids=None) -> dict[str, float]:
    if qids is not None:
        run = {q: run[q] for q in qids if q in run}
        qrels = {q: qrels[q] for q in qids if q in qrels}
    return {m.query_id: m.value for m in ir_measures.iter_calc([AP @ 1000], qrels, run)}


@pytest.fixture(scope="module")
def data():
    return synthetic()


@pytest.mark.parametrize("top_n, normalise, short_docs",
                         [(1, "none", "birch"), (2, "minmax", "repeat_min"), (3, "none", "birch"), (3, "zscore", "repeat_min")])
def test_grid_ap_equals_ir_measures_at_every_grid_point(data, top_n, normalise, short_docs):
    run, units, qrels = data
    candidates = fusion.birch_candidates(run, units, top_n, normalise, short_docs)
    params = fusion.parameter_grid(top_n, 0.25, 0.25)
    qids = [q for q in run if q in qrels]
    matrix = fusion.grid_ap_matrix(candidates, qrels, qids, params, top_n, show_progress=False)
    chunked = fusion.grid_ap_matrix(candidates, qrels, qids, params, top_n, max_cells=50, show_progress=False)
    np.testing.assert_array_equal(matrix, chunked)
    for g, point in enumerate(params):
        expected = ir_measures_ap(fusion.fuse(run, candidates, point, top_n), qrels)
        assert sorted(expected) == sorted(qids)
        for row, qid in enumerate(qids):
            assert matrix[row, g] == pytest.approx(expected[qid], abs=1e-12), (qid, point)


@pytest.mark.parametrize("top_n", [1, 2, 3])
def test_cross_validation_matches_brute_force_ir_measures(data, top_n):
    run, units, qrels = data
    candidates = fusion.birch_candidates(run, units, top_n)
    joined, choices = fusion.cross_validate(run, candidates, qrels, FOLDS, top_n, STEP, STEP, show_progress=False)
    params = fusion.parameter_grid(top_n, STEP, STEP)
    per_point = [ir_measures_ap(fusion.fuse(run, candidates, point, top_n), qrels) for point in params]
    for choice in choices:
        train = [q for f, qids in FOLDS.items() if f != choice.fold for q in qids if q in qrels]
        means = [sum(ap[q] for q in train) / len(train) for ap in per_point]
        best = max(means)
        tied = [i for i, m in enumerate(means) if m >= best - fusion.TIE_TOLERANCE]
        a, w2, w3 = min((params[i] for i in tied), key=lambda p: (-p[0], p[1], p[2]))
        assert (choice.a, choice.w2, choice.w3) == (a, w2, w3)
        assert choice.train_ap == pytest.approx(best, abs=1e-12)
        test_ap = ir_measures_ap(joined, qrels, FOLDS[choice.fold])
        assert choice.test_queries == len(test_ap)
        assert choice.test_ap == pytest.approx(sum(test_ap.values()) / len(test_ap), abs=1e-12)
    assert sorted(joined) == sorted(run)
    overall = ir_measures_ap(joined, qrels)
    weighted = sum(c.test_ap * c.test_queries for c in choices) / sum(c.test_queries for c in choices)
    assert weighted == pytest.approx(sum(overall.values()) / len(overall), abs=1e-12)


def test_normalisation_chosen_by_cross_validation_is_the_best_on_training_folds_alone(data):
    """`cv` picks, per fold, the normalisation whose best grid point has the highest train AP; the
    test fold's AP never enters the choice."""
    run, units, qrels = data
    sets = {m: fusion.birch_candidates(run, units, 2, m) for m in fusion.NORMALISATIONS}
    joined, choices, chosen = fusion.cross_validate_sets(run, sets, qrels, FOLDS, 2, STEP, STEP, show_progress=False)
    for choice in choices:
        single = {m: {c.fold: c for c in fusion.cross_validate(run, sets[m], qrels, FOLDS, 2, STEP, STEP,
                                                                show_progress=False)[1]}[choice.fold]
                  for m in fusion.NORMALISATIONS}
        best = max(c.train_ap for c in single.values())
        expected = next(m for m in fusion.NORMALISATIONS if single[m].train_ap >= best - fusion.TIE_TOLERANCE)
        assert chosen[choice.fold] == expected and choice == single[expected]
        assert ir_measures_ap(joined, qrels, FOLDS[choice.fold]) == ir_measures_ap(
            fusion.fuse(run, sets[expected], (choice.a, choice.w2, choice.w3), 2), qrels, FOLDS[choice.fold])
    assert set(chosen.values()) != {"none"}  # a real choice was made, not the first set by default


def test_ties_go_to_the_largest_a_then_the_smallest_weights():
    params = fusion.parameter_grid(3, STEP, STEP)
    mean_ap = np.zeros(len(params))
    index = {tuple(p): i for i, p in enumerate(params.tolist())}
    for point in [(0.0, 0.0, 0.0), (0.5, 1.0, 0.0), (0.5, 0.5, 1.0)]:
        mean_ap[index[point]] = 0.4
    mean_ap[index[(0.5, 0.5, 0.5)]] = 0.4 - fusion.TIE_TOLERANCE / 10  # rounding noise: still a tie
    mean_ap[index[(1.0, 0.0, 0.0)]] = 0.4 - 1e-9  # a real difference
    assert tuple(params[fusion.best_grid_point(mean_ap, params)]) == (0.5, 0.5, 0.5)


def test_alpha_one_reproduces_the_first_stage_ranking(data):
    run, units, _ = data
    candidates = fusion.birch_candidates(run, units, 3)
    fused = fusion.fuse(run, candidates, (1.0, 0.5, 0.5), 3)
    for qid in run:
        assert [d for d, _ in sorted_docs(fused[qid])] == [d for d, _ in sorted_docs(run[qid])]


def test_tail_stays_below_the_rescored_documents_in_first_stage_order(data):
    run, units, _ = data
    candidates = fusion.birch_candidates(run, units, 2)
    fused = fusion.fuse(run, candidates, (0.0, 1.0, 0.0), 2)
    for qid in run:
        first_stage = [d for d, _ in sorted_docs(run[qid])]
        k = len(units[qid])
        ranked = [d for d, _ in sorted_docs(fused[qid])]
        assert set(ranked[:k]) == set(first_stage[:k])
        assert ranked[k:] == first_stage[k:]
    without_units = {qid: docs for qid, docs in units.items() if qid != "1"}
    unscored = fusion.fuse(run, fusion.birch_candidates(run, without_units, 2), (0.0, 1.0, 0.0), 2)["1"]
    assert unscored == run["1"]


def test_short_documents_follow_the_documented_handling():
    run = {"q": {"long": 3.0, "one": 2.0, "two": 1.0, "none": 0.5, "tail": 0.1}}
    units = {"q": {"long": [0.2, 0.9, 0.4, 0.1], "one": [0.7], "two": [0.3, 0.6], "none": []}}
    a, w2, w3 = 0.5, 0.5, 0.25

    def birch_formula(s_doc, unit_scores, fill):
        top = sorted(unit_scores, reverse=True)[:3]
        top += [fill(unit_scores)] * (3 - len(top))
        return a * s_doc + (1 - a) * (top[0] + w2 * top[1] + w3 * top[2])

    fills = {"birch": lambda scores: 0.0, "repeat_min": lambda scores: min(scores) if scores else 0.0}
    for mode, fill in fills.items():
        candidates = fusion.birch_candidates(run, units, 3, short_docs=mode)
        assert candidates["q"].doc_ids == ["long", "one", "two", "none"] and candidates["q"].tail == ["tail"]
        fused = fusion.fuse(run, candidates, (a, w2, w3), 3)["q"]
        for doc_id, scores in units["q"].items():
            assert fused[doc_id] == pytest.approx(birch_formula(run["q"][doc_id], scores, fill), abs=1e-12), (mode, doc_id)
        assert fused["tail"] < min(fused[d] for d in units["q"])


def test_normalisation_is_per_query():
    scores = np.array([2.0, 4.0, 6.0])
    np.testing.assert_allclose(fusion.normalise(scores, "minmax"), [0.0, 0.5, 1.0])
    z = fusion.normalise(scores, "zscore")
    assert z.mean() == pytest.approx(0.0) and z.std() == pytest.approx(1.0)
    np.testing.assert_array_equal(fusion.normalise(np.array([3.0, 3.0]), "minmax"), [0.0, 0.0])
    run = {"a": {"d1": 10.0, "d2": 20.0}, "b": {"d1": 100.0, "d2": 300.0}}
    units = {"a": {"d1": [1.0], "d2": [2.0]}, "b": {"d1": [5.0], "d2": [50.0]}}
    candidates = fusion.birch_candidates(run, units, 1, "minmax")
    for qid in run:
        np.testing.assert_array_equal(candidates[qid].features, [[1.0, 1.0], [0.0, 0.0]])


def test_aggregation_methods_on_a_hand_checkable_case():
    run = {"q": {"d1": 9.0, "d2": 8.0, "d3": 7.0, "d4": 6.0, "d5": 5.0, "d6": 4.0}}
    # d4 is inside the top-K but has no units; d6 is below K.
    units = {"q": {"d1": [1.0, 3.0, 2.0], "d2": [5.0], "d3": [0.5, 0.5, 0.5, 0.5], "d5": [-1.0, 4.0]}}
    expected = {
        "firstp": ["d2", "d1", "d3", "d5", "d4", "d6"],  # 5, 1, 0.5, -1
        "maxp": ["d2", "d5", "d1", "d3", "d4", "d6"],  # 5, 4, 3, 0.5
        "sump": ["d1", "d2", "d5", "d3", "d4", "d6"],  # 6, 5, 3, 2
        "meanp": ["d2", "d1", "d5", "d3", "d4", "d6"],  # 5, 2, 1.5, 0.5
    }
    for method, order in expected.items():
        ranked = aggregate(run, units, method)["q"]
        assert [d for d, _ in sorted_docs(ranked)] == order, method
    assert aggregate(run, units, "sump")["q"]["d1"] == 6.0
    # Candidates R = 3: d5's units are ignored; d4 onwards keep the first stage's order.
    ranked = aggregate(run, units, "maxp", candidates=3)["q"]
    assert [d for d, _ in sorted_docs(ranked)] == ["d2", "d1", "d3", "d4", "d5", "d6"]


def test_parameter_grid_is_exact_and_ordered():
    grid = fusion.parameter_grid(3, 0.1, 0.5)
    assert grid.shape == (11 * 3 * 3, 3)
    assert 0.3 in grid[:, 0] and sorted(set(grid[:, 1])) == [0.0, 0.5, 1.0]
    assert np.all(fusion.parameter_grid(1)[:, 1:] == 0)
    with pytest.raises(ValueError, match="whole steps"):
        fusion.parameter_grid(2, 0.3)


def test_command_line_writes_runs_and_parameters(tmp_path, data, capsys):
    run, units, qrels = data
    paths = {name: tmp_path / name for name in ("run.txt", "scores.tsv", "qrels.txt", "folds.json")}
    with open(paths["run.txt"], "w") as f:
        for qid, docs in run.items():
            for rank, (doc_id, score) in enumerate(sorted_docs(docs), start=1):
                f.write(f"{qid} Q0 {doc_id} {rank} {score} bm25\n")
        f.write("99 Q0 d1 1 1.0 bm25\n")  # unjudged and in no fold: left out, and said so
    with open(paths["scores.tsv"], "w") as f:
        f.write("qid\tdoc_id\tunit\tscore\n")
        for qid, docs in units.items():
            for doc_id, scores in docs.items():
                f.writelines(f"{qid}\t{doc_id}\t{doc_id}_{i}\t{s}\n" for i, s in reversed(list(enumerate(scores))))
    record_unit_scores(paths["scores.tsv"])  # made here, not by score: taken as it is, on purpose
    with open(paths["qrels.txt"], "w") as f:
        f.writelines(f"{qid} 0 {doc_id} {grade}\n" for qid, docs in qrels.items() for doc_id, grade in docs.items())
    paths["folds.json"].write_text(json.dumps(FOLDS))

    out, params_out = tmp_path / "birch.run", tmp_path / "birch.json"
    step_config = tmp_path / "step.yaml"  # settings come from a config layered over the default
    step_config.write_text(f"birch: {{fusion: {{alpha_step: {STEP}, weight_step: {STEP}}}}}\n")
    assert fuse.main(["birch", "--section", "birch", "--run", str(paths["run.txt"]), "--scores", str(paths["scores.tsv"]),
                      "--qrels", str(paths["qrels.txt"]), "--folds", str(paths["folds.json"]), "--top-n", "2",
                      "--config", str(step_config), "--out", str(out), "--params-out", str(params_out)]) == 0
    assert "1 unjudged queries of" in capsys.readouterr().err and "99" not in read_run(out)
    params = json.loads(params_out.read_text())
    assert params["short_docs"] == "birch" and "add 0" in params["short_docs_handling"]
    assert [f["fold"] for f in params["folds"]] == list(FOLDS)
    overall = ir_measures_ap(read_run(out), qrels)
    assert params["test_ap"] == pytest.approx(sum(overall.values()) / len(overall), abs=1e-9)

    agg_out = tmp_path / "firstp.run"
    assert fuse.main(["aggregate", "--method", "firstp", "--run", str(paths["run.txt"]),
                      "--scores", str(paths["scores.tsv"]), "--out", str(agg_out)]) == 0
    # Units were written last-first: FirstP must still take unit 0.
    written = read_run(agg_out)
    for qid, docs in aggregate(run, units, "firstp").items():
        assert [d for d, _ in sorted_docs(written[qid])] == [d for d, _ in sorted_docs(docs)]


def test_bad_inputs_name_the_file_and_line(tmp_path):
    bad = tmp_path / "scores.tsv"
    bad.write_text("1\td1\t0\t0.5\n1\td1\t1\tnot-a-number\n")
    with pytest.raises(FormatError, match=r"scores.tsv:2: score must be a number"):
        record_unit_scores(bad)  # read before it is recorded: a bad file gets no sidecar
    assert not meta_path(bad).exists()
    bad.write_text("1\td1\t0\t0.5\n1\td1\t0\t0.7\n")
    with pytest.raises(FormatError, match=r"scores.tsv:2: unit '0' of document d1 appears twice"):
        record_unit_scores(bad)
    with pytest.raises(ValueError, match="not in the first-stage run"):
        fusion.birch_candidates({"1": {"d1": 1.0}}, {"1": {"d9": [0.5]}}, 1)
    folds = tmp_path / "folds.json"
    folds.write_text(json.dumps({"a": ["1", "2"], "b": ["2"]}))
    with pytest.raises(FormatError, match="query 2 is a test query of folds a and b"):
        read_folds(folds)


def test_without_unit_scores_cross_validation_keeps_birchs_robust04_run(birch_data):
    folder = birch_data / "robust04-birch"
    run, qrels = read_run(folder / "rob04_yang19_rm3.run.gz"), read_qrels(folder / "qrels.robust2004.txt.gz")
    candidates = fusion.birch_candidates(run, {}, 3)
    joined, choices = fusion.cross_validate(run, candidates, qrels, load_collection("robust04").folds(),
                                          3, STEP, STEP, show_progress=False)
    assert joined == run
    assert all((c.a, c.w2, c.w3) == (1.0, 0.0, 0.0) for c in choices)  # every point ties: the largest a wins
    first_stage = ir_measures_ap(run, qrels)
    weighted = sum(c.test_ap * c.test_queries for c in choices) / sum(c.test_queries for c in choices)
    assert weighted == pytest.approx(sum(first_stage.values()) / len(first_stage), abs=1e-12)
