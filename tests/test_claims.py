"""The seed index: each source effect's verdict computed from a run's numbers and the tables' own marks."""

from __future__ import annotations

import glob
import json
from pathlib import Path

import pytest
import yaml

from reranker import claims, notes, significance, tables
from reranker import config as cfg
from reranker.evaluate import evaluate
from tests.test_tables import MEASURES, runs_and_qrels


@pytest.fixture
def run_dir(tmp_path):
    """numbers/main.json made by the tables command: Birch 1S is better than BM25+RM3 on `strong`
    (significantly) and the same run on `flat`."""
    base, better, qrels = runs_and_qrels()
    specs = []
    for group, name, run in (("strong", "BM25+RM3", base), ("strong", "Birch 1S", better),
                             ("flat", "BM25+RM3", base), ("flat", "Birch 1S", base)):
        path = tmp_path / f"{group}-{name}.json"
        path.write_text(json.dumps(evaluate(run, qrels, MEASURES).to_json()))
        specs.append(f"{group}:{name}:{path}")
    folder = tmp_path / "run"
    assert tables.main(["results", "--eval", *specs, "--measures", *MEASURES, "--baseline-row", "BM25+RM3",
                        "--out", str(folder / "tables" / "main"), "--numbers", str(folder / "numbers" / "main.json")]) == 0
    return folder


def seeds_file(tmp_path, claim_list, **entry):
    path = tmp_path / "seeds.yaml"
    path.write_text(yaml.safe_dump({"works": [{"title": "Work", "tables": [
        {"source": "Table 1", "table": "main", "effect": "better", "claims": claim_list, **entry}]}]}))
    return path


def verdict(run_dir, claim):
    return claims.check(claim, {"table": "main"}, run_dir)


def test_the_tables_store_each_tested_cells_marks_and_what_they_test_against(run_dir):
    stored = json.loads((run_dir / "numbers" / "main.json").read_text())["significance"]
    assert stored["references"] == {"†": "BM25+RM3"} and stored["correction"] == "none"
    assert stored["marks"]["strong"]["Birch 1S"]["AP@1000"] == "†"
    assert stored["marks"]["flat"]["Birch 1S"]["AP@1000"] == ""
    assert "BM25+RM3" not in stored["marks"]["strong"]  # the reference is not tested against itself


def test_a_significant_gain_in_some_groups_is_partly(run_dir):
    claim = {"kind": "compare", "rows": "Birch *", "than": "BM25+RM3", "measure": "AP@1000", "expect": "above",
             "significant": True}
    result = verdict(run_dir, claim)
    assert result.word == "partly"
    assert "on strong (significant)" in result.text and "on flat (n.s.)" in result.text
    assert verdict(run_dir, {**claim, "groups": ["strong"]}).word == "yes"
    assert verdict(run_dir, {**claim, "groups": ["flat"]}).word == "no"
    assert verdict(run_dir, {**claim, "expect": "below", "significant": False}).word == "no"


def test_rows_a_smaller_run_lacks_are_not_run_and_a_missing_table_too(run_dir, tmp_path):
    claim = {"kind": "compare", "rows": "Bi-encoder *", "than": "BM25+RM3", "measure": "AP@1000", "expect": "above"}
    assert verdict(run_dir, claim).word == "not run"
    assert claims.check(claim, {"table": "absent"}, run_dir).word == "not run"


def test_significance_against_a_row_the_table_never_tested_is_an_error(run_dir):
    claim = {"kind": "compare", "rows": "BM25+RM3", "than": "Birch 1S", "measure": "AP@1000", "expect": "above",
             "significant": True}
    with pytest.raises(claims.ClaimError, match="tests against BM25\\+RM3"):
        verdict(run_dir, claim)


def test_value_and_observe(run_dir):
    stored = json.loads((run_dir / "numbers" / "main.json").read_text())["numbers"]["strong"]["BM25+RM3"]["AP@1000"]
    claim = {"kind": "value", "group": "strong", "row": "BM25+RM3", "measure": "AP@1000"}
    assert verdict(run_dir, {**claim, "equals": round(stored, 4)}).word == "yes"
    assert verdict(run_dir, {**claim, "equals": round(stored, 4) + 0.01}).word == "no"
    observed = verdict(run_dir, {"kind": "observe", "rows": "Birch*", "measure": "P@20"})
    assert observed.word == "observed" and observed.text.count("Birch 1S") == 2


def test_the_index_command_writes_the_readme_with_every_verdict_and_where_the_source_says_it(run_dir, tmp_path):
    seeds = seeds_file(tmp_path, [{"kind": "compare", "rows": "Birch *", "than": "BM25+RM3", "measure": "AP@1000",
                                   "expect": "above", "significant": True, "cite": "Table 1, p. 3",
                                   "says": "Birch beats BM25+RM3 | significantly"}])
    out = tmp_path / "README.md"
    assert tables.main(["index", "--run-dir", str(run_dir), "--seeds", str(seeds), "--out", str(out),
                        "--command", "make run"]) == 0
    text = out.read_text()
    assert "| Table 1 | `tables/main.{csv,md}` | better | **partly**: AP@1000: Birch 1S" in text
    assert "on strong (significant) [Table 1, p. 3: “Birch beats BM25+RM3 \\| significantly”] |" in text
    assert "Made by `make run`" in text


def test_the_index_of_a_folder_with_no_numbers_is_an_error_not_a_readme_of_gaps(tmp_path, capsys):
    seeds = seeds_file(tmp_path, [{"kind": "observe", "rows": "Birch*", "measure": "P@20", "cite": "p. 1"}])
    out = tmp_path / "README.md"
    assert tables.main(["index", "--run-dir", str(tmp_path / "runs" / "defualt"), "--seeds", str(seeds),
                        "--out", str(out)]) == 2
    assert "defualt: no numbers/ folder" in capsys.readouterr().err and not out.exists()


COMPARE = {"kind": "compare", "rows": "x", "than": "y", "measure": "AP@1000", "expect": "above", "cite": "Table 1"}


@pytest.mark.parametrize("claim, message", [
    ({**COMPARE, "colour": 1}, "unknown keys colour"),
    ({**COMPARE, "expect": "sideways"}, "expect 'sideways'"),
    ({k: v for k, v in COMPARE.items() if k != "than"}, "missing than"),
    ({k: v for k, v in COMPARE.items() if k != "cite"}, "missing cite"),
    ({"kind": "observe", "rows": "x", "measure": "P@20"}, "missing cite"),
    ({**COMPARE, "cite": " "}, "cite must be a non-empty string"),
    ({**COMPARE, "says": 3}, "says must be a non-empty string"),
    ({"kind": "observe", "rows": "x", "measure": "P@20", "cite": "p. 1", "source": {}}, "`source` (the source's cells) is for compare"),
    ({"kind": "guess"}, "kind 'guess'"),
])
def test_a_bad_seed_file_is_one_line_naming_the_entry_and_writes_nothing(run_dir, tmp_path, capsys, claim, message):
    seeds = seeds_file(tmp_path, [claim])
    out = tmp_path / "README.md"
    assert tables.main(["index", "--run-dir", str(run_dir), "--seeds", str(seeds), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tables: error: ") and "works[0].tables[0].claims[0]" in err and message in err
    assert not out.exists()


def test_the_stored_seed_file_is_valid():
    loaded = claims.load_seeds(claims.DEFAULT_SEEDS)
    tables_named = {entry.get("table") for work in loaded["works"] for entry in work["tables"]}
    assert {"birch_main", "radboud_2_1", "ntnu_5_1", "ntnu_5_6"} <= tables_named


def test_the_stored_default_keeps_a_learned_birch_row():
    """What issues 8 and 40 asked of the stored default (results/, from a clean run), so that promoting a worse
    run fails here. Of the fine-tuned checkpoints (the table's provenance names them), one
    - alone (MaxP over sentences) reaches the zero-shot bi-encoder alone on AP on at least 3 of the 4 targets,
    - fused, beats BM25+RM3 on AP significantly with Holm's correction over its own fused rows (1S-3S), as the
      seed index judges a best-of claim, on at least 3 of the 4 targets;
    the classifier alone reaches 0.8x BM25+RM3's AP on Cranfield; and every fine-tuned checkpoint's kept held-out
    loss is clearly below its label prior's (notes.learned: by more than the margin)."""
    results = Path(__file__).resolve().parent.parent / "results"
    document = json.loads((results / "numbers" / "birch_main.json").read_text())
    numbers, fine_tuned = document["numbers"], list(document["provenance"]["checkpoints"])
    zero_shot = "MaxP over sentences, Bi-encoder MiniLM-L6 (zero-shot)"
    alone, fused = {}, {}  # per fine-tuned label, the targets where it holds
    for label in fine_tuned:
        for collection, rows in numbers.items():
            own = rows.get(f"MaxP over sentences, {label}", {}).get("AP@1000")
            if own is not None and own >= rows[zero_shot]["AP@1000"]:
                alone.setdefault(label, set()).add(collection)
            claim = {"kind": "compare", "rows": f"{glob.escape(label)} [123]S", "than": "BM25+RM3", "measure": "AP@1000",
                     "expect": "above", "significant": True, "groups": [collection]}
            verdict = claims.check_compare(claim, document)
            assert "Holm over 3 rows" in verdict.text, verdict.text  # judged from stored p-values, not marks
            if verdict.word == "yes":
                fused.setdefault(label, set()).add(collection)
    assert max(map(len, alone.values()), default=0) >= 3, alone
    assert max(map(len, fused.values()), default=0) >= 3, fused
    cranfield = numbers["cranfield"]
    best_alone = max(cranfield[f"MaxP over sentences, {label}"]["AP@1000"] for label in fine_tuned
                     if f"MaxP over sentences, {label}" in cranfield)
    assert best_alone >= 0.8 * cranfield["BM25+RM3"]["AP@1000"]
    for name, checkpoint in document["provenance"]["checkpoints"].items():
        assert notes.learned(checkpoint["validation"]), name


def test_the_stored_default_keeps_learned_radboud_and_ntnu_rows():
    """What issue 40 asked of the stored default's Radboud and NTNU tables (results/, from a clean run):
    - Radboud: every fold's baseline checkpoint ends at least 15% below its label prior on held-out pairs, the
      baseline is above BM25 on nDCG@20 and on the thesis' measure (pooled over the folds), and every variant
      starts as the baseline does (the configuration carries the base's trained head into every row);
    - NTNU: BERT-Max or BERT-Mean at or above BM25 on MRR@10, each row keeping its best held-out step."""
    results = Path(__file__).resolve().parent.parent / "results"
    config = cfg.load_config()
    radboud = json.loads((results / "numbers" / "radboud_2_1.json").read_text())
    (group, rows), = radboud["numbers"].items()
    folds = radboud["provenance"]["checkpoints"]["BERT baseline"]
    assert len(folds) == 5
    for fold in folds:
        assert fold["validation"]["loss"] <= 0.85 * fold["validation"]["prior_loss"], fold["validation"]
    for measure in ("nDCG@20", "RadboudNDCG@20"):
        assert rows["BERT baseline"][measure] > rows["BM25"][measure], (group, measure)
    assert config["radboud"]["carry_head"]
    ntnu = json.loads((results / "numbers" / "ntnu_5_1.json").read_text())
    (collection, rows), = ntnu["numbers"].items()
    assert max(rows[f"MiniLM-L6, {a}"]["RR@10"] for a in ("MaxP", "MeanP")) >= rows["BM25"]["RR@10"], collection
    assert config["ntnu"]["training"]["select"] == "best"


def holm_document(pvalues: dict | None, group: str = "g") -> dict:
    """Three rows against BM25 on one group: A is best, and alone significant at p 0.03 (its table mark is set)."""
    values = {"BM25": 0.20, "A": 0.25, "B": 0.22, "C": 0.21}
    tests = {"references": {"†": "BM25"}, "correction": "none",
             "marks": {group: {"A": {"AP@1000": "†"}, "B": {"AP@1000": ""}, "C": {"AP@1000": ""}}}}
    if pvalues is not None:
        tests["pvalues"] = {group: {row: {"AP@1000": {"†": p}} for row, p in pvalues.items()}}
    return {"numbers": {group: {row: {"AP@1000": v} for row, v in values.items()}}, "significance": tests}


BEST_OF_3 = {"kind": "compare", "rows": ["A", "B", "C"], "than": "BM25", "measure": "AP@1000", "expect": "above",
             "significant": True}


def test_holm_over_the_rows_a_claim_takes_the_best_of_changes_the_verdict():
    raw = {"A": 0.03, "B": 0.40, "C": 0.60}
    alone = claims.check_compare({**BEST_OF_3, "rows": "A"}, holm_document(raw))
    assert alone.word == "yes" and alone.text == "AP@1000: A 0.2500 vs BM25 0.2000 (significant)"
    best = claims.check_compare(BEST_OF_3, holm_document(raw))  # Holm: 3 x 0.03 = 0.09
    assert best.word == "no" and best.text == "AP@1000: A 0.2500 vs BM25 0.2000 (n.s., Holm over 3 rows)"
    assert claims.check_compare({**BEST_OF_3, "significant": False}, holm_document(raw)).word == "yes"
    # 0.01 x 3 = 0.03: still significant; a row with no p-value is not in the family
    held = claims.check_compare(BEST_OF_3, holm_document({"A": 0.01, "B": 0.02, "C": None}))
    assert held.word == "yes" and "(significant, Holm over 2 rows)" in held.text
    assert claims.check_compare(BEST_OF_3, holm_document({"A": 0.03, "B": 0.04})).word == "no"  # 2 x 0.03 = 0.06


def test_holm_is_per_group():
    document = holm_document({"A": 0.03, "B": 0.40, "C": 0.60})
    other = holm_document({"A": 0.001, "B": 0.40, "C": 0.60}, group="h")
    for key in ("numbers",):
        document[key].update(other[key])
    for key in ("marks", "pvalues"):
        document["significance"][key].update(other["significance"][key])
    result = claims.check_compare(BEST_OF_3, document)
    assert result.word == "partly"
    assert "on g (n.s., Holm over 3 rows)" in result.text and "on h (significant, Holm over 3 rows)" in result.text


def test_a_best_of_several_claim_on_numbers_without_p_values_leaves_significance_not_judged():
    result = claims.check_compare(BEST_OF_3, holm_document(None))
    assert result.text == "AP@1000: A 0.2500 vs BM25 0.2000, significance not judged (no p-values stored)"
    assert result.word == "not judged" and result.render().startswith("not judged: ")  # A's uncorrected mark is not read
    assert claims.check_compare({**BEST_OF_3, "expect": "below"}, holm_document(None)).word == "no"  # the direction decides
    assert claims.check_compare({**BEST_OF_3, "significant": False}, holm_document(None)).word == "yes"
    assert claims.check_compare({**BEST_OF_3, "rows": "A"}, holm_document(None)).text.endswith("(significant)")


SOURCE_NUMBERS = {
    "sources": {"birch": {"work": "Akkalyoncu Yilmaz et al., EMNLP 2019"}},
    "tables": {"main": {"source": "birch", "table": "Table 1", "cells": [
        {"row": "BM25+RM3", "source_row": "BM25+RM3", "column": "AP", "group": "Robust04", "value": 0.2903, "where": "Table 1"},
        {"row": None, "source_row": "1S: BERT(MB)", "column": "AP", "group": "Robust04", "value": 0.3408, "where": "Table 1"},
        {"row": None, "source_row": "2S: BERT(MB)", "column": "AP", "group": "Robust04", "value": 0.3435, "where": "Table 1"},
        {"row": None, "source_row": "1S: BERT(MB)", "column": "AP", "group": "Core17", "value": 0.2758, "where": "Table 1"},
    ]}},
}
SOURCE_CLAIM = {"kind": "compare", "rows": "Birch *", "than": "BM25+RM3", "measure": "AP@1000", "expect": "above",
                "cite": "Table 1", "source": {"rows": ["1S: BERT(MB)", "2S: BERT(MB)"], "than": "BM25+RM3", "column": "AP",
                                              "group": "Robust04"}}


def test_the_index_shows_er_and_dri_against_the_sources_numbers_per_group(run_dir, tmp_path):
    (tmp_path / "source_numbers.yaml").write_text(yaml.safe_dump(SOURCE_NUMBERS))
    seeds = claims.load_seeds(seeds_file(tmp_path, [SOURCE_CLAIM]))
    assert seeds["source_numbers"]["tables"]["main"]["table"] == "Table 1"
    ours = json.loads((run_dir / "numbers" / "main.json").read_text())["numbers"]
    text = claims.index(seeds, run_dir)
    parts = []
    for group in ours:  # by hand: ER = our gain / the source's best gain, ΔRI = RI_source - RI_ours
        base, adv = ours[group]["BM25+RM3"]["AP@1000"], ours[group]["Birch 1S"]["AP@1000"]
        er, dri = (adv - base) / (0.3435 - 0.2903), (0.3435 - 0.2903) / 0.2903 - (adv - base) / base
        parts.append(f"ER {er:.2f}, ΔRI {dri:.3f} on {group}")
    assert "; ".join(parts) + " (source: 0.2903 -> 0.3435) [Table 1]" in text
    assert "ER 0.00, ΔRI 0.183 on flat" in parts[0]  # flat: the same run as the baseline


@pytest.mark.parametrize("source, message", [
    ({**SOURCE_CLAIM["source"], "than": "BM25"}, "claims[0].source: tables.main: no cell with source_row 'BM25', column 'AP', "
                                                 "group 'Robust04' (in column 'AP': '1S: BERT(MB)' at None (Core17);"),
    ({k: v for k, v in SOURCE_CLAIM["source"].items() if k != "group"}, "tables.main: 2 cells with source_row '1S: BERT(MB)'"),
    ({**SOURCE_CLAIM["source"], "column": "nDCG"}, "no cell with source_row"),
    ({**SOURCE_CLAIM["source"], "colour": 1}, "claims[0].source: unknown keys colour"),
    ({**SOURCE_CLAIM["source"], "rows": []}, "claims[0].source: rows: expected a source row or a list"),
])
def test_a_source_reference_to_a_missing_cell_is_refused_naming_claim_and_cell(run_dir, tmp_path, capsys, source, message):
    (tmp_path / "source_numbers.yaml").write_text(yaml.safe_dump(SOURCE_NUMBERS))
    seeds = seeds_file(tmp_path, [{**SOURCE_CLAIM, "source": source}])
    out = tmp_path / "README.md"
    assert tables.main(["index", "--run-dir", str(run_dir), "--seeds", str(seeds), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tables: error: ") and "works[0].tables[0].claims[0].source" in err and message in err
    assert "source_numbers.yaml" in err and err.count("\n") == 1 and not out.exists()


def test_a_source_reference_without_a_source_numbers_file_is_refused(tmp_path):
    with pytest.raises(claims.ClaimError, match=r"claims\[0\].source: names source cells, but .*source_numbers.yaml does not exist"):
        claims.load_seeds(seeds_file(tmp_path, [SOURCE_CLAIM]))


def test_numbers_from_the_tables_command_carry_the_raw_p_values_holm_reads(tmp_path):
    base, better, qrels = runs_and_qrels()
    specs = []
    for name, run in (("BM25+RM3", base), ("Birch 1S", better), ("Birch 2S", base)):
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(evaluate(run, qrels, MEASURES).to_json()))
        specs.append(f"strong:{name}:{path}")
    numbers = tmp_path / "main.json"
    assert tables.main(["results", "--eval", *specs, "--measures", *MEASURES, "--baseline-row", "BM25+RM3",
                        "--out", str(tmp_path / "main"), "--numbers", str(numbers)]) == 0
    document = json.loads(numbers.read_text())
    raw = [document["significance"]["pvalues"]["strong"][row]["AP@1000"]["†"] for row in ("Birch 1S", "Birch 2S")]
    claim = {"kind": "compare", "rows": "Birch *", "than": "BM25+RM3", "measure": "AP@1000", "expect": "above",
             "significant": True}
    result = claims.check_compare(claim, document)
    held = significance.holm(raw)[0] < 0.05
    assert result.word == ("yes" if held else "no")
    assert result.text.endswith(f"({'significant' if held else 'n.s.'}, Holm over 2 rows)")


def test_a_claim_on_cells_marked_pending_is_pending_not_a_verdict(run_dir):
    """Numbers stored before a fix (Cranfield's grades) are rendered 'pending'; a claim on them says so."""
    claim = {"kind": "compare", "rows": "Birch *", "than": "BM25+RM3", "measure": "nDCG@20", "expect": "above", "cite": "x"}
    assert verdict(run_dir, claim).word in ("yes", "partly", "no")
    assert tables.main(["rerender", "--numbers", str(run_dir / "numbers" / "main.json"), "--out", str(run_dir / "tables" / "main"),
                        "--pending", "strong:*:nDCG@20", "--pending-why", "grades were upside down"]) == 0
    result = verdict(run_dir, claim)
    assert result.word == "pending" and "grades were upside down" in result.text
    assert verdict(run_dir, {**claim, "measure": "AP@1000"}).word in ("yes", "partly")  # other measures stand
