"""A run against its reference: exact for Lucene numbers, a tolerance for model numbers; promotion. A promote
killed midway, and two at once: tests/test_faults.py."""

from __future__ import annotations

import json
from pathlib import Path

import yaml

from reranker.core.config import write_resolved
from reranker.experiments import load_config
from reranker.formats.layout import PUBLISHED
from reranker.reproduction import reference
from reranker.stages import compare


def numbers(path: Path, values: dict) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"caption": "", "numbers": values, "provenance": {}}))


def setup(tmp_path: Path, run_value: float, lucene_value: float) -> Path:
    run, ref = tmp_path / "run", tmp_path / "ref"
    for folder, model, lucene in ((run, run_value, lucene_value), (ref, 0.30, 0.25)):
        numbers(folder / "numbers" / "birch_main.json",
                {"cranfield": {"BM25+RM3": {"AP@1000": lucene}, "BERT 1S": {"AP@1000": model}}})
        (folder / "tables").mkdir()
        (folder / "tables" / "birch_main.md").write_text(f"{model}\n")
    config = load_config(overrides={"run_dir": str(run), "reference": str(ref), "compare": {"model": 0.01}})
    return write_resolved(config, tmp_path / "config.yaml", ["test"])


def test_model_numbers_within_tolerance_match(tmp_path, capsys):
    path = setup(tmp_path, 0.305, 0.25)
    assert compare.main(["--config", str(path), "--out", str(tmp_path / "report.md")]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "1 numbers match" not in report and "2 numbers match, 0 drift" in report
    assert "| tables/birch_main.md | differs |" in report


def test_a_difference_of_exactly_the_tolerance_matches_despite_float_rounding():
    """The default's clean run failed on two R@10 cells 3/300 apart (0.8253... vs 0.8153...), whose float
    difference is 0.010000000000000009: one ulp past a tolerance of 0.01 meant as inclusive."""
    at_the_boundary = reference.Difference("t", "k", "model", 0.8153333333333334, 0.8253333333333334, 0.01)
    assert at_the_boundary.status == "match"
    assert reference.Difference("t", "k", "model", 0.8153, 0.8254, 0.01).status == "drift"
    assert reference.Difference("t", "k", "lucene", 0.25, 0.25 + 1e-15, 0.0).status == "drift"


def test_lucene_numbers_must_match_exactly(tmp_path, capsys):
    path = setup(tmp_path, 0.30, 0.2500001)
    assert compare.main(["--config", str(path), "--out", str(tmp_path / "report.md")]) == 1
    assert not (tmp_path / "report.md").exists()
    kept = (tmp_path / "run" / "comparison.drift.md").read_text()
    assert "| birch_main | cranfield / BM25+RM3 / AP@1000 | lucene |" in kept and "| drift |" in kept


def test_model_drift_beyond_tolerance_fails_and_promotion_accepts_it(tmp_path, capsys):
    path = setup(tmp_path, 0.35, 0.25)
    assert compare.main(["--config", str(path)]) == 1
    (tmp_path / "run" / "report.html").write_text("<html>the run's report</html>")  # rebuilt by every run: not kept
    (tmp_path / "run" / "figures").mkdir()
    (tmp_path / "run" / "figures" / "captions.json").write_text('{"a.png": "A figure."}\n')  # what the report held
    assert compare.main(["--config", str(path), "--promote"]) == 0
    assert not (tmp_path / "ref" / "report.html").exists()
    assert (tmp_path / "ref" / "figures" / "captions.json").read_text() == '{"a.png": "A figure."}\n'
    assert compare.main(["--config", str(path)]) == 0
    config = yaml.safe_load(path.read_text())
    assert (Path(config["reference"]) / "tables" / "birch_main.md").read_text() == "0.35\n"


def test_rows_on_one_side_only_are_listed_not_failed(tmp_path):
    setup(tmp_path, 0.30, 0.25)
    numbers(tmp_path / "run" / "numbers" / "extra.json", {"vaswani": {"New row": {"AP@1000": 0.1}}})
    differences = reference.compare_numbers(tmp_path / "run", tmp_path / "ref", {"lucene": 0, "model": 0.01})
    assert {d.status for d in differences} == {"match", "new"}


def test_machine_dependent_columns_are_shown_never_failed(tmp_path):
    """A speed (queries per minute) differs on every machine: listed as such, never a drift."""
    setup(tmp_path, 0.30, 0.25)
    for folder, speed in ((tmp_path / "run", 120.0), (tmp_path / "ref", 300.0)):
        path = folder / "numbers" / "ntnu_5_5.json"
        path.write_text(json.dumps({"caption": "", "provenance": {}, "machine_dependent": ["Queries/min"],
                                    "numbers": {"c": {"BERT": {"RR@10": 0.5, "Queries/min": speed}}}}))
    differences = {d.key: d for d in reference.compare_numbers(tmp_path / "run", tmp_path / "ref", {"lucene": 0, "model": 0.01})}
    assert differences["c / BERT / Queries/min"].status == "machine"
    assert differences["c / BERT / RR@10"].status == "match"


def test_promoting_a_partial_run_keeps_what_it_did_not_make_unless_pruned(tmp_path, capsys):
    """A run of one part (Birch's table only) must not delete the stored tables of the other parts."""
    path = setup(tmp_path, 0.35, 0.25)
    other = tmp_path / "ref" / "tables" / "radboud_2_1.md"
    other.write_text("stored by an earlier full run\n")
    assert compare.main(["--config", str(path), "--promote"]) == 0
    assert other.read_text() == "stored by an earlier full run\n"
    assert (tmp_path / "ref" / "tables" / "birch_main.md").read_text() == "0.35\n"
    assert f"kept, not made by this run: {other}" in capsys.readouterr().out
    assert compare.main(["--config", str(path), "--promote", "--prune"]) == 0
    assert not other.exists() and (tmp_path / "ref" / "tables" / "birch_main.md").exists()


def test_a_papers_published_folder_is_promoted_through_the_resolved_configuration(tmp_path, capsys):
    """Birch's fusion/ is its plugin's `published`, carried by the resolved file (the stage never loads a plugin);
    its evidence/ page is not published, and the suite's own layout names no paper's folder."""
    path = setup(tmp_path, 0.35, 0.25)
    assert "fusion" in yaml.safe_load(path.read_text())["published"]
    for folder in ("fusion/cranfield", "evidence"):
        (tmp_path / "run" / folder).mkdir(parents=True)
    (tmp_path / "run" / "fusion" / "cranfield" / "birch.x.1S.json").write_text("{}\n")
    (tmp_path / "run" / "evidence" / "birch_moves.html").write_text("<html></html>")
    assert compare.main(["--config", str(path), "--promote"]) == 0
    assert (tmp_path / "ref" / "fusion" / "cranfield" / "birch.x.1S.json").read_text() == "{}\n"
    assert not (tmp_path / "ref" / "evidence").exists()
    assert "fusion" not in PUBLISHED


def test_promoting_the_reference_onto_itself_is_refused_in_one_line(tmp_path, capsys):
    path = setup(tmp_path, 0.35, 0.25)
    config = yaml.safe_load(path.read_text())
    config["run_dir"] = config["reference"]
    path.write_text(yaml.safe_dump(config))
    assert compare.main(["--config", str(path), "--promote"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the run folder is the reference itself" in err


def test_a_number_the_reference_prints_pending_is_remade_not_a_drift(tmp_path, capsys):
    """A stored number whose jobs changed since it was made is printed pending (tools/stale.py): a run of today's
    code that differs from it is what was due, not a drift; the same difference on a current number fails."""
    path = setup(tmp_path, 0.35, 0.25)
    stored = tmp_path / "ref" / "numbers" / "birch_main.json"
    document = json.loads(stored.read_text())
    document["layout"] = {"groups": ["cranfield"], "rows": ["BM25+RM3", "BERT 1S"], "measures": ["AP@1000"],
                          "pending": [["BERT 1S", "cranfield", "AP@1000"]], "pending_why": "made at abc"}
    stored.write_text(json.dumps(document))
    assert compare.main(["--config", str(path), "--out", str(tmp_path / "report.md")]) == 0
    report = (tmp_path / "report.md").read_text()
    assert "0 drift beyond tolerance, 1 remade" in report and "| BERT 1S / AP@1000 |" not in report
    assert "| birch_main | cranfield / BERT 1S / AP@1000 | model | 0.350000 | 0.300000 | +0.050000 | remade |" in report
    document["layout"]["pending"] = []
    stored.write_text(json.dumps(document))
    assert compare.main(["--config", str(path)]) == 1
