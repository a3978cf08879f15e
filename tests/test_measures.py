"""Named measures (reranker.measures): the Radboud thesis' nDCG@20 against its own recipe."""

from __future__ import annotations

import math
import random

import ir_datasets
import ir_measures
import pytest

from reranker import measures
from reranker.corpora.load import load_collection
from reranker.experiments import load_config
from reranker.formats.errors import InputError
from reranker.formats.qrels import write_qrels
from reranker.formats.runs import write_run
from reranker.measures.radboud import THESIS_GAINS
from reranker.stages.evaluate import evaluate, main, parse_measures


@pytest.fixture(scope="module")
def config(birch_data):
    return load_config()


def test_the_thesis_measure_by_hand():
    qrels = {"q": {"a": 0, "b": 1, "c": 4}}  # a: the -1 document (gain 0 in ours, a complete answer in the thesis')
    run = {"q": {"a": 3.0, "b": 2.0, "x": 1.0}}
    result = evaluate(run, qrels, ["nDCG@20", "RadboudNDCG@20"])
    ideal = 4 + 4 / math.log2(3) + 1 / 2  # gains 4 (a), 4 (c), 1 (b) in the best order
    assert result.aggregate["RadboudNDCG@20"] == pytest.approx((4 + 1 / math.log2(3)) / ideal)
    assert result.aggregate["nDCG@20"] == pytest.approx((1 / math.log2(3)) / (4 + 1 / math.log2(3)))


def test_the_thesis_gains_compose_with_cranfields_grades(config):
    """collections.yaml maps raw codes to our gains; the measure maps our gains to the thesis': together
    they must give the thesis' gain for every raw code (5 - code, -1 counted as 1)."""
    grades = load_collection("cranfield", config).grades
    gains = parse_measures(["RadboudNDCG@20"])[0].params["gains"]
    assert {code: gains.get(gain, gain) for code, gain in grades.items()} == THESIS_GAINS


def test_evaluate_takes_the_thesis_measure_by_name_on_a_cranfield_run(config, tmp_path, capsys):
    """The thesis' recipe, independently: raw cranqrel codes, -1 -> 1, gain 5 - code, plain nDCG@20."""
    cranfield = load_collection("cranfield", config)
    rng = random.Random(7)
    run = {}
    for qid, judged in cranfield.qrels().items():
        docs = list(judged) + [str(rng.randint(1, 1400)) for _ in range(10)]
        rng.shuffle(docs)
        run[qid] = {doc: float(len(docs) - i) for i, doc in enumerate(dict.fromkeys(docs))}
    write_run(run, tmp_path / "x.run", tag="random")
    write_qrels(cranfield.qrels(), tmp_path / "qrels.txt")
    assert main(["--run", str(tmp_path / "x.run"), "--qrels", str(tmp_path / "qrels.txt"), "--measures", "RadboudNDCG@20",
                 "--out", str(tmp_path / "eval.json")]) == 0
    printed = float(capsys.readouterr().out.split()[1])
    thesis = {}
    for q in ir_datasets.load("cranfield").qrels_iter():
        thesis.setdefault(q.query_id, {})[q.doc_id] = 5 - (1 if q.relevance == -1 else q.relevance)
    expected = ir_measures.calc_aggregate([ir_measures.nDCG @ 20], thesis, run)[ir_measures.nDCG @ 20]
    assert printed == pytest.approx(expected, abs=5e-5)


def test_unknown_and_duplicate_measures_are_refused():
    with pytest.raises(InputError, match="RadboudNDCG@20"):
        parse_measures(["NotAMeasure@3"])
    with pytest.raises(InputError, match="twice"):
        evaluate({"q": {"a": 1.0}}, {"q": {"a": 1}}, ["nDCG@20", "nDCG(cutoff=20)"])


def test_every_named_measure_has_a_label_and_parses():
    for name, measure in measures.MEASURES.items():
        assert measure.label and parse_measures([name])
