"""The sources' own numbers (source_numbers.yaml) and the reproduction measures ER and ΔRI (Breuer et al., SIGIR 2020)."""

from __future__ import annotations

import json
import os
import random
import re
from pathlib import Path

import pytest
import yaml
from repro_eval.measure.overall_effects import DRI, ER

from reranker.reproduction import effects as reproduction
from reranker.reproduction.effects import SourceNumbersError, cells_beside, delta_ri, effect_ratio, load_source_numbers, source_cell

NUMBERS = {
    "sources": {"radboud": {"work": "Verbrugge 2021, MSc thesis", "where": "002_thesis.txt"}},
    "tables": {
        "radboud_2_1": {
            "source": "radboud", "table": "Table 2.1", "at": "lr 3e-5, 1 epoch",
            "cells": [
                {"row": "BM25", "source_row": "BM25@100", "column": "NDCG@20", "value": 0.4731, "where": "line 270"},
                {"row": "BERT baseline", "source_row": "BERT", "column": "NDCG@20", "value": 0.5439, "where": "line 279"},
                {"row": None, "source_row": "BERT", "column": "NDCG@20", "at": "lr 2e-5, 1 epoch", "value": 0.5486,
                 "where": "line 280"},
            ],
        },
    },
}


def write(tmp_path, numbers=NUMBERS):
    path = tmp_path / "source_numbers.yaml"
    path.write_text(yaml.safe_dump(numbers, allow_unicode=True))
    return path


def paper_er(orig_base, orig_adv, rep_base, rep_adv):
    """The paper's definition over per-topic scores: mean improvement reproduced / mean improvement original."""
    mean = lambda xs: sum(xs) / len(xs)
    return mean([a - b for a, b in zip(rep_adv, rep_base)]) / mean([a - b for a, b in zip(orig_adv, orig_base)])


def paper_dri(orig_base, orig_adv, rep_base, rep_adv):
    """ΔRI = RI_orig - RI_rep, RI = (mean advanced - mean baseline) / mean baseline."""
    mean = lambda xs: sum(xs) / len(xs)
    ri = lambda base, adv: (mean(adv) - mean(base)) / mean(base)
    return ri(orig_base, orig_adv) - ri(rep_base, rep_adv)


def test_er_and_dri_of_means_by_hand():
    # source 0.5439 -> 0.5486 (+0.0047), ours 0.40 -> 0.42 (+0.02)
    assert effect_ratio(0.5439, 0.5486, 0.40, 0.42) == pytest.approx(0.02 / 0.0047)
    assert delta_ri(0.5439, 0.5486, 0.40, 0.42) == pytest.approx(0.0047 / 0.5439 - 0.05)
    assert effect_ratio(0.5, 0.6, 0.5, 0.6) == pytest.approx(1.0) and delta_ri(0.5, 0.6, 0.5, 0.6) == pytest.approx(0.0)
    assert effect_ratio(0.5, 0.6, 0.5, 0.45) == pytest.approx(-0.5)  # the effect turned round
    assert effect_ratio(0.5, 0.5, 0.4, 0.42) is None and delta_ri(0.0, 0.1, 0.4, 0.42) is None  # undefined, not inf


def test_means_give_repro_evals_values_for_per_topic_scores():
    """ER's numerator is the mean of per-topic differences, which is the difference of the means: the source's
    means as one topic give what repro-eval gives for the per-topic scores, and the paper's definitions."""
    rng = random.Random(3)
    runs = {}
    for side in ("orig", "rep"):
        base = [rng.random() * 0.5 for _ in range(25)]
        runs[side] = (base, [b + rng.uniform(-0.05, 0.2) for b in base])
    topics = lambda scores: {f"q{i}": {"ndcg_cut_20": s} for i, s in enumerate(scores)}
    args = [topics(runs["orig"][1]), topics(runs["orig"][0]), topics(runs["rep"][1]), topics(runs["rep"][0])]
    per_topic_er, per_topic_dri = ER(*args)["ndcg_cut_20"], DRI(*args)["ndcg_cut_20"]
    means = [sum(s) / len(s) for s in (*runs["orig"], *runs["rep"])]
    assert effect_ratio(*means) == pytest.approx(per_topic_er, rel=1e-12)
    assert delta_ri(*means) == pytest.approx(per_topic_dri, rel=1e-12)
    assert per_topic_er == pytest.approx(paper_er(*runs["orig"], *runs["rep"]))
    assert per_topic_dri == pytest.approx(paper_dri(*runs["orig"], *runs["rep"]))


def test_describe_shows_er_and_dri_per_group_and_the_sources_numbers():
    one = reproduction.describe((0.5439, 0.5486), {"cranfield": (0.40, 0.42)})
    assert one == f"ER {0.02 / 0.0047:.2f}, ΔRI {0.0047 / 0.5439 - 0.05:.3f} (source: 0.5439 -> 0.5486)"
    two = reproduction.describe((0.5, 0.6), {"a": (0.5, 0.6), "b": (0.5, 0.5)})
    assert two == "ER 1.00, ΔRI 0.000 on a; ER 0.00, ΔRI 0.200 on b (source: 0.5000 -> 0.6000)"
    assert reproduction.describe((0.5, 0.5), {"a": (0.5, 0.6)}).startswith("ER undefined, ΔRI -0.200")


def test_source_cells_resolve_the_tables_setting_and_refuse_ambiguity(tmp_path):
    numbers = load_source_numbers(write(tmp_path))
    assert source_cell(numbers, "radboud_2_1", "BM25@100", "NDCG@20") == 0.4731
    assert source_cell(numbers, "radboud_2_1", "BERT", "NDCG@20", at="lr 3e-5, 1 epoch") == 0.5439  # the table's at
    assert source_cell(numbers, "radboud_2_1", "BERT", "NDCG@20") == 0.5439  # by default: the table's at, beside ours
    assert source_cell(numbers, "radboud_2_1", "BERT", "NDCG@20", at="lr 2e-5, 1 epoch") == 0.5486
    beside = cells_beside(numbers, "radboud_2_1")
    assert [(c["row"], c["value"], c["at"], c["source_table"]) for c in beside] == [
        ("BM25", 0.4731, "lr 3e-5, 1 epoch", "Table 2.1"), ("BERT baseline", 0.5439, "lr 3e-5, 1 epoch", "Table 2.1")]
    del numbers["tables"]["radboud_2_1"]["at"]  # no setting beside ours: two cells, so the reference must name one
    with pytest.raises(SourceNumbersError, match=r"tables.radboud_2_1: 2 cells with source_row 'BERT'.*name `at`"):
        source_cell(numbers, "radboud_2_1", "BERT", "NDCG@20")
    assert source_cell(numbers, "radboud_2_1", "BERT", "NDCG@20", at="lr 2e-5, 1 epoch") == 0.5486
    with pytest.raises(SourceNumbersError, match=r"no cell with source_row 'BM25', column 'NDCG@20' \(in column 'NDCG@20': 'BERT'"):
        source_cell(numbers, "radboud_2_1", "BM25", "NDCG@20")
    with pytest.raises(SourceNumbersError, match="no table 'radboud_9_9'"):
        source_cell(numbers, "radboud_9_9", "BM25@100", "NDCG@20")


def _cell(**change):
    cell = {"row": "BM25", "source_row": "BM25@100", "column": "NDCG@20", "value": 0.4731, "where": "line 270", **change}
    return {k: v for k, v in cell.items() if v is not ...}


@pytest.mark.parametrize("table, message", [
    ({"source": "radboud", "table": "T", "cells": [_cell(colour=1)]}, "tables.t.cells[0]: unknown keys colour"),
    ({"source": "radboud", "table": "T", "cells": [_cell(where=...)]}, "tables.t.cells[0]: missing where"),
    ({"source": "radboud", "table": "T", "cells": [_cell(value="0.47")]}, "tables.t.cells[0].value: expected a finite number"),
    ({"source": "radboud", "table": "T", "cells": [_cell(source_row=100)]}, "tables.t.cells[0].source_row: expected a string"),
    ({"source": "radboud", "table": "T", "cells": [_cell(), _cell(value=0.5)]}, "tables.t.cells[1]: the same source_row"),
    ({"source": "ntnu", "table": "T", "cells": [_cell()]}, "tables.t.source: 'ntnu' is not one of the sources (radboud)"),
    ({"source": "radboud", "table": "T", "cells": []}, "tables.t.cells: expected a non-empty list"),
    ({"source": "radboud", "cells": [_cell()]}, "tables.t: missing table"),
    ({"source": "radboud", "table": "T", "ours": 3e-5, "cells": [_cell()]}, "tables.t.ours: expected a string"),
])
def test_a_bad_source_numbers_file_is_one_line_naming_the_file_and_entry(tmp_path, table, message):
    path = write(tmp_path, {"sources": NUMBERS["sources"], "tables": {"t": table}})
    with pytest.raises(SourceNumbersError) as caught:
        load_source_numbers(path)
    text = str(caught.value)
    assert text.startswith(f"{path}: ") and message in text and "\n" not in text


def test_the_stored_source_numbers_are_valid():
    numbers = load_source_numbers(reproduction.DEFAULT_SOURCE_NUMBERS)
    assert numbers["tables"] and all(table["cells"] for table in numbers["tables"].values())


def test_a_misspelt_table_id_or_row_is_refused_against_the_catalog_beside_the_file(tmp_path):
    """A table id no configuration makes once dropped the source's column from its table without a word. The
    stored file's ids and rows are all in the catalog beside it; a copy with one misspelt is refused, naming it."""
    stored = yaml.safe_load(reproduction.DEFAULT_SOURCE_NUMBERS.read_text(encoding="utf-8"))
    assert (reproduction.DEFAULT_SOURCE_NUMBERS.parent / "table_catalog.json").exists()
    catalog = str(reproduction.DEFAULT_SOURCE_NUMBERS.parent / "table_catalog.json")
    misspelt = {**stored, "tables": {("radboud_2_l" if k == "radboud_2_1" else k): v for k, v in stored["tables"].items()}}
    path = write(tmp_path, misspelt)
    with pytest.raises(SourceNumbersError, match=r"tables\.radboud_2_l: 'radboud_2_l' is a table no configuration makes "
                                                 r"\(.*table_catalog\.json\); near: .*'radboud_2_1'"):
        load_source_numbers(path, catalog)
    # No catalog beside a file of one's own: any id may be one's own table, but one that all but spells the suite's is a slip.
    with pytest.raises(SourceNumbersError, match=r"tables\.radboud_2_l: 'radboud_2_l' is no table of the suite's, near 'radboud_2_"):
        load_source_numbers(path)
    own = {**stored, "tables": {("my_table" if k == "radboud_2_1" else k): v for k, v in stored["tables"].items()}}
    load_source_numbers(write(tmp_path, own))  # an id like none of the suite's: one's own table
    cells = stored["tables"]["ntnu_5_2"]["cells"]
    misspelt = {**stored, "tables": {**stored["tables"], "ntnu_5_2": {**stored["tables"]["ntnu_5_2"],
                                                                      "cells": [{**cells[0], "row": "MiniLM-L6, head-only"}] + cells[1:]}}}
    with pytest.raises(SourceNumbersError, match=r"ntnu_5_2\.cells\[0\]\.row: 'MiniLM-L6, head-only' is a row of no table .*"
                                                 r"near: 'MiniLM-L6, head only'"):
        load_source_numbers(write(tmp_path, misspelt), catalog)


def test_an_er_between_maxp_and_mean_rows_fails_the_like_with_like_test(tmp_path):
    """The NTNU thesis' rows from Table 5.2 on are BERT-Mean; a cell of theirs mapped to a row of ours scored by MaxP
    (the catalog: how every configuration aggregates that row) is refused, naming both, before any ER is computed."""
    stored = yaml.safe_load(reproduction.DEFAULT_SOURCE_NUMBERS.read_text(encoding="utf-8"))
    catalog = str(reproduction.DEFAULT_SOURCE_NUMBERS.parent / "table_catalog.json")
    load_source_numbers(write(tmp_path, stored), catalog)  # as stored: like with like
    table = stored["tables"]["ntnu_5_1"]
    mean = next(i for i, c in enumerate(table["cells"]) if c["source_row"] == "BERT-Mean" and c["column"] == "RR@10")
    table["cells"][mean]["row"] = "MiniLM-L6, MaxP"  # BERT-Mean's cell beside our MaxP row
    table["cells"] = [c for c in table["cells"] if not (c["source_row"] == "BERT-Max" and c["column"] == "RR@10")]
    with pytest.raises(SourceNumbersError, match=r"ntnu_5_1\.cells\[\d+\]\.row: 'BERT-Mean' aggregates passages by meanp, "
                                                 r"our 'MiniLM-L6, MaxP' by maxp in ntnu_5_1: not like with like"):
        load_source_numbers(write(tmp_path, stored), catalog)
    stored = yaml.safe_load(reproduction.DEFAULT_SOURCE_NUMBERS.read_text(encoding="utf-8"))
    stored["tables"]["ntnu_5_2"]["aggregation"] = "maxp"  # a table's own: every mapped cell of it
    with pytest.raises(SourceNumbersError, match=r"ntnu_5_2\.cells\[0\]\.row: .* by maxp, our 'MiniLM-L6 plain, all parameters' by meanp"):
        load_source_numbers(write(tmp_path, stored), catalog)


def test_a_source_pair_takes_the_best_of_rows_and_finds_than_in_the_than_tables_source_table(tmp_path):
    numbers = {"sources": NUMBERS["sources"], "tables": {
        **NUMBERS["tables"],
        "radboud_3_4": {"source": "radboud", "table": "Table 3.4", "at": "lr 3e-5, 1 epoch", "cells": [
            {"row": None, "source_row": "Regression", "column": "NDCG@20", "value": 0.60, "where": "line 400"}]}}}
    numbers = load_source_numbers(write(tmp_path, numbers))
    ref = {"rows": ["BM25@100", "BERT"], "than": "Regression", "column": "NDCG@20", "at": "lr 3e-5, 1 epoch"}
    assert reproduction.source_pair(ref, numbers, ["radboud_2_1", "radboud_3_4"]) == (0.60, 0.5439)
    with pytest.raises(SourceNumbersError, match="tables.radboud_2_1: no cell with source_row 'Regression'"):
        reproduction.check_ref(ref, numbers, ["radboud_2_1"])
    with pytest.raises(SourceNumbersError, match="tables.radboud_3_4: no cell with source_row 'BERT'"):  # rows: the claim's table only
        reproduction.check_ref({**ref, "rows": "BERT"}, numbers, ["radboud_3_4", "radboud_2_1"])


ROOT = Path(__file__).resolve().parent.parent
# The seed texts (shared/seeds/, beside the data: ../shared/data is BIRCH_DATA's usual place)
SEED_DIRS = [ROOT / "shared" / "seeds", ROOT.parent / "shared" / "seeds"] + (
    [Path(os.environ["BIRCH_DATA"]).resolve().parent / "seeds"] if os.environ.get("BIRCH_DATA") else [])
NUMBER = re.compile(r"(?<![\w.])-?\d+(?:[.,]\d+)*")


def _seeds() -> Path:
    found = next((d for d in SEED_DIRS if (d / "README.md").is_file()), None)
    if found is None:
        pytest.skip(f"the seed texts are not at hand (looked in {', '.join(map(str, SEED_DIRS))})")
    return found


def test_every_transcribed_cell_is_printed_on_the_seed_line_it_cites():
    """Each cell whose `where` names a seed text and a line: its value is a number printed on that line (the Radboud
    and NTNU theses, and Birch's predecessor's Robust04 table, birch_arxiv_robust04.md)."""
    seeds = _seeds()
    numbers = load_source_numbers(reproduction.DEFAULT_SOURCE_NUMBERS)
    checked, wrong, elsewhere = 0, [], []
    for table_id, entry in numbers["tables"].items():
        for cell in entry["cells"]:
            name = cell["where"].split(",")[0].strip()
            if not (seeds / name).is_file():
                elsewhere.append(cell["where"])
                continue
            line = int(re.search(r"\bline (\d+)", cell["where"]).group(1))
            text = (seeds / name).read_text(encoding="utf-8").splitlines()[line - 1]
            printed = {float(n.replace(",", "")) for n in NUMBER.findall(text)}
            if not any(abs(v - float(cell["value"])) < 1e-9 for v in printed):
                wrong.append(f"{table_id} {cell['source_row']!r} {cell['column']}: {cell['value']} not on {name} line {line}: {text!r}")
            checked += 1
    assert not wrong, "\n".join(wrong)
    assert checked >= 184 + 32  # the theses' cells and Birch's predecessor's 32
    assert all("not in the thesis text" in where for where in elsewhere), elsewhere  # only the thesis code's BM25


def test_birchs_predecessor_cells_cite_their_row_and_cross_validation():
    """birch_arxiv_robust04.md: each cell's source row is the row its line prints, and its `at` names the table (two-fold
    CV, lines 19-28; five-fold CV, lines 32-41) that line is in."""
    text = (_seeds() / "birch_arxiv_robust04.md").read_text(encoding="utf-8").splitlines()
    entry = load_source_numbers(reproduction.DEFAULT_SOURCE_NUMBERS)["tables"]["birch_main"]
    for cell in entry["cells"]:
        line = int(re.search(r"\bline (\d+)", cell["where"]).group(1))
        printed = [part.strip() for part in text[line - 1].strip().strip("|").split("|")]
        assert printed[0] == cell["source_row"], cell
        assert float(printed[{"AP@1000": 1, "P@20": 2}[cell["column"]]].strip("*")) == cell["value"], cell  # bold dropped
        fold = "2-fold CV" if 19 <= line <= 28 else "5-fold CV" if 32 <= line <= 41 else None
        assert cell["at"] == fold and cell["group"] == "Robust04", cell
        assert ("two-fold" if fold == "2-fold CV" else "five-fold") in cell["where"]


def test_birchs_predecessor_is_transcribed_whole_and_maps_our_rows():
    """32 cells: 2 cross-validations x 8 rows x (AP, P@20). Our BM25+RM3 is 'BM25+RM3 (Anserini)', our fine-tuned
    cross-encoder's nS rows are 'nS: BERT(MB)' (a classifier fine-tuned on other data, as ours); BERT(QA) and the
    earlier papers have no row of ours. Every row named is a row of our stored table; the source is the arXiv
    predecessor, never the EMNLP paper's Table 1."""
    numbers = load_source_numbers(reproduction.DEFAULT_SOURCE_NUMBERS)
    entry = numbers["tables"]["birch_main"]
    source = numbers["sources"][entry["source"]]
    assert "arXiv 1903.10972" in source["work"] and "3a1b08009b2315325e487d215825576ea4d4c9ed" in source["where"]
    assert "not EMNLP Table 1" in entry["table"] and entry["at"] == "5-fold CV"
    cells = entry["cells"]
    assert len(cells) == 32 and {c["at"] for c in cells} == {"2-fold CV", "5-fold CV"} and {c["group"] for c in cells} == {"Robust04"}
    mapping = {c["source_row"]: c["row"] for c in cells}
    ours = "BERT(SciFact+titles, soft labels 0.8)"
    assert mapping == {"Paper 1 (two fold)": None, "Paper 2 (five fold)": None, "BM25+RM3 (Anserini)": "BM25+RM3",
                       **{f"{n}S: BERT(QA)": None for n in (1, 2, 3)}, **{f"{n}S: BERT(MB)": f"{ours} {n}S" for n in (1, 2, 3)}}
    stored = json.loads((ROOT / "results" / "numbers" / "birch_main.json").read_text(encoding="utf-8"))["layout"]["rows"]
    assert {c["row"] for c in cells} - {None} <= set(stored)
    # the cells beside ours are the 5-fold ones (ours: 5-fold CV on AP); the 2-fold ones by name
    assert source_cell(numbers, "birch_main", "1S: BERT(MB)", "AP@1000") == 0.3266
    assert source_cell(numbers, "birch_main", "1S: BERT(MB)", "AP@1000", at="2-fold CV", group="Robust04") == 0.3241
    assert {(c["row"], c["column"], c["value"]) for c in cells_beside(numbers, "birch_main") if c["at"] == "5-fold CV"} >= {
        ("BM25+RM3", "AP@1000", 0.3033), ("BM25+RM3", "P@20", 0.3974), (f"{ours} 3S", "P@20", 0.4287)}
    # a compare claim may name them: the best of 1S-3S with BERT(MB) against BM25+RM3, 5-fold CV
    ref = {"rows": ["1S: BERT(MB)", "2S: BERT(MB)", "3S: BERT(MB)"], "than": "BM25+RM3 (Anserini)", "column": "AP@1000"}
    reproduction.check_ref(ref, numbers, ["birch_main"])
    assert reproduction.source_pair(ref, numbers, ["birch_main"]) == (0.3033, 0.3278)
    assert reproduction.source_pair({**ref, "at": "2-fold CV"}, numbers, ["birch_main"]) == (0.2987, 0.3244)
