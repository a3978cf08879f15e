"""Evaluation and tables: per-query values, paired t-tests, marks in every format."""

from __future__ import annotations

import json
import random

import pytest
from scipy import stats

from reranker import tables
from reranker.evaluate import evaluate
from reranker.formats.runs import write_run
from reranker.significance import paired_ttest

MEASURES = ["AP@1000", "P@20", "nDCG@20"]


def runs_and_qrels(seed: int = 7, queries: int = 30):
    """A baseline run and a better run (relevant documents pushed up) over seeded random data."""
    rng = random.Random(seed)
    qrels, base, better = {}, {}, {}
    for q in range(1, queries + 1):
        qid = str(q)
        docs = [f"d{q}-{i}" for i in range(50)]
        relevant = rng.sample(docs, 5)
        qrels[qid] = {d: 1 for d in relevant}
        base[qid] = {d: rng.random() for d in docs}
        better[qid] = {d: s + (0.5 if d in relevant else 0.0) for d, s in base[qid].items()}
    return base, better, qrels


def test_evaluate_keeps_per_query_values_that_average_to_the_aggregate():
    base, _, qrels = runs_and_qrels()
    result = evaluate(base, qrels, ["AP@1000", "P@20", "nDCG@20"])
    assert result.queries == 30
    for measure in result.measures:
        values = result.per_query[measure]
        assert len(values) == 30
        assert result.aggregate[measure] == pytest.approx(sum(values.values()) / 30)


def test_judged_queries_missing_from_the_run_are_skipped_as_trec_eval_does():
    base, _, qrels = runs_and_qrels()
    del base["3"]
    assert "3" not in evaluate(base, qrels, ["AP@1000"]).per_query["AP@1000"]


def test_paired_ttest_matches_scipy_and_handles_identical_inputs():
    base, better, qrels = runs_and_qrels()
    a = evaluate(better, qrels, ["AP@1000"]).per_query["AP@1000"]
    b = evaluate(base, qrels, ["AP@1000"]).per_query["AP@1000"]
    t, p, n = paired_ttest(a, b)
    expected = stats.ttest_rel([a[q] for q in a], [b[q] for q in a])
    assert (t, p, n) == (pytest.approx(expected.statistic), pytest.approx(expected.pvalue), 30)
    assert paired_ttest(a, a)[1] == 1.0


def test_table_marks_significant_rows_in_every_format(tmp_path):
    base, better, qrels = runs_and_qrels()
    slightly = {q: dict(scores) for q, scores in base.items()}
    first = next(iter(slightly))
    slightly[first] = {d: s + (0.5 if d in qrels[first] else 0.0) for d, s in base[first].items()}
    measures = ["AP@1000", "P@20", "nDCG@20"]
    table = tables.Table("test", ["synthetic"], measures)
    baseline = evaluate(base, qrels, measures)
    tables.add_system(table, "baseline", "synthetic", baseline)
    tables.add_system(table, "better", "synthetic", evaluate(better, qrels, measures), baseline)
    tables.add_system(table, "one query better", "synthetic", evaluate(slightly, qrels, measures), baseline)
    assert table.marks.get(("better", "synthetic", "AP@1000")) == tables.SIGNIFICANT
    assert ("one query better", "synthetic", "AP@1000") not in table.marks
    assert ("baseline", "synthetic", "AP@1000") not in table.marks
    paths = table.write(tmp_path / "t", ["md", "csv", "tex"])
    md, csv_text, tex = (p.read_text() for p in paths)
    assert f"{baseline.aggregate['AP@1000']:.4f}" in md and tables.SIGNIFICANT in md
    assert "better,synthetic,AP@1000" in csv_text and csv_text.count(",1\n") >= 1
    assert "$^\\dagger$" in tex and "\\begin{tabular}" in tex


def test_ties_at_the_printed_precision_are_all_bold():
    table = tables.Table("ties", ["c"], ["P@20"])
    for row, value in [("zeta", 0.16020000001), ("alpha", 0.1602), ("worse", 0.15)]:
        table.add(row, "c", "P@20", value)
    md = table.to_markdown()
    assert "| zeta | **0.1602** |" in md and "| alpha | **0.1602** |" in md and "| worse | 0.1500 |" in md
    assert "\\textbf{0.1500}" not in table.to_latex() and table.to_latex().count("\\textbf") == 2


def test_command_line_table_figure_and_numbers(tmp_path):
    base, better, qrels = runs_and_qrels()
    specs = []
    for name, run in (("BM25+RM3", base), ("Birch 1S", better)):
        write_run(run, tmp_path / f"{name}.run", tag="t")
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(evaluate(run, qrels, MEASURES).to_json()))
        specs.append(f"synthetic:{name}:{path}")
    out = tmp_path / "tables" / "main"
    assert tables.main(["results", "--eval", *specs, "--measures", *MEASURES, "--baseline-row", "BM25+RM3",
                        "--formats", "md", "csv", "tex",
                        "--figure", str(tmp_path / "fig.png"), "--out", str(out),
                        "--numbers", str(tmp_path / "numbers.json"), "--command", "pytest"]) == 0
    stored = json.loads((tmp_path / "numbers.json").read_text())
    assert stored["provenance"]["command"] == "pytest"
    assert stored["numbers"]["synthetic"]["Birch 1S"]["AP@1000"] == pytest.approx(evaluate(better, qrels, MEASURES).aggregate["AP@1000"])
    assert (tmp_path / "fig.png").read_bytes()[:4] == b"\x89PNG"
    assert "Birch 1S" in out.with_suffix(".md").read_text()


def test_wall_clock_is_read_from_a_finished_snakemake_log(tmp_path):
    from reranker.tables import main, wall_clock

    log = tmp_path / "2026-01-01T000000.000000.snakemake.log"
    log.write_text("Assuming unrestricted shared filesystem usage.\n\nSNAKEMAKE\n=========\n  Date: 2026-01-01 00:00:00\n"
                   "[Thu Jan  1 00:00:01 2026]\nFinished jobid: 1 (Rule: index)\n1 of 2 steps (50%) done\n"
                   "2 of 2 steps (100%) done\nComplete log(s): x\nElapsed time: 0:52:46.250000\n")
    assert wall_clock(log) == {"started": "2026-01-01 00:00:00", "wall_clock_seconds": 3166.2, "jobs": 2,
                               "snakemake_log": log.name}
    out = tmp_path / "run.json"
    assert main(["wallclock", "--log", str(log), "--out", str(out), "--command", "make run"]) == 0
    record = json.loads(out.read_text())
    assert record["wall_clock_seconds"] == 3166.2 and record["command"] == "make run" and record["machine"]["cores"] >= 1
    assert record["machine"]["gpu"]  # a GPU name, or "none": never empty

    nothing = tmp_path / "nothing.snakemake.log"
    nothing.write_text("  Date: 2026-01-01 00:00:00\nNothing to be done (all requested files are present and up to date).\n")
    assert wall_clock(nothing) is None
    assert main(["wallclock", "--log", str(nothing), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["wall_clock_seconds"] == 3166.2  # a no-op run keeps the timed run's record
