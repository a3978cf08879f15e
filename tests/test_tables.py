"""Evaluation and tables: per-query values, paired t-tests, marks in every format."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest
from scipy import stats

from reranker.core.registry import CORRECTIONS
from reranker.formats.runs import write_run
from reranker.report import notes
from reranker.report.results_table import add_system
from reranker.report.table import SIGNIFICANT, SOURCE_COLUMN, Table, write_numbers
from reranker.reproduction import significance
from reranker.reproduction.significance import paired_ttest
from reranker.stages import tables
from reranker.stages.evaluate import evaluate

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
    table = Table("test", ["synthetic"], measures)
    baseline = evaluate(base, qrels, measures)
    add_system(table, "baseline", "synthetic", baseline)
    add_system(table, "better", "synthetic", evaluate(better, qrels, measures), baseline)
    add_system(table, "one query better", "synthetic", evaluate(slightly, qrels, measures), baseline)
    assert table.marks.get(("better", "synthetic", "AP@1000")) == SIGNIFICANT
    assert ("one query better", "synthetic", "AP@1000") not in table.marks
    assert ("baseline", "synthetic", "AP@1000") not in table.marks
    paths = table.write(tmp_path / "t", ["md", "csv", "tex", "html"])
    md, csv_text, tex, html = (p.read_text() for p in paths)
    assert f"<td><b>{table.text('better', 'synthetic', 'AP@1000')}</b></td>" in html and "<caption" in html
    assert f"{baseline.aggregate['AP@1000']:.4f}" in md and SIGNIFICANT in md
    assert "better,synthetic,AP@1000" in csv_text and csv_text.count(",1\n") >= 1
    assert "$^\\dagger$" in tex and "\\begin{tabular}" in tex


def test_holm_and_bonferroni_adjust_as_published():
    # Holm (1979): the i-th smallest p times (m - i + 1), kept monotone; Bonferroni: times m; both capped at 1.
    assert significance.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert significance.holm([0.02, 0.5]) == pytest.approx([0.04, 0.5])
    assert significance.bonferroni([0.01, 0.04, 0.5]) == pytest.approx([0.03, 0.12, 1.0])
    assert list(significance.CORRECTIONS) == list(CORRECTIONS)  # the schema's enum names every implementation


def test_a_correction_removes_marks_per_column_and_names_itself(tmp_path):
    """Twenty noise systems against one baseline: some are † by chance uncorrected; Holm keeps only the real one."""
    base, better, qrels = runs_and_qrels(queries=40)
    rng = random.Random(3)
    specs = []
    for name, run in [("BM25", base), ("better", better)] + [
            (f"noise {i}", {q: {d: s + rng.gauss(0, 0.3) for d, s in docs.items()} for q, docs in base.items()}) for i in range(20)]:
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(evaluate(run, qrels, MEASURES).to_json()))
        specs.append(f"synthetic:{name}:{path}")
    marked = {}
    for correction in ("none", "holm", "bonferroni"):
        out = tmp_path / correction
        assert tables.main(["results", "--eval", *specs, "--measures", *MEASURES, "--baseline-row", "BM25",
                            "--correction", correction, "--out", str(out), "--formats", "md", "csv"]) == 0
        md = out.with_suffix(".md").read_text()
        rows = [line for line in md.splitlines() if line.startswith("| ")]
        marked[correction] = {line.split(" | ")[0].lstrip("| ") for line in rows if SIGNIFICANT in line.split(" | ", 1)[-1]}
        assert significance.CORRECTIONS[correction].phrase in md
    assert "better" in marked["holm"] and "better" in marked["bonferroni"]
    assert marked["bonferroni"] <= marked["holm"] <= marked["none"]
    assert len(marked["none"]) > len(marked["holm"]) == 1, marked


def test_ties_at_the_printed_precision_are_all_bold():
    table = Table("ties", ["c"], ["P@20"])
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


def test_both_marks_are_latex_in_tex_tables():
    table = Table("c", ["g"], ["AP@1000"], notes=["† against BM25; ‡ against the baseline reranker."])
    table.add("BM25", "g", "AP@1000", 0.2)
    table.add("Variant", "g", "AP@1000", 0.3, "†‡")
    tex = table.to_latex()
    assert "0.3000$^\\dagger$$^\\ddagger$" in tex and "$^\\ddagger$ against the baseline" in tex
    assert "†" not in tex and "‡" not in tex


def snakemake_job(start: str, end: str, rule: str, jobid: int, output: str) -> tuple[str, str]:
    """A job's start block and finish line as Snakemake 9 logs them."""
    return (f"[Mon Nov 23 {start} 2026]\nlocalrule {rule}:\n    output: {output}\n    jobid: {jobid}\n"
            f"    resources: tmpdir=/tmp\n", f"[Mon Nov 23 {end} 2026]\nFinished jobid: {jobid} (Rule: {rule})\n")


def test_a_part_of_a_resumed_run_is_timed_over_its_logs_without_the_gaps(tmp_path):
    from reranker.stages.tables import main

    a1, a2 = snakemake_job("09:00:00", "09:10:00", "train", 1, "checkpoints/radboud-swap-g1-f1/reranker.json")
    b1, b2 = snakemake_job("09:05:00", "09:20:00", "train", 2, "checkpoints/radboud-add-g1-f1/reranker.json")
    c1, c2 = snakemake_job("09:20:00", "09:50:00", "train", 3, "checkpoints/scifact/reranker.json")  # another part
    d1, _ = snakemake_job("09:50:00", "09:55:00", "train", 4, "checkpoints/radboud-add-g1-f2/reranker.json")  # stopped
    first = tmp_path / "first.snakemake.log"
    first.write_text(a1 + b1 + a2 + b2 + c1 + c2 + d1 + "Error in rule train:\n")
    e1, e2 = snakemake_job("14:00:00", "14:04:00", "segment_documents", 1, "segments/cranfield/bm25.k100.documents.jsonl")
    f1, f2 = snakemake_job("14:04:00", "14:10:00", "train", 2, "checkpoints/radboud-add-g1-f2/reranker.json")
    second = tmp_path / "second.snakemake.log"
    second.write_text(e1 + e2 + f1 + f2)
    out = tmp_path / "radboud.json"
    assert main(["wallclock", "--log", str(first), "--log", str(second), "--part", "radboud|segment_documents",
                 "--out", str(out), "--command", "snakemake radboud"]) == 0
    record = json.loads(out.read_text())
    # 09:00-09:20 (two jobs overlapping), then 14:00-14:10; the other part and the stopped job do not count.
    assert record["wall_clock_seconds"] == 30 * 60 and record["job_seconds"] == (10 + 15 + 4 + 6) * 60
    assert record["jobs"] == 4 and record["jobs_by_rule"] == {"segment_documents": 1, "train": 3}
    assert main(["wallclock", "--log", str(second), "--part", "ntnu", "--out", str(out)]) == 0
    assert json.loads(out.read_text()) == record  # no NTNU job: the record stays


def test_wall_clock_is_read_from_a_finished_snakemake_log(tmp_path):
    from reranker.report.run_records import wall_clock
    from reranker.stages.tables import main

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


def test_a_resumed_run_is_timed_as_the_sum_of_its_stretches_without_the_pauses(tmp_path, capsys):
    from reranker.stages.tables import main

    a1, a2 = snakemake_job("09:00:00", "09:10:00", "train", 1, "checkpoints/scifact/reranker.json")
    b1, _ = snakemake_job("09:10:00", "09:12:00", "score", 2, "scores/cranfield/x.parquet")  # drained: never finished
    first = tmp_path / "2026-11-23T085900.000000.snakemake.log"
    first.write_text("  Date: 2026-11-23 08:59:00\n" + a1 + a2 + "1 of 3 steps (33%) done\n" + b1 + "[Mon Nov 23 09:12:30 2026]\n")
    c1, c2 = snakemake_job("14:00:30", "14:20:00", "score", 1, "scores/cranfield/x.parquet")
    second = tmp_path / "2026-11-23T140000.000000.snakemake.log"
    second.write_text("  Date: 2026-11-23 14:00:00\n" + c1 + c2 + "2 of 2 steps (100%) done\nElapsed time: 0:21:00\n")
    noop = tmp_path / "2026-11-23T150000.000000.snakemake.log"
    noop.write_text("  Date: 2026-11-23 15:00:00\nNothing to be done (all requested files are present and up to date).\n")
    # each stretch's note, written as it started (finish --logs-only): the folder was resumed at a later commit
    notes = [{"at": "2026-11-23 08:58:59", "git_commit": "a" * 40, "git_dirty": False, "snakemake": "snakemake"},
             {"at": "2026-11-23 13:59:59", "git_commit": "b" * 40, "git_dirty": False, "snakemake": "snakemake -R x"}]
    (tmp_path / "stretches.jsonl").write_text("".join(json.dumps(n) + "\n" for n in reversed(notes)))
    out = tmp_path / "run.json"
    assert main(["wallclock", "--log", str(second), "--log", str(noop), "--log", str(first), "--out", str(out)]) == 0
    record = json.loads(out.read_text())
    assert [s["git_commit"][0] for s in record["stretches"]] == ["a", "b", "b"]
    assert record["stretches"][1]["snakemake"] == "snakemake -R x"
    from reranker.report.parts import _row
    assert f"| {'a' * 12} + {'b' * 12} |" in _row("p", record, tmp_path / "none.json")
    # 08:59:00-09:12:30 (to its last timestamp: the drained job's time counts), then 21 min; 14:21-15:00 does not
    assert record["wall_clock_seconds"] == 13.5 * 60 + 21 * 60 and record["jobs"] == 2
    assert [s["seconds"] for s in record["stretches"]] == [13.5 * 60, 21 * 60, 0.0]
    assert record["started"] == "2026-11-23 08:59:00"

    assert main(["wallclock", "--log", str(first), "--log", str(noop), "--out", str(tmp_path / "no.json")]) == 2
    assert "stopped before 100%" in capsys.readouterr().err and not (tmp_path / "no.json").exists()


def write_eval(path, values: dict[str, float]):
    """A saved evaluation with the given aggregates (two queries holding the same value)."""
    path.write_text(json.dumps({"measures": list(values), "queries": 2, "aggregate": values,
                                "per_query": {m: {"1": v, "2": v} for m, v in values.items()}}))
    return path


def test_value_columns_are_formatted_never_bold_and_in_every_format(tmp_path):
    specs = [f"msmarco:{row}:{write_eval(tmp_path / f'{row}.json', {'RR@10': value})}"
             for row, value in (("BM25", 0.18), ("BERT", 0.35))]
    small = tmp_path / "small.json"
    small.write_text(json.dumps({"validation": {"loss": 0.312345}, "throughput": {"pairs_per_second": 1234.56},
                                 "shape": "6/384", "steps": 150}))
    large = tmp_path / "large.json"
    large.write_text(json.dumps({"validation": {"loss": 0.312345}, "throughput": {"pairs_per_second": 98.7},
                                 "shape": "12/768", "steps": 1500}))
    out = tmp_path / "t"
    values = [arg for row, path in (("BM25", small), ("BERT", large))
              for column, key in (("layers/hidden", "shape"), ("pairs/s", "throughput.pairs_per_second"),
                                  ("held-out loss", "validation.loss"), ("steps", "steps"))
              for arg in ("--value", f"{row}:{column}:{path}:{key}")]
    assert tables.main(["results", "--eval", *specs, "--measures", "RR@10", *values,
                        "--value-format", "pairs/s:,.0f", "--formats", "md", "csv", "tex", "--out", str(out),
                        "--numbers", str(tmp_path / "n.json")]) == 0
    md = out.with_suffix(".md").read_text()
    assert "| System | MRR@10 | layers/hidden | pairs/s | held-out loss | steps |" in md
    assert "| BM25 | 0.1800 | 6/384 | 1,235 | 0.3123 | 150 |" in md  # equal losses: neither bold
    assert "| BERT | **0.3500** | 12/768 | 99 | 0.3123 | 1500 |" in md
    csv_text = out.with_suffix(".csv").read_text()
    assert 'BM25,msmarco,pairs/s,"1,235",0\n' in csv_text and "BERT,msmarco,layers/hidden,12/768,0\n" in csv_text
    assert "BERT,msmarco,RR@10,0.350000,0\n" in csv_text
    tex = out.with_suffix(".tex").read_text()
    assert "\\begin{tabular}{lrrrrr}" in tex and "System & MRR@10 & layers/hidden & pairs/s & held-out loss & steps \\\\" in tex
    assert "BERT & \\textbf{0.3500} & 12/768 & 99 & 0.3123 & 1500 \\\\" in tex
    stored = json.loads((tmp_path / "n.json").read_text())
    assert stored["numbers"]["msmarco"]["BM25"] == {"RR@10": 0.18, "layers/hidden": "6/384", "pairs/s": 1234.56,
                                                    "held-out loss": 0.312345, "steps": 150}
    assert {str(small), str(large)} <= set(stored["provenance"]["inputs_sha256"])


def test_value_columns_print_once_after_every_group(tmp_path):
    """Table 5.6's shape: "Train" and "Distilled" groups of measures, a row's size once; a missing cell prints –."""
    specs = [f"{group}:{row}:{write_eval(tmp_path / f'{group}{row}.json', {'RR@10': value})}"
             for group, row, value in (("Train", "BM25", 0.6), ("Train", "L4", 0.7), ("Train", "L6", 0.8),
                                       ("Distilled", "BM25", 0.6), ("Distilled", "L4", 0.75))]
    meta = tmp_path / "meta.json"
    meta.write_text(json.dumps({"shape": "4/384"}))
    out = tmp_path / "t"
    assert tables.main(["results", "--eval", *specs, "--measures", "RR@10",
                        "--value", f"L4:L/H:{meta}:shape", "--formats", "md", "tex", "--out", str(out)]) == 0
    md = out.with_suffix(".md").read_text()
    assert "| System | Train MRR@10 | Distilled MRR@10 | L/H |" in md
    assert "| L4 | 0.7000 | **0.7500** | 4/384 |" in md and "| L6 | **0.8000** | – | – |" in md
    tex = out.with_suffix(".tex").read_text()
    assert "\\begin{tabular}{lrrr}" in tex
    assert " & \\multicolumn{1}{c}{Train} & \\multicolumn{1}{c}{Distilled} &  \\\\" in tex


@pytest.mark.parametrize("problem", ["key", "file"])
def test_a_missing_value_key_or_file_is_an_error_naming_both_and_writes_nothing(tmp_path, capsys, problem):
    spec = f"synthetic:BM25:{write_eval(tmp_path / 'bm25.json', {'RR@10': 0.2})}"
    meta = tmp_path / "reranker.json"
    meta.write_text(json.dumps({"validation": {"loss": 0.3}}))
    source, key = (meta, "validation.prior_loss") if problem == "key" else (tmp_path / "absent.json", "steps")
    out = tmp_path / "t"
    assert tables.main(["results", "--eval", spec, "--measures", "RR@10", "--value", f"BM25:prior:{source}:{key}",
                        "--figure", str(tmp_path / "fig.png"), "--out", str(out), "--numbers", str(tmp_path / "n.json")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tables: ") and str(source) in err and key in err
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["bm25.json", "reranker.json"])


def test_summary_row_is_mean_and_sample_sd_of_the_listed_rows(tmp_path):
    seeds = {"seed 1": 0.60, "BERT, seed 2": 0.62, "seed 3": 0.65, "seed 4": 0.58}  # labels may hold commas
    specs = [f"c:{row}:{write_eval(tmp_path / f'{row}.json', {'RR@10': v, 'R@10': v + 0.2})}" for row, v in seeds.items()]
    specs.append(f"c:BM25:{write_eval(tmp_path / 'bm25.json', {'RR@10': 0.7, 'R@10': 0.1})}")
    out = tmp_path / "t"
    assert tables.main(["results", "--eval", *specs, "--measures", "RR@10", "R@10", "--summary-row",
                        "BERT (4 seeds):seed 1|BERT, seed 2|seed 3|seed 4", "--formats", "md", "csv", "tex", "--out", str(out),
                        "--numbers", str(tmp_path / "n.json")]) == 0
    mean, sd = statistics.fmean(seeds.values()), statistics.stdev(seeds.values())
    assert (mean, round(sd, 4)) == (pytest.approx(0.6125), 0.0299)
    md = out.with_suffix(".md").read_text()
    assert [line for line in md.splitlines() if line.startswith("|")][-1] == \
        f"| BERT (4 seeds) | {mean:.4f} ± {sd:.4f} | {mean + 0.2:.4f} ± {sd:.4f} |"
    assert "| BM25 | **0.7000** |" in md  # the summary row takes no part in bolding
    assert f"BERT (4 seeds),c,RR@10,{mean:.4f} ± {sd:.4f},0\n" in out.with_suffix(".csv").read_text()
    assert f"BERT (4 seeds) & {mean:.4f} $\\pm$ {sd:.4f} &" in out.with_suffix(".tex").read_text()
    stored = json.loads((tmp_path / "n.json").read_text())["numbers"]["c"]["BERT (4 seeds)"]
    assert stored["RR@10"] == {"mean": pytest.approx(mean), "sd": pytest.approx(sd), "n": 4}
    assert tables.main(["results", "--eval", *specs, "--measures", "RR@10", "--summary-row", "x:seed 1|seed 9",
                        "--out", str(tmp_path / "bad")]) == 2


def test_labels_and_paths_with_colons_reach_the_table_through_a_spec_file(tmp_path):
    """Rules hand a table its cells as a spec file (reranker.formats.table_spec): a colon in a label or a path
    is only text there; the same cells given by the hand options make the same bytes."""
    from reranker.formats.table_spec import read_spec, write_spec

    folder = tmp_path / "run:1"
    folder.mkdir()
    rows = {"BM25": 0.18, "BERT: large, seed 1": 0.35, "BERT: large, seed 2": 0.33}
    evals = [{"group": "MS MARCO: dev", "row": row, "path": str(write_eval(folder / f"e{i}.json", {"RR@10": v}))}
             for i, (row, v) in enumerate(rows.items())]
    meta = folder / "meta.json"
    meta.write_text(json.dumps({"shape": "6/384", "throughput": {"pairs_per_second": 1234.5}}))
    spec = {"eval": evals, "value": [{"row": "BERT: large, seed 1", "column": "L/H: size", "path": str(meta), "key": "shape"},
                                     {"row": "BM25", "column": "pairs/s", "path": str(meta), "key": "throughput.pairs_per_second"}],
            "value_format": [{"column": "pairs/s", "format": ",.0f"}],
            "summary_row": [{"label": "Mean: BERT", "rows": ["BERT: large, seed 1", "BERT: large, seed 2"]}]}
    spec_file = tmp_path / "t.spec.json"
    write_spec(spec_file, spec)
    assert read_spec(spec_file)["eval"] == evals and read_spec(spec_file)["checkpoints"] == []
    out = tmp_path / "t"
    assert tables.main(["results", "--spec", str(spec_file), "--measures", "RR@10",
                        "--formats", "md", "csv", "--out", str(out), "--numbers", str(tmp_path / "n.json")]) == 0
    md = out.with_suffix(".md").read_text()
    assert "| BERT: large, seed 1 | **0.3500** | 6/384 | – |" in md and "| BM25 | 0.1800 | – | 1,234 |" in md
    assert "\"BERT: large, seed 2\",MS MARCO: dev,RR@10,0.330000,0\n" in out.with_suffix(".csv").read_text()
    assert "| Mean: BERT | 0.3400 ± 0.0141 | – | – |" in md
    stored = json.loads((tmp_path / "n.json").read_text())
    assert stored["numbers"]["MS MARCO: dev"]["BERT: large, seed 1"]["L/H: size"] == "6/384"
    assert str(meta) in stored["provenance"]["inputs_sha256"]
    # Colons in the paths alone: the hand options give the same cells, and the same bytes.
    plain = {"eval": [dict(e, group="dev", row=f"r{i}") for i, e in enumerate(evals)],
             "value": [{"row": "r0", "column": "pairs/s", "path": str(meta), "key": "throughput.pairs_per_second"}],
             "value_format": [{"column": "pairs/s", "format": ",.0f"}], "summary_row": [{"label": "Mean", "rows": ["r1", "r2"]}]}
    write_spec(spec_file, plain)
    hand = ["--eval", *[f"dev:{e['row']}:{e['path']}" for e in plain["eval"]], "--value", f"r0:pairs/s:{meta}:throughput.pairs_per_second",
            "--value-format", "pairs/s:,.0f", "--summary-row", "Mean:r1|r2"]
    for name, cells in (("spec", ["--spec", str(spec_file)]), ("hand", hand)):
        assert tables.main(["results", *cells, "--measures", "RR@10", "--formats", "md", "csv", "tex",
                            "--out", str(tmp_path / name)]) == 0
    for suffix in (".md", ".csv", ".tex"):
        assert (tmp_path / f"spec{suffix}").read_bytes() == (tmp_path / f"hand{suffix}").read_bytes()
    stats = tmp_path / "a:b.json"
    stats.write_text(json.dumps({"docs": 3, "queries": 2, "judged_queries": 2, "qrels": 4, "mean_relevant_per_query": 2.0,
                                 "mean_doc_length_words": 7.5}))
    write_spec(spec_file, {"stats": [{"group": "TREC: Robust04", "path": str(stats)}]})
    assert tables.main(["stats", "--spec", str(spec_file), "--formats", "md", "--out", str(tmp_path / "s")]) == 0
    assert "| TREC: Robust04 | 3 | 2 | 2 | 4 | 2.00 | 7.50 |" in (tmp_path / "s.md").read_text()


@pytest.mark.parametrize("problem", ["missing field", "not a list", "unknown kind", "not JSON", "both", "neither"])
def test_a_bad_spec_file_is_refused_in_one_line_naming_the_file_and_entry(tmp_path, capsys, problem):
    good = {"group": "g", "row": "BM25", "path": str(write_eval(tmp_path / "bm25.json", {"RR@10": 0.2}))}
    spec = tmp_path / "bad.spec.json"
    text = {"missing field": json.dumps({"eval": [good, {"group": "g", "row": "BERT"}]}),
            "not a list": json.dumps({"eval": good}), "unknown kind": json.dumps({"eval": [good], "evals": []}),
            "not JSON": '{"eval": [', "both": json.dumps({"eval": [good]}), "neither": ""}[problem]
    spec.write_text(text)
    cells = {"both": ["--spec", str(spec), "--eval", f"g:BM25:{good['path']}"], "neither": []}.get(problem, ["--spec", str(spec)])
    assert tables.main(["results", *cells, "--measures", "RR@10", "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert err.startswith("tables: error: ") and err.count("\n") == 1, err
    wanted = {"missing field": "eval[1]: missing path", "not a list": "eval: expected a list", "unknown kind": "unknown keys evals",
              "not JSON": "bad.spec.json:1: not JSON", "both": "leave out --eval", "neither": "give --spec FILE or --eval"}[problem]
    assert wanted in err and (problem == "neither" or str(spec) in err)
    assert not (tmp_path / "t.md").exists()
    from reranker.formats.errors import FormatError
    from reranker.formats.table_spec import write_spec

    if problem in ("missing field", "not a list", "unknown kind"):  # the writer checks the same, before it writes
        with pytest.raises(FormatError, match="bad.spec.json"):
            write_spec(tmp_path / "bad.spec.json", json.loads(text))


def test_figure_sweep_reads_its_points_from_a_spec_file(tmp_path):
    from reranker.formats.table_spec import write_spec

    points = [{"x": x, "label": "BERT: base", "path": str(write_eval(tmp_path / f"b:{x}.json", {"RR@10": rr}))}
              for x, rr in ((100, 0.35), (10, 0.3))]
    write_spec(tmp_path / "s.json", {"sweep": points})
    numbers = tmp_path / "n.json"
    assert tables.main(["figure", "sweep", "--spec", str(tmp_path / "s.json"), "--measures", "RR@10", "--out",
                        str(tmp_path / "f.png"), "--numbers", str(numbers)]) == 0
    assert json.loads(numbers.read_text())["numbers"] == {"BERT: base": {"RR@10": {"10": 0.3, "100": 0.35}}}


def test_figure_ranks_counts_the_first_relevant_rank_per_query(tmp_path):
    from reranker.formats.qrels import write_qrels

    qrels = {"1": {"b": 1, "z": 0}, "2": {"x": 2}, "3": {"a": 0}, "4": {"a": 1}, "5": {"a": 1}, "6": {"a": 1, "c": 2}}
    first = {"1": {"a": 3.0, "b": 2.0, "c": 1.0},  # rank 2
             "2": {"a": 3.0, "b": 2.0, "c": 1.0, "x": 0.5},  # rank 4: not in the top 3
             "3": {"a": 1.0},  # no relevant document judged: left out
             "5": {"a": 1.0, "b": 0.5},  # rank 1; query 4 is missing from the run
             "6": {"a": 1.0, "b": 1.0, "c": 0.2}}  # a tie is broken by doc id descending: b, then a at rank 2
    second = {"1": {"b": 3.0}, "2": {"x": 1.0, "y": 2.0}, "4": {"q": 1.0, "a": 0.5}, "5": {"b": 1.0}, "6": {"c": 9.0}}
    write_qrels(qrels, tmp_path / "qrels")
    write_run(first, tmp_path / "first.run", tag="a")
    write_run(second, tmp_path / "second.run", tag="b")
    fig, numbers = tmp_path / "figs" / "ranks.png", tmp_path / "ranks.json"
    assert tables.main(["figure", "ranks", "--run", f"BM25:{tmp_path / 'first.run'}", "--run", f"BERT:{tmp_path / 'second.run'}",
                        "--qrels", str(tmp_path / "qrels"), "--depth", "3", "--out", str(fig), "--numbers", str(numbers)]) == 0
    stored = json.loads(numbers.read_text())
    assert stored["numbers"]["judged_queries"] == 5
    assert stored["numbers"]["systems"]["BM25"] == {"queries": 4, "missing_from_run": 1, "rr": pytest.approx((0.5 + 1 + 0.5) / 4),
                                                    "counts": {"1": 1, "2": 2, "3": 0, "not in top 3": 1}}
    assert stored["numbers"]["systems"]["BERT"]["counts"] == {"1": 2, "2": 2, "3": 0, "not in top 3": 1}
    assert sorted(stored["provenance"]["inputs_sha256"]) == sorted(str(tmp_path / n) for n in ("qrels", "first.run", "second.run"))
    assert fig.read_bytes()[:4] == b"\x89PNG" and fig.stat().st_size > 10_000
    strict = tables.main(["figure", "ranks", "--run", f"BM25:{tmp_path / 'first.run'}", "--qrels", str(tmp_path / "qrels"),
                          "--depth", "3", "--relevant-min-grade", "2", "--out", str(fig), "--numbers", str(numbers)])
    assert strict == 0 and json.loads(numbers.read_text())["numbers"]["systems"]["BM25"]["counts"] == {
        "1": 0, "2": 0, "3": 1, "not in top 3": 1}


def checkpoint_dir(path, losses, validation, prior, selected):
    path.mkdir()
    (path / "reranker.json").write_text(json.dumps({"steps": len(losses), "final_loss": losses[-1],
                                                    "validation": {"selected_step": selected, "prior_loss": prior}}))
    (path / "train_log.jsonl").write_text("".join(json.dumps({"step": i + 1, "epoch": 0.1, "loss": loss, "lr": 1e-5, "width": 64})
                                                  + "\n" for i, loss in enumerate(losses)))
    (path / "validation_log.jsonl").write_text("".join(json.dumps({"step": step, "epoch": 0.1, "validation_loss": loss,
                                                                   "validation_mrr": 0.5, "prior_loss": prior}) + "\n"
                                                       for step, loss in validation.items()))
    return path


def test_figure_curves_from_checkpoint_logs(tmp_path, capsys):
    from reranker.report.figures import moving_average

    assert moving_average([1.0, 0.0, 0.0]) == pytest.approx([1.0, 0.95, 0.9025])
    a = checkpoint_dir(tmp_path / "a", [0.7, 0.5, 0.4, 0.35], {0: 0.66, 2: 0.5, 4: 0.45}, 0.6, 4)
    b = checkpoint_dir(tmp_path / "b", [0.8, 0.7, 0.69, 0.68], {0: 0.7, 2: 0.65, 4: 0.62}, 0.61, 2)
    fig, numbers = tmp_path / "curves.png", tmp_path / "curves.json"
    for what in ("both", "validation"):
        assert tables.main(["figure", "curves", "--checkpoint", f"small:{a}", "--checkpoint", f"tiny:{b}", "--what", what,
                            "--title", "held-out loss", "--out", str(fig), "--numbers", str(numbers)]) == 0
        assert capsys.readouterr().out.split() == [str(fig), str(numbers)]
        assert fig.read_bytes()[:4] == b"\x89PNG" and fig.stat().st_size > 10_000
    stored = json.loads(numbers.read_text())["numbers"]
    assert stored["small"] == {"validation_loss": {"0": 0.66, "2": 0.5, "4": 0.45}, "final_training_loss": 0.35,
                               "selected_step": 4, "prior_loss": 0.6}
    (a / "validation_log.jsonl").unlink()
    assert tables.main(["figure", "curves", "--checkpoint", f"small:{a}", "--checkpoint", f"tiny:{b}",
                        "--out", str(fig), "--numbers", str(numbers)]) == 0
    stored = json.loads(numbers.read_text())["numbers"]
    assert stored["small"]["validation_loss"] == {} and stored["small"]["final_training_loss"] == 0.35
    assert stored["tiny"]["final_training_loss"] == 0.68 and stored["tiny"]["selected_step"] == 2
    assert tables.main(["figure", "curves", "--checkpoint", f"small:{a}", "--what", "validation", "--out", str(tmp_path / "x.png")]) == 2
    assert "validation_log.jsonl" in capsys.readouterr().err and not (tmp_path / "x.png").exists()


def test_figure_sweep_numbers_per_label_measure_and_x(tmp_path, capsys):
    from reranker.__main__ import main as reranker_main

    specs = []
    for x, rr, recall in ((100, 0.35, 0.6), (10, 0.30, 0.5), (20, 0.33, 0.55)):
        specs += [f"{x}:BERT:{write_eval(tmp_path / f'bert{x}.json', {'RR@10': rr, 'R@10': recall})}",
                  f"{x}:BM25:{write_eval(tmp_path / f'bm25{x}.json', {'RR@10': 0.18, 'R@10': 0.4})}"]
    fig, numbers = tmp_path / "sweep.png", tmp_path / "sweep.json"
    assert reranker_main(["tables", "figure", "sweep", *[a for spec in specs for a in ("--eval", spec)], "--measures", "RR@10",
                          "R@10", "--out", str(fig), "--numbers", str(numbers), "--logx"]) == 0
    stored = json.loads(numbers.read_text())["numbers"]
    assert stored["BERT"] == {"RR@10": {"10": 0.30, "20": 0.33, "100": 0.35}, "R@10": {"10": 0.5, "20": 0.55, "100": 0.6}}
    assert list(stored["BERT"]["RR@10"]) == ["10", "20", "100"] and stored["BM25"]["R@10"]["20"] == 0.4
    assert fig.read_bytes()[:4] == b"\x89PNG" and fig.stat().st_size > 10_000
    capsys.readouterr()
    assert tables.main(["figure", "sweep", "--eval", specs[0], "--measures", "nDCG@20", "--out", str(tmp_path / "x.png")]) == 2
    assert "nDCG@20" in capsys.readouterr().err and not (tmp_path / "x.png").exists()


BENCHMARK_HEADER = "s\th:m:s\tmax_rss\tmax_vms\tmax_uss\tmax_pss\tio_in\tio_out\tmean_load\tcpu_time\n"


def write_benchmark(folder, stage, name, seconds, end, rss=100.0, cpu=None):
    """A job's benchmark file in Snakemake's layout, ending at `end` (epoch seconds, the file's mtime)."""
    import os

    path = folder / stage / f"{name}.tsv"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BENCHMARK_HEADER + f"{seconds}\t0:00:00\t{rss}\t1\t1\t1\t0\t0\t50\t{seconds if cpu is None else cpu}\n")
    os.utime(path, (end, end))


def test_resources_table_sums_jobs_and_counts_side_by_side_jobs_once_in_the_wall_clock(tmp_path):
    """Two 60 s jobs side by side and a 30 s one after a 10 s gap: 150 s of job time, 90 s busy; with a
    measured wall clock of 100 s, the note says the jobs cover 90% and names the rest."""
    from reranker.formats.benchmarks import busy_seconds, read_benchmarks

    bench = tmp_path / "run" / "benchmarks"
    write_benchmark(bench, "index", "cranfield", 60, 1_000_060, rss=900)
    write_benchmark(bench, "retrieve", "cranfield.bm25", 60, 1_000_060, rss=1200)
    write_benchmark(bench, "score", "cranfield.scifact.sentences", 30, 1_000_100, rss=2000, cpu=55)
    meta = tmp_path / "run" / "work" / "scores" / "cranfield" / "scifact" / "bm25.k30.sentences.tsv.meta.json"
    meta.parent.mkdir(parents=True)
    meta.write_text(json.dumps({"pairs": 3000, "seconds": 30.0, "device_usage": {
        "gpu": "none", "gpu_peak_memory_mib": "none", "gpu_energy_joules": "none"}}))
    run_json = tmp_path / "run.json"
    run_json.write_text(json.dumps({"wall_clock_seconds": 100.0}))
    jobs = read_benchmarks(bench)
    assert [job.stage for job in jobs] == ["index", "retrieve", "score"]
    assert busy_seconds(jobs) == pytest.approx(90)
    out = tmp_path / "tables" / "resources"
    assert tables.main(["resources", "--run-dir", str(tmp_path / "run"), "--wall-clock", str(run_json),
                        "--formats", "md", "csv", "--out", str(out), "--numbers", str(tmp_path / "resources.json")]) == 0
    numbers = json.loads((tmp_path / "resources.json").read_text())
    rows = numbers["numbers"]["resources"]
    assert list(rows) == ["index · cranfield", "retrieve · cranfield", "score · cranfield", "sum"]
    assert rows["sum"]["time (s)"] == 150 and rows["sum"]["jobs"] == 3 and rows["sum"]["max RSS (MiB)"] == 2000
    assert rows["score · cranfield"]["pairs/s"] == 100.0 and rows["score · cranfield"]["CPU time (s)"] == 55
    assert rows["score · cranfield"]["GPU"] == "none" and rows["index · cranfield"]["GPU"] == "–"
    assert "time (s)" in numbers["machine_dependent"]  # timings are shown by compare, never compared
    text = out.with_suffix(".md").read_text()
    assert "2.5 min" in text and "1.5 min" in text and "90% of it" in text and "The rest, 0.2 min" in text


def test_resources_table_without_benchmarks_is_an_error_and_writes_nothing(tmp_path, capsys):
    (tmp_path / "run" / "benchmarks").mkdir(parents=True)
    assert tables.main(["resources", "--run-dir", str(tmp_path / "run"), "--out", str(tmp_path / "resources")]) == 2
    assert "no job benchmarks" in capsys.readouterr().err and not list(tmp_path.glob("resources*"))


def test_finish_times_the_run_and_its_parts_then_makes_the_resources_table_with_that_wall_clock(tmp_path, capsys):
    """`python -m reranker.workflow.finish`, make run's steps after the DAG, without the report: run.json from the
    run's log, the time of a paper's part its jobs ran, another part's file kept, the resources table."""
    from reranker.workflow import finish

    run = tmp_path / "run"
    a1, a2 = snakemake_job("09:00:00", "09:10:00", "train", 1, "checkpoints/radboud-swap-g1-f1/reranker.json")
    b1, b2 = snakemake_job("09:10:00", "09:40:00", "index", 2, "indexes/cranfield")
    log = run / "logs" / "2026-11-23T085900.000000.snakemake.log"
    log.parent.mkdir(parents=True)
    log.write_text("  Date: 2026-11-23 08:59:00\n" + a1 + a2 + b1 + b2 + "2 of 2 steps (100%) done\nElapsed time: 0:41:00\n")
    ntnu = run / "numbers" / "ntnu_time.json"
    ntnu.parent.mkdir(parents=True)
    ntnu.write_text('{"wall_clock_seconds": 60.0}')  # timed by an earlier stretch: no NTNU job ran in this one
    write_benchmark(run / "benchmarks", "train", "radboud-swap-g1-f1", 600, 1_000_600)
    write_benchmark(run / "benchmarks", "index", "cranfield", 1800, 1_002_400)
    assert finish.main(["--run-dir", str(run), "--command", "make run", "--no-report"]) == 0
    assert json.loads((run / "numbers" / "run.json").read_text())["wall_clock_seconds"] == 41 * 60
    radboud = json.loads((run / "numbers" / "radboud_time.json").read_text())
    assert radboud["wall_clock_seconds"] == 10 * 60 and radboud["jobs"] == 1 and radboud["command"] == "make run"
    assert ntnu.read_text() == '{"wall_clock_seconds": 60.0}' and "ntnu_time.json kept" in capsys.readouterr().err
    rows = json.loads((run / "numbers" / "resources.json").read_text())["numbers"]["resources"]
    assert set(rows) == {"index · cranfield", "train · radboud-*", "sum"}  # the paper's checkpoints: one row
    assert "wall clock (Snakemake's logs, numbers/run.json): 41.0 min" in (run / "tables" / "resources.md").read_text()
    assert (run / "tables" / "resources.html").exists() and not (run / "report.html").exists()
    # the report, made by the DAG's own command: tests/test_kill_resume.py's `make run`
    assert finish.main(["--run-dir", str(tmp_path / "none"), "--no-report"]) == 2  # no log to time: one line, exit 2
    assert "no *.snakemake.log" in capsys.readouterr().err


def test_finish_keeps_a_parts_records_in_its_own_folder(tmp_path):
    """A part of the default (`make run PART=name`, `part:` in the run's resolved configuration) times itself into
    parts/<name>/, so that the whole run's numbers/run.json and resources table stay the whole run's."""
    from reranker import experiments
    from reranker.core.config import write_resolved
    from reranker.workflow import finish

    run = tmp_path / "run"
    a1, a2 = snakemake_job("09:00:00", "09:10:00", "train", 1, "checkpoints/radboud-swap-g1-f1/reranker.json")
    log = run / "logs" / "2026-11-23T085900.000000.snakemake.log"
    log.parent.mkdir(parents=True)
    log.write_text("  Date: 2026-11-23 08:59:00\n" + a1 + a2 + "1 of 1 steps (100%) done\nElapsed time: 0:11:00\n")
    write_benchmark(run / "benchmarks", "train", "radboud-swap-g1-f1", 600, 1_000_600)
    write_resolved(experiments.load_config(overrides={"part": "radboud-2a", "run_dir": str(run)}), run / "config.yaml",
                   ["workflow/config/config.yaml"])
    assert finish.main(["--run-dir", str(run), "--command", "make run PART=radboud-2a", "--no-report"]) == 0
    record = json.loads((run / "parts" / "radboud-2a" / "run.json").read_text())
    assert record["wall_clock_seconds"] == 11 * 60 and record["command"] == "make run PART=radboud-2a"
    assert (run / "parts" / "radboud-2a" / "resources.md").exists() and not (run / "numbers").exists()


def test_device_usage_says_none_on_a_cpu_and_parts_combine():
    import torch

    from reranker.core.hardware import DeviceUsage, combine_usage, machine

    usage = DeviceUsage(torch.device("cpu")).record()
    assert usage == {"gpu": "none", "gpu_peak_memory_mib": "none", "gpu_energy_joules": "none"}
    assert combine_usage([usage, None]) == usage
    gpu = {"gpu": "NVIDIA H100", "gpu_peak_memory_mib": 900.0, "gpu_energy_joules": 50.0}
    assert combine_usage([gpu, {**gpu, "gpu_peak_memory_mib": 1200.0, "gpu_energy_joules": 25.0}]) == {
        "gpu": "NVIDIA H100", "gpu_peak_memory_mib": 1200.0, "gpu_energy_joules": 75.0}
    assert combine_usage([gpu, {**gpu, "gpu_energy_joules": "none"}])["gpu_energy_joules"] == "none"
    assert set(machine()) == {"cpu", "cpu_bf16", "threads", "gpu"}


def test_a_held_out_loss_within_the_margin_of_the_prior_is_not_called_learning():
    """0.371 against a prior of 0.377 was stored as "below the prior on 5 of 5 folds"; it is noise."""
    def meta(loss):
        return {"steps": 150, "validation": {"loss": loss, "prior_loss": 0.377, "selected_step": 150, "select": "loss",
                                             "untrained_loss": 0.69, "pairs": 100}}
    assert "within the 5% margin: it did not learn" in notes.checkpoint_note("baseline", meta(0.371))
    assert "17% below it)" in notes.checkpoint_note("baseline", meta(0.313))
    note = notes.folds_note("baseline", [meta(0.371), meta(0.313), meta(0.380)])
    assert note.endswith("more than 5% below the prior (learned) on 1 of 3 folds.")


SOURCE_YAML = """
sources:
  thesis: {work: "Someone (2021), A Thesis", where: "seed x.txt"}
tables:
  t:
    source: thesis
    table: "Table 9"
    at: "lr 3e-5"
    note: "its own nDCG@20 on its own split"
    cells:
      - {row: better, source_row: "BERT", column: nDCG@20, at: "lr 3e-5", value: 0.5439, where: "x.txt, Table 9, line 3"}
      - {row: better, source_row: "BERT", column: nDCG@20, at: "lr 2e-5", value: 0.5445, where: "x.txt, Table 9, line 3"}
      - {row: null, source_row: "BERT-large", column: nDCG@20, at: "lr 3e-5", value: 0.61, where: "x.txt, Table 9, line 4"}
"""


def _table_with_source(tmp_path):
    from reranker.formats.source_numbers import read_source_numbers

    base, better, qrels = runs_and_qrels()
    table = Table("test", ["synthetic"], MEASURES)
    baseline = evaluate(base, qrels, MEASURES)
    add_system(table, "baseline", "synthetic", baseline)
    add_system(table, "better", "synthetic", evaluate(better, qrels, MEASURES), baseline)
    (tmp_path / "sources.yaml").write_text(SOURCE_YAML)
    table.source = read_source_numbers(tmp_path / "sources.yaml")["t"]
    return table


def test_the_sources_numbers_stand_beside_ours_at_our_setting_and_all_in_a_block(tmp_path):
    table = _table_with_source(tmp_path)
    md, csv_text, tex, html = (p.read_text() for p in table.write(tmp_path / "t", ["md", "csv", "tex", "html"]))
    header = [cell.strip() for cell in md.splitlines()[2].strip("|").split("|")]
    assert header[3:5] == ["nDCG@20", "nDCG@20 §"]  # the source's column right after ours
    better = next(line for line in md.splitlines() if line.startswith("| better"))
    assert "0.5439" in better and "0.5445" not in better  # only our setting's value beside our row
    baseline_line = next(line for line in md.splitlines() if line.startswith("| baseline"))
    assert [cell.strip() for cell in baseline_line.strip("|").split("|")][4] == "–"
    block = md.split("Table 9 (§)")[1]  # every number of the source, as published, under ours
    assert all(value in block for value in ("0.5439", "0.5445", "0.61")) and "BERT-large" in block
    assert "lr 3e-5" in md and "x.txt" not in md.split("Table 9 (§)")[0]
    assert "§ BERT-large,synthetic,nDCG@20 (lr 3e-5),0.61," in csv_text
    assert "\\S{}" in tex and "0.5445" in tex and "0.5445" in html
    assert not table.best("synthetic", SOURCE_COLUMN + "nDCG@20")  # never bold


def _row_cells(md: str, row: str) -> dict[str, str]:
    """Header label -> cell text of `row` in a rendered Markdown table (the first table of `md`)."""
    lines = md.splitlines()
    header = [cell.strip() for cell in lines[2].strip("|").split("|")]
    line = next(line for line in lines if line.startswith(f"| {row} |"))
    return dict(zip(header, (cell.strip() for cell in line.strip("|").split("|"))))


def test_a_source_cell_at_another_setting_than_ours_names_it(tmp_path):
    """The § column once mixed settings silently. Where our rows' setting (`ours`) is not the setting of the
    source's cell beside them, the cell names its setting, and the caption says what ours is."""
    table = _table_with_source(tmp_path)
    md = table.to_markdown()
    assert _row_cells(md, "better")["nDCG@20 §"] == "0.5439"  # at our setting: the number alone
    assert "so a cell at another setting" not in md
    (tmp_path / "ours.yaml").write_text(SOURCE_YAML.replace('at: "lr 3e-5"\n    note', 'at: "lr 3e-5"\n    ours: "lr 1e-4"\n    note'))
    from reranker.formats.source_numbers import read_source_numbers

    table.source = read_source_numbers(tmp_path / "ours.yaml")["t"]
    assert table.source.ours == "lr 1e-4" and table.source.at == "lr 3e-5"
    md, tex, html = table.to_markdown(), table.to_latex(), table.to_html()
    assert _row_cells(md, "better")["nDCG@20 §"] == "0.5439 (lr 3e-5)"
    assert _row_cells(md, "baseline")["nDCG@20 §"] == "–"
    assert "at lr 3e-5; ours is lr 1e-4, so a cell at another setting names it in brackets." in md
    assert "0.5439 (lr 3e-5)" in tex and "0.5439 (lr 3e-5)" in html
    assert not table.best("synthetic", SOURCE_COLUMN + "nDCG@20")


def test_a_source_collection_that_is_none_of_ours_gets_columns_of_its_own(tmp_path):
    """Birch's predecessor reports Robust04, none of our collections: its cells beside our rows stand in a group of
    their own after ours (never in place of our cells), in every format."""
    from reranker.formats.source_numbers import read_source_numbers

    table = _table_with_source(tmp_path)
    (tmp_path / "robust.yaml").write_text(SOURCE_YAML.replace('column: nDCG@20, at: "lr 3e-5", value: 0.5439',
                                                              'group: Robust04, column: AP@1000, at: "lr 3e-5", value: 0.3266'))
    table.source = read_source_numbers(tmp_path / "robust.yaml")["t"]
    md, tex = table.to_markdown(), table.to_latex()
    header = [cell.strip() for cell in md.splitlines()[2].strip("|").split("|")]
    assert header[-1] == "Robust04 AP §" and "nDCG@20 §" not in header and "AP §" not in header
    assert _row_cells(md, "better")["Robust04 AP §"] == "0.3266" and _row_cells(md, "baseline")["Robust04 AP §"] == "–"
    assert "Robust04: the source's collection, none of ours, in columns of their own." in md
    assert "\\multicolumn{3}{c}{synthetic} & \\multicolumn{1}{c}{Robust04}" in tex
    assert "| Table 9 (§) | Robust04 AP (lr 3e-5) |" in md  # and in the block, as published


STORED = Path(__file__).resolve().parent.parent / "results"
SOURCE_NUMBERS_FILE = Path(__file__).resolve().parent.parent / "workflow" / "config" / "source_numbers.yaml"


def _rerender(table_id: str, tmp_path) -> str:
    (tmp_path / f"{table_id}.json").write_text((STORED / "numbers" / f"{table_id}.json").read_text(encoding="utf-8"), encoding="utf-8")
    assert tables.main(["rerender", "--numbers", str(tmp_path / f"{table_id}.json"), "--out", str(tmp_path / table_id),
                        "--formats", "md", "--sources", str(SOURCE_NUMBERS_FILE)]) == 0
    return (tmp_path / f"{table_id}.md").read_text(encoding="utf-8")


def test_the_stored_tables_name_the_setting_of_each_source_cell_that_is_not_ours(tmp_path):
    """radboud_3_4's 0.5389 is the thesis' lr 2e-5 (ours: lr 3e-5), radboud_2_2's 0.7107 its lr 2e-5, 2 epochs, batch
    16 (ours: lr 1e-4, 1 epoch); both say so. A § cell without a setting is one the source has at our setting."""
    radboud_3_4 = _rerender("radboud_3_4", tmp_path)
    assert _row_cells(radboud_3_4, "Regression, binary (0/1)")["nDCG@20 (thesis) §"] == "0.5389 (lr 2e-5, 1 epoch)"
    assert "ours is lr 3e-5, 1 epoch" in radboud_3_4
    radboud_2_2 = _rerender("radboud_2_2", tmp_path)
    assert _row_cells(radboud_2_2, "MLM, random tokens")["after §"] == "0.7107 (lr 2e-5, 2 epochs, batch size 16)"
    assert "ours is lr 1e-4, 1 epoch, batch size 16" in radboud_2_2
    import yaml

    document = yaml.safe_load(SOURCE_NUMBERS_FILE.read_text(encoding="utf-8"))
    for table_id, entry in document["tables"].items():
        if not (STORED / "numbers" / f"{table_id}.json").exists():
            continue
        ours = entry.get("ours", entry.get("at"))
        md = _rerender(table_id, tmp_path)
        header = [cell.strip() for cell in md.splitlines()[2].strip("|").split("|")]
        for line in md.split("\n\n")[1].splitlines()[2:]:
            cells = dict(zip(header, (cell.strip() for cell in line.strip("|").split("|"))))
            for label, text in cells.items():
                if not label.endswith(" §") or text == "–":
                    continue
                value, _, setting = text.partition(" (")
                at = setting.rstrip(")") or ours  # no setting named: the source's cell is at ours
                assert any(cell["row"] == cells[header[0]] and abs(cell["value"] - float(value)) < 5e-5
                           and cell.get("at", entry.get("at")) == at for cell in entry["cells"]), (table_id, label, text)
                assert not setting or at != ours, (table_id, label, text)


def test_birchs_predecessor_stands_beside_birch_main_in_robust04_columns(tmp_path):
    """The arXiv predecessor's Robust04 cells at 5-fold CV (ours) beside our BM25+RM3 and fine-tuned cross-encoder
    rows, in columns of their own; both cross-validations in the block under the table, named as what they are."""
    md = _rerender("birch_main", tmp_path)
    header = [cell.strip() for cell in md.splitlines()[2].strip("|").split("|")]
    assert header[-2:] == ["Robust04 AP §", "Robust04 P@20 §"]
    assert not any(label.endswith("§") for label in header[:-2])  # none of our collections' cells is replaced
    assert [_row_cells(md, "BM25+RM3")[c] for c in header[-2:]] == ["0.3033", "0.3974"]
    for n, (ap, p20) in {1: ("0.3266", "0.4245"), 2: ("0.3278", "0.4267"), 3: ("0.3278", "0.4287")}.items():
        assert [_row_cells(md, f"BERT(SciFact+titles, soft labels 0.8) {n}S")[c] for c in header[-2:]] == [ap, p20]
        assert _row_cells(md, f"Bi-encoder MiniLM-L6 (SciFact+titles) {n}S")["Robust04 AP §"] == "–"
    block = md.split("(§) |")[0].rsplit("\n", 1)[1] + md.split("(§) |")[1]
    assert "not EMNLP Table 1" in block and "arXiv 1903.10972" in md.rsplit("\n§ ", 1)[1]
    assert "| 3S: BERT(QA) | 0.3003 | 0.3948 | 0.309 | 0.4064 |" in block and "Paper 1 (two fold)" in block


def test_a_stored_table_renders_again_from_its_numbers_with_cells_pending(tmp_path):
    table = _table_with_source(tmp_path)
    table.source = None
    table.notes.append("a note")
    first = table.write(tmp_path / "a", ["md", "csv", "tex", "html"])
    write_numbers(table, tmp_path / "a.json", {"command": "test"})
    again = Table.from_document(json.loads((tmp_path / "a.json").read_text()))
    assert [p.read_text() for p in again.write(tmp_path / "b", ["md", "csv", "tex", "html"])] == [p.read_text() for p in first]
    (tmp_path / "sources.yaml").write_text(SOURCE_YAML)
    assert tables.main(["rerender", "--numbers", str(tmp_path / "a.json"), "--out", str(tmp_path / "a"),
                        "--formats", "md", "csv", "--pending", "*:better:nDCG@20", "--measures", *MEASURES, "RadboudNDCG@20",
                        "--pending-why", "read with the grades upside down", "--sources", str(tmp_path / "sources.yaml"),
                        "--source-table", "t"]) == 0
    md = (tmp_path / "a.md").read_text()
    better = next(line for line in md.splitlines() if line.startswith("| better"))
    cells = [cell.strip() for cell in better.strip("|").split("|")]
    assert cells[3] == "pending" and cells[4] == "0.5439" and cells[-1] == "pending"
    assert "pending: read with the grades upside down" in md
    stored = json.loads((tmp_path / "a.json").read_text())
    assert ["better", "synthetic", "nDCG@20"] in stored["layout"]["pending"]
    assert "better,synthetic,nDCG@20,pending," in (tmp_path / "a.csv").read_text()


def test_a_source_cell_without_a_number_or_its_keys_is_refused(tmp_path):
    from reranker.formats.errors import InputError
    from reranker.formats.source_numbers import read_source_numbers

    (tmp_path / "s.yaml").write_text(SOURCE_YAML.replace("value: 0.61", "value: n/a"))
    with pytest.raises(InputError, match=r"tables.t.cells\[2\].value: expected a finite number, found 'n/a'"):
        read_source_numbers(tmp_path / "s.yaml")
    (tmp_path / "s.yaml").write_text(SOURCE_YAML.replace(", where: \"x.txt, Table 9, line 4\"", ""))
    with pytest.raises(InputError, match=r"cells\[2\]: missing where"):
        read_source_numbers(tmp_path / "s.yaml")


def test_a_row_over_fewer_queries_is_marked_with_its_count_and_never_bold(tmp_path):
    """Two rows of one column, 1.0 on the query both have; one also has a query at 0.5. The short row's mean (1.0)
    is higher but over other queries: it prints its count and the full row is the column's best."""
    short, full = tmp_path / "short.json", tmp_path / "full.json"
    short.write_text(json.dumps({"measures": ["AP@1000"], "queries": 1, "aggregate": {"AP@1000": 1.0},
                                 "per_query": {"AP@1000": {"1": 1.0}}}))
    full.write_text(json.dumps({"measures": ["AP@1000"], "queries": 2, "aggregate": {"AP@1000": 0.75},
                                "per_query": {"AP@1000": {"1": 1.0, "2": 0.5}}}))
    out = tmp_path / "t"
    assert tables.main(["results", "--eval", f"c:Short:{short}", f"c:Full:{full}", "--measures", "AP@1000",
                        "--formats", "md", "tex", "html", "--out", str(out), "--numbers", str(tmp_path / "n.json")]) == 0
    md = out.with_suffix(".md").read_text()
    assert "| Short | 1.0000 (n=1) |" in md and "| Full | **0.7500** |" in md
    assert "Queries: every cell averages over 2 queries; a cell marked (n=K)" in md
    assert "\\textbf{1.0000" not in out.with_suffix(".tex").read_text()
    # rendered again from its numbers (what a stored table is), the same marks
    again = Table.from_document(json.loads((tmp_path / "n.json").read_text()))
    assert again.best("c", "AP@1000") == {"Full"} and again.text("Short", "c", "AP@1000") == "1.0000 (n=1)"


def test_rows_that_are_not_compared_each_say_their_queries():
    table = Table("baselines", ["BM25"], ["AP@1000"], row_header="Collection", bold_best=False)
    for row, qids in (("cranfield", "123"), ("cacm", "12")):
        table.add(row, "BM25", "AP@1000", 0.5)
        table.per_query[(row, "BM25", "AP@1000")] = {q: 0.5 for q in qids}
    md = table.to_markdown()
    assert "Queries per cell: cranfield 3, cacm 2." in md and "(n=" not in md
