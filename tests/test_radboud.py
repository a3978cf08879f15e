"""The Radboud thesis' training strategies: enrichment, objectives, pre-training data, per-fold queries, config."""

import json
import math

import pytest
import torch

from reranker.experiments import load_config
from reranker.experiments.radboud import radboud_checkpoint
from reranker.formats.errors import FormatError
from reranker.neural import objectives
from reranker.neural.training import pretraining
from reranker.neural.training.pairs import Examples, candidate_pool
from reranker.neural.training.settings import DEFAULT_TRAINING, fold_training_queries
from reranker.neural.training.tasks import objective_for
from reranker.workflow.experiment import Experiment


def test_candidate_pool_enrich_modes():
    ranked, relevant = ["a", "b", "c", "d"], {"b", "x", "y"}
    assert candidate_pool(ranked, relevant, "none") == ["a", "b", "c", "d"]
    assert candidate_pool(ranked, relevant, "add") == ["a", "b", "c", "d", "x", "y"]
    # swap: the two missed relevant documents replace the two lowest-ranked non-relevant candidates
    assert candidate_pool(ranked, relevant, "swap") == ["a", "b", "x", "y"]
    with pytest.raises(ValueError, match="enrich"):
        candidate_pool(ranked, relevant, "double")


def test_objectives_losses_and_priors():
    levels, labels = [0, 0, 0, 4, 2], [0, 0, 0, 1, 1]
    for name, extra in [("binary", {}), ("multi_label", {"class_weights": (1, 50, 50, 20, 50)}),
                        ("multi_class_multi_label", {"loss_weights": (0.8, 0.2)}),
                        ("regression", {"grade_values": (0, 1, 2, 3, 4)})]:
        objective = objectives.Objective(name, 5, 1, **extra)
        targets = objective.targets(levels, labels)
        logits = torch.zeros(len(levels), objective.outputs, requires_grad=True)
        loss = objective.loss(logits, targets)
        loss.backward()
        assert math.isfinite(float(loss.detach())) and logits.grad.abs().sum() > 0
        assert math.isfinite(objective.prior_loss(targets, targets))
        assert objective.score(logits.detach()).shape == (len(levels),)
    with pytest.raises(ValueError, match="grade_values"):
        objectives.Objective("regression", 5, 1)


def test_argmax_score_orders_by_level_then_expected_level():
    logits = torch.tensor([[5.0, 0, 0], [0, 0, 2.0], [0, 0, 5.0], [0, 3.0, 0]])
    order = objectives.argmax_score(logits).argsort(descending=True).tolist()
    assert order == [2, 1, 3, 0]
    # Within level 0, the document with more weight on the relevant levels ranks first, not the one
    # surest to be irrelevant.
    sure_irrelevant, maybe_relevant = torch.tensor([[6.0, 0, 0]]), torch.tensor([[2.0, 1.0, 1.5]])
    assert objectives.argmax_score(maybe_relevant) > objectives.argmax_score(sure_irrelevant)
    assert ((objectives.argmax_score(torch.randn(200, 5) * 4) % 1) < 0.8).all()  # never reaches the next level


def test_a_grade_outside_the_mapping_names_the_qrels_file():
    example = Examples([], [], {}, {}, {"levels": [0, 1, 2, 3, 4, 6], "files": {"qrels": "odd/qrels.txt"}})
    config = DEFAULT_TRAINING.__class__(objective="regression", grade_values=(0, 1, 2, 3, 4))
    with pytest.raises(ValueError, match="odd/qrels.txt: grade 6 is outside the mapping grade_values"):
        objective_for(config, [example], relevant_index=1)


def test_fold_queries_not_in_the_collection_name_the_folds_file(tmp_path):
    topics = tmp_path / "topics.tsv"
    topics.write_text("1\tone\n2\ttwo\n3\tthree\n4\tfour\n")
    folds = tmp_path / "folds.json"
    folds.write_text(json.dumps({"1": ["1", "2"], "2": ["3", "4"]}))
    assert fold_training_queries(folds, "1", topics) == {"3", "4"}
    folds.write_text(json.dumps({"1": ["1", "2"], "2": ["3", "99"]}))
    with pytest.raises(FormatError, match=r"folds.json.*not in the collection's topics.*99"):
        fold_training_queries(folds, "1", topics)


class WordTokenizer:
    """Enough of a tokenizer for masking: ids per word, [CLS]=1 [SEP]=2 [MASK]=3."""

    all_special_ids = [0, 1, 2, 3]
    mask_token_id = 3
    vocab_size = 1000

    def __call__(self, texts, truncation=True, max_length=512):
        return {"input_ids": [[1] + [10 + len(w) for w in t.split()][:max_length - 2] + [2] for t in texts]}


@pytest.mark.parametrize("consecutive", [False, True])
def test_masking_share_and_labels(consecutive):
    text = " ".join(f"w{i}" for i in range(100))
    masked = pretraining.mask_tokens(WordTokenizer(), [text], 128, 0.15, consecutive, seed=1)
    labels = masked.labels[0]
    chosen = [i for i, label in enumerate(labels) if label != pretraining.IGNORE]
    assert len(chosen) == 15 and 0 not in chosen and len(labels) - 1 not in chosen
    if consecutive:  # runs of SPAN tokens
        runs = sum(1 for i in chosen if i - 1 not in chosen)
        assert runs <= math.ceil(15 / pretraining.SPAN) + 1
    again = pretraining.mask_tokens(WordTokenizer(), [text], 128, 0.15, consecutive, seed=1)
    assert again == masked


@pytest.mark.parametrize("construction", pretraining.NSP_PAIRS)
def test_nsp_pairs(construction):
    docs = {"d1": ("Wings", "Lift rises. Drag falls. Flow separates."), "d2": ("Heat", "Plates warm. Gas cools.")}
    pairs = pretraining.nsp_pairs(docs, construction, seed=3)
    assert pairs and {p.label for p in pairs} <= {0, 1}
    sentences = {d: pretraining.sentences(text) for d, (_, text) in docs.items()}
    for pair in pairs:
        if pair.label and construction in ("random_sentence", "all_sentences"):
            own = sentences[pair.doc_id]
            assert own.index(pair.second) == own.index(pair.first) + 1
        if pair.label and construction.startswith("title"):
            assert pair.first == docs[pair.doc_id][0] and pair.second in sentences[pair.doc_id]
        if not pair.label:
            assert pair.second not in sentences[pair.doc_id]


def test_radboud_section_expands_into_per_fold_checkpoints():
    config = load_config()
    section = config["radboud"]
    names = [radboud_checkpoint(v, 1, f) for v in section["variants"] for f in section["folds"]]
    assert set(names) <= set(config["checkpoints"])
    entry = config["checkpoints"][radboud_checkpoint("regression-log", 1, "3")]
    assert entry["train_fold"] == "3" and entry["train_on"] == [section["collection"]]
    assert entry["training"]["objective"] == "regression" and entry["training"]["enrich"] == "none"
    assert config["checkpoints"][radboud_checkpoint("mlm", 1, "1")]["base"] == "radboud-pretrain-mlm"
    experiment = Experiment(config)
    assert experiment.plugins["radboud"].baseline_row("radboud_2_1") == "BERT baseline"
    assert [r for _, v, r in experiment.plugins["radboud"].rows("radboud_3_2") if v == "multi-label"][0] == "argmax"
    # Its many small jobs run with the section's threads each; Birch's keep the global setting.
    assert experiment.job_threads(radboud_checkpoint("baseline", 1, "2")) == section["threads"]
    assert experiment.job_threads("radboud-pretrain-mlm") == section["threads"]
    assert experiment.job_threads("scifact") == config["threads"]


def test_carry_head_starts_every_variant_from_the_bases_head_and_no_pretraining(tmp_path):
    layer = tmp_path / "carry.yaml"
    layer.write_text("radboud: {carry_head: true}\n")
    config = load_config([layer])
    section = config["radboud"]
    for variant in section["variants"]:
        # every variant but the row that measures what carrying does, and MLM transfer's (a new head on the moved encoder, as the thesis)
        expected = None if variant in ("multi-label-fresh", "mlm", "mlm-consecutive") else section["base"]
        assert config["checkpoints"][radboud_checkpoint(variant, 1, "2")]["training"]["head_from"] == expected, variant
    assert not any(config["checkpoints"]["radboud-pretrain-" + name]["training"].get("head_from")
                   for name in section["pretraining"])
    assert "starts from the base's trained two-way head" in Experiment(config).plugins["radboud"].caption("radboud_3_4")
    fresh = tmp_path / "fresh.yaml"  # the default carries it (workflow/config/config.yaml); without, no caption says so
    fresh.write_text("radboud: {carry_head: false}\n")
    assert "two-way head" not in Experiment(load_config([fresh])).plugins["radboud"].caption("radboud_3_4")


def test_agreement_is_kendalls_tau_per_query_and_its_mean(tmp_path, capsys):
    from reranker.stages import evaluate

    reference = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0}, "q2": {"a": 3.0, "b": 2.0, "c": 1.0}, "q3": {"a": 1.0}}
    same_order = {"q1": {"a": 30.0, "b": 20.0, "c": -5.0}, "q2": {"a": 1.0, "b": 2.0, "c": 3.0}, "q3": {"a": 2.0}}
    result = evaluate.agreement(same_order, reference)
    assert result["per_query"] == {"q1": 1.0, "q2": -1.0} and result["queries"] == 2  # q3: one document
    assert result["kendall_tau"] == 0.0 and result["identical"] == 0.5
    deep = {"q1": {"a": 3.0, "b": 2.0, "c": 1.0, "d": 0.5, "e": 0.4}}  # below the 2 candidates both keep one order
    swapped = {"q1": {"a": 2.0, "b": 3.0, "c": 1.0, "d": 0.5, "e": 0.4}}
    assert evaluate.agreement(swapped, deep, depth=2)["kendall_tau"] == -1.0
    assert evaluate.agreement(swapped, deep)["kendall_tau"] == pytest.approx(0.8)  # the tail pulls it towards 1
    with pytest.raises(FormatError.__mro__[1], match="share no query"):
        evaluate.agreement({"q9": {"a": 1.0, "b": 2.0}}, reference)
    run, ref = tmp_path / "a.run", tmp_path / "b.run"
    for path, data in ((run, same_order), (ref, reference)):
        path.write_text("".join(f"{q} Q0 {d} {i} {s} t\n" for q, docs in data.items()
                                for i, (d, s) in enumerate(sorted(docs.items(), key=lambda x: -x[1]), 1)))
    out = tmp_path / "agreement.json"
    assert evaluate.main(["agreement", "--run", str(run), "--reference", str(ref), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["kendall_tau"] == 0.0 and "identical order: 50.0%" in capsys.readouterr().out


def test_every_ranking_table_shows_each_rows_agreement_with_the_baseline():
    experiment = Experiment(load_config())
    radboud = experiment.plugins["radboud"]
    spec = radboud.spec("radboud_3_1")
    assert [v["row"] for v in spec["value"]] == [label for label, _, _ in radboud.rows("radboud_3_1")]
    assert {v["column"] for v in spec["value"]} == {"τ with the baseline"}
    assert "Multi-label, fresh head, by argmax" in [v["row"] for v in spec["value"]]
    assert spec["value"][0]["path"].endswith("radboud.baseline.g1.relevant.agreement.json")
    assert radboud.baseline_run(1) == "radboud.baseline.g1.relevant"


@pytest.mark.parametrize("profile", [[], ["quick.yaml"]], ids=["default", "quick"])
def test_the_thesis_candidates_are_reranked_by_the_baselines_own_checkpoints_in_table_2_1(profile):
    """The thesis' own BM25 run (cranfield's `runs`) and the baseline's per-fold checkpoints on its candidates
    are the last rows of Table 2.1 at each grid point (the quick profile too: fold 1, its 5 candidates), and nowhere
    else; the split of the gap is one of the plugin's outputs."""
    from pathlib import Path

    from reranker.core.config import CONFIG_DIR

    config = load_config([CONFIG_DIR / name for name in profile])
    radboud = Experiment(config).plugins["radboud"]
    section = config["radboud"]
    rows = [(r["row"], Path(r["path"]).name) for r in radboud.spec("radboud_2_1")["eval"]]
    assert rows[-2:] == [("BM25 (the thesis' run)", "thesis-bm25.json"),
                         ("BERT baseline on the thesis' candidates", "radboud.baseline.g1.relevant.on-thesis-bm25.json")]
    assert rows[:-2] == [(r, p) for r, p in rows if "thesis" not in r]  # the existing rows, unchanged and first
    assert not any("thesis" in r["row"] for r in radboud.spec("radboud_2_3")["eval"])
    assert not any("thesis" in v["row"] for v in radboud.spec("radboud_2_1")["value"])  # no τ over another candidate set
    assert radboud.provided_scores("thesis-bm25", 1) == [
        f"{config['run_dir']}/work/scores/cranfield/radboud-baseline-g1-f{f}/thesis-bm25.k{section['candidates']}.documents.relevant.tsv"
        for f in section["folds"]]
    assert radboud.split_numbers() in radboud.outputs() and radboud.split_table() == "radboud_2_1"
    assert radboud.split_measures() == ["RadboudNDCG@20", "nDCG@20"]
    assert radboud.split_rows() == {"first_stage": "BM25", "reranker": "BERT baseline", "their_first_stage": "BM25 (the thesis' run)",
                                    "on_theirs": "BERT baseline on the thesis' candidates"}
    # what the rows are, in a line under the table: its caption stays the one the stored tables have
    assert "thesis-bm25" not in radboud.caption("radboud_2_1") and not radboud.spec("radboud_2_3")["note"]
    [note] = radboud.spec("radboud_2_1")["note"]
    assert f"per-fold checkpoints (no new training) rerank the top {section['candidates']} of BM25 (the thesis' run)" in note["text"]
    assert Path(config["collections"]["cranfield"]["runs"]["thesis-bm25"]["file"]).name == "bm25.top100.run.gz"


def test_provided_candidates_name_a_run_of_the_collection_and_a_table_of_the_baseline(tmp_path):
    from reranker.core.config import ConfigError

    layer = tmp_path / "layer.yaml"
    layer.write_text("radboud: {provided_candidates: {nobody-bm25: {label: x, tables: [radboud_2_1]}}}\n")
    with pytest.raises(ConfigError, match=r"radboud/provided_candidates/nobody-bm25: cranfield has no run 'nobody-bm25' "
                                          r"\(its `runs` in collections.yaml: thesis-bm25\)"):
        load_config([layer])
    layer.write_text("radboud: {provided_candidates: {thesis-bm25: {label: x, tables: [radboud_2_2]}}}\n")
    with pytest.raises(ConfigError, match="radboud/provided_candidates/thesis-bm25/tables: 'radboud_2_2' has no baseline row"):
        load_config([layer])
    layer.write_text("collections: {cranfield: {runs: {bm25: {file: x.run, run_model: bm25, label: mine}}}}\n")
    with pytest.raises(ConfigError, match=r"collections/cranfield/runs/bm25: the name of a run the suite makes itself"):
        load_config([layer])
    layer.write_text("radboud: {provided_candidates: {thesis-bm25: null}}\n")  # an overlay drops it: no rows, no split
    radboud = Experiment(load_config([layer])).plugins["radboud"]
    assert radboud.split_table() is None and not any("split" in path for path in radboud.outputs())
    assert not any("thesis" in r["row"] for r in radboud.spec("radboud_2_1")["eval"])


def test_a_missing_provided_run_is_named_with_where_it_goes(tmp_path, monkeypatch):
    from reranker.corpora.load import load_collection

    monkeypatch.setenv("BIRCH_DATA", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=rf"cranfield needs {tmp_path}/radboud-thesis/bm25.top100.run.gz "
                                                r"\(thesis-bm25, the thesis' run\); put it there or set BIRCH_DATA to the "
                                                r"folder that holds radboud-thesis/"):
        load_collection("cranfield", load_config()).check_run("thesis-bm25")


def test_a_provided_run_is_copied_line_for_line_with_its_scores_exact(tmp_path):
    """`retrieve provided` writes what it read (gzipped or not): the same scores to the last digit, so that the copy
    ranks and evaluates as the provided file does, ties and all."""
    import gzip
    import shutil
    from pathlib import Path

    from reranker.stages import retrieve

    files = Path(__file__).parent / "bad_inputs" / "files"
    for name in ("topics.tsv", "qrels.txt", "docs.jsonl"):
        shutil.copy(files / name, tmp_path / name)
    text = "1 Q0 d1 1 22.556957361024285 thesis-bm25\n1 Q0 d2 2 22.556957361024285 thesis-bm25\n2 Q0 d3 1 1e-05 thesis-bm25\n"
    with gzip.open(tmp_path / "theirs.run.gz", "wt") as f:
        f.write(text)
    out = tmp_path / "copied.run"
    assert retrieve.main(["provided", "--run", str(tmp_path / "theirs.run.gz"), "--topics", str(tmp_path / "topics.tsv"),
                          "--qrels", str(tmp_path / "qrels.txt"), "--docs", str(tmp_path / "docs.jsonl"), "--out", str(out)]) == 0
    assert out.read_text() == text
