"""The gap to a source split into first stage and reranker (reranker.report.gap_split, `tables split`): from a results table
the real stages make of small runs, and in results/radboud.md from the stored split."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from reranker.formats.errors import FormatError
from reranker.formats.table_spec import write_spec
from reranker.report import gap_split as split
from reranker.stages import evaluate, tables

ROOT = Path(__file__).resolve().parent.parent
QRELS = "".join(f"{q} 0 {d} {g}\n" for q in "1234" for d, g in (("a", 2), ("b", 1), ("c", 0)))
# Four rows of a table over four queries: our first stage, our reranker on it, theirs and our reranker on theirs.
RUNS = {
    "BM25": {"1": "bca", "2": "cab", "3": "bac", "4": "cba"},
    "BERT baseline": {"1": "abc", "2": "abc", "3": "abc", "4": "bac"},
    "BM25 (the thesis' run)": {"1": "cba", "2": "cba", "3": "bca", "4": "cab"},
    "BERT baseline on the thesis' candidates": {"1": "bac", "2": "acb", "3": "abc", "4": "bca"},
}
SOURCES = """\
sources:
  thesis: {work: "A thesis"}
tables:
  t_2_1:
    source: thesis
    table: "Table 2.1"
    at: "lr 3e-5, 1 epoch"
    cells:
      - {row: "BERT baseline", source_row: "baseline", column: "nDCG@20", value: 0.8, where: "line 1"}
"""
ROLES = ["--first-stage", "BM25", "--reranker", "BERT baseline", "--their-first-stage", "BM25 (the thesis' run)",
         "--on-theirs", "BERT baseline on the thesis' candidates"]


@pytest.fixture()
def table(tmp_path) -> Path:
    """t_2_1.json: the four rows' nDCG@20 and P@20 with the table's own paired tests, as `tables results` stores them."""
    (tmp_path / "qrels.txt").write_text(QRELS)
    cells = []
    for i, (row, ranked) in enumerate(RUNS.items()):
        run = tmp_path / f"{i}.run"
        run.write_text("".join(f"{q} Q0 {d} {r} {3 - r} t\n" for q, docs in ranked.items() for r, d in enumerate(docs, 1)))
        out = tmp_path / f"{i}.json"
        assert evaluate.main(["--run", str(run), "--qrels", str(tmp_path / "qrels.txt"), "--measures", "nDCG@20", "P@20",
                              "--out", str(out)]) == 0
        cells.append({"group": "g", "row": row, "path": str(out)})
    (tmp_path / "sources.yaml").write_text(SOURCES)
    write_spec(tmp_path / "t_2_1.spec.json", {"eval": cells, "note": [{"text": "What the last two rows are."}]})
    assert tables.main(["results", "--spec", str(tmp_path / "t_2_1.spec.json"), "--measures", "nDCG@20", "P@20", "--baseline-row", "BM25",
                        "--second-baseline-row", "BERT baseline", "--out", str(tmp_path / "t_2_1"),
                        "--numbers", str(tmp_path / "t_2_1.json"), "--sources", str(tmp_path / "sources.yaml")]) == 0
    assert "\nWhat the last two rows are." in (tmp_path / "t_2_1.md").read_text()  # a spec's note: a line under the table
    return tmp_path / "t_2_1.json"


def test_the_gap_splits_into_parts_that_add_up(table, tmp_path):
    out = tmp_path / "split.json"
    assert tables.main(["split", "--numbers", str(table), "--sources", str(tmp_path / "sources.yaml"), *ROLES,
                        "--out", str(out), "--command", "test"]) == 0
    stored, numbers = json.loads(out.read_text()), json.loads(table.read_text())["numbers"]["g"]
    ndcg, p20 = stored["numbers"]["g"]["nDCG@20"], stored["numbers"]["g"]["P@20"]
    assert ndcg["ours on our candidates"] == numbers["BERT baseline"]["nDCG@20"]
    assert ndcg["ours on their candidates"] == numbers["BERT baseline on the thesis' candidates"]["nDCG@20"]
    assert ndcg["their first stage"] == numbers["BM25 (the thesis' run)"]["nDCG@20"]
    assert ndcg["their reranker"] == 0.8 and stored["source"] == {"work": "A thesis", "table": "Table 2.1", "at": "lr 3e-5, 1 epoch"}
    assert ndcg[split.GAP] == pytest.approx(ndcg[split.RERANKER] + ndcg[split.FIRST])
    assert ndcg[split.RERANKER] == pytest.approx(ndcg["ours on their candidates"] - 0.8)
    assert split.GAP not in p20 and p20[split.FIRST] == pytest.approx(p20["ours on our candidates"] - p20["ours on their candidates"])
    assert ndcg[split.THEIR_GAIN] == pytest.approx(0.8 - ndcg["their first stage"])  # what each reranker adds to the run it reranks
    assert ndcg[split.OUR_GAIN_THEIRS] - ndcg[split.THEIR_GAIN] == pytest.approx(ndcg[split.RERANKER])
    assert split.THEIR_GAIN not in p20 and p20[split.OUR_GAIN] == pytest.approx(p20["ours on our candidates"] - p20["our first stage"])
    # the p-values are the table's own tests of the rows each part compares (‡: against our reranker), kept out of `numbers`
    pvalues = json.loads(table.read_text())["significance"]["pvalues"]["g"]
    assert stored["significance"]["pvalues"]["g"]["nDCG@20"] == {
        split.FIRST: pvalues["BERT baseline on the thesis' candidates"]["nDCG@20"]["‡"],
        split.APART: pvalues["BM25 (the thesis' run)"]["nDCG@20"]["†"]}
    # the words: the measure the thesis reports splits whole and comes first; the other has the first stage's part alone
    first, second = stored["text"].split("\n\n")[:2]
    assert first.startswith("On nDCG@20, our BERT baseline scores") and f"{ndcg['ours on our candidates']:.4f}" in first
    assert "0.8000 at lr 3e-5, 1 epoch" in first and split._signed(ndcg[split.RERANKER]) in first
    assert f"the thesis' reranker gains {split._signed(ndcg[split.THEIR_GAIN])}" in first
    assert second.startswith("On P@20, for which the thesis gives no number") and split._signed(p20[split.FIRST]) in second
    assert "−" in split._signed(-0.25) and split._signed(0.25) == "+0.2500"


def test_the_note_gets_the_stored_split_between_its_markers_and_nothing_else(table, tmp_path, capsys):
    out, note = tmp_path / "split.json", tmp_path / "note.md"
    assert tables.main(["split", "--numbers", str(table), "--sources", str(tmp_path / "sources.yaml"), *ROLES, "--out", str(out)]) == 0
    note.write_text(f"# Note\n\nBefore.\n\n{split.block(None, str(out), str(note))}\n\nAfter.\n")
    assert tables.main(["split", "--stored", str(out), "--into", str(note)]) == 0
    written = note.read_text()
    assert written.startswith("# Note\n\nBefore.\n\n<!-- split: generated") and written.endswith(f"{split.END}\n\nAfter.\n")
    assert json.loads(out.read_text())["text"] in written and "Not in the stored numbers yet" not in written
    assert tables.main(["split", "--stored", str(out), "--into", str(note)]) == 0 and note.read_text() == written  # idempotent
    note.write_text("# Note without markers\n")
    assert tables.main(["split", "--stored", str(out), "--into", str(note)]) == 2
    assert "no place for the split" in capsys.readouterr().err and note.read_text() == "# Note without markers\n"


def test_a_table_without_the_rows_is_refused_naming_the_row(table, tmp_path, capsys):
    roles = [*ROLES[:-1], "BERT baseline on nobody's candidates"]
    assert tables.main(["split", "--numbers", str(table), *roles, "--out", str(tmp_path / "split.json")]) == 2
    assert "t_2_1.json: no number for row \"BERT baseline on nobody's candidates\"" in capsys.readouterr().err
    assert not (tmp_path / "split.json").exists()
    with pytest.raises(FormatError, match="no `numbers`"):
        split.split({"numbers": {}}, "t.json", dict(zip(split.ROLES, ROLES[1::2])), None)


def test_radboud_md_states_the_stored_split():
    """results/radboud.md holds, between its markers, what `tables split --stored` makes of the stored split (or, while
    the stored numbers have none, that it is not there yet)."""
    stored_path, note_path = ROOT / "results" / "numbers" / "radboud_split.json", ROOT / "results" / "radboud.md"
    stored = json.loads(stored_path.read_text()) if stored_path.exists() else None
    expected = split.block(stored, "results/numbers/radboud_split.json", "results/radboud.md")
    assert expected in note_path.read_text(), ("results/radboud.md does not state the stored split: python -m reranker tables "
                                               "split --stored results/numbers/radboud_split.json --into results/radboud.md")
