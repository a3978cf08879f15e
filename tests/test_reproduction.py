"""The sources' own numbers (source_numbers.yaml) and the reproduction measures ER and ΔRI (Breuer et al., SIGIR 2020)."""

from __future__ import annotations

import random

import pytest
import yaml
from repro_eval.measure.overall_effects import DRI, ER

from reranker import reproduction
from reranker.reproduction import SourceNumbersError, cells_beside, delta_ri, effect_ratio, load_source_numbers, source_cell

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
