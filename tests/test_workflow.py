"""The Snakemake DAG end to end: the quick profile computes every table under its own run folder and
ends with the comparison against the stored reference (results/quick/), which must find no drift."""

from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from reranker.formats.evidence import evidence_path, read_evidence, total
from reranker.formats.ir_metadata import run_body
from reranker.formats.runs import read_run
from reranker.formats.sidecar import record_sidecar
from reranker.formats.unit_scores import read_unit_scores
from reranker.ranking.evidence import move
from reranker.reproduction.reference import AFTER_COMPARISON
from tests.background import DETERMINISM_TARGETS
from tests.test_container import result_tables

REPO = Path(__file__).resolve().parent.parent
pytestmark = [pytest.mark.slow, pytest.mark.dag]
BROWSERS = ("chromium-headless-shell", "chromium", "chromium-browser", "google-chrome")


def snakemake(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=cwd, capture_output=True, text=True,
                          env=os.environ.copy(), timeout=3600)


@pytest.fixture(scope="module")
def quick_run(dag_runs) -> Path:
    """The quick profile, started with the session (conftest.dag_runs) into a temporary run folder; its last
    rule compares with results/quick/. Then a dry run, which must find nothing to do."""
    done = dag_runs["quick"].wait()
    assert done.returncode == 0, done.stdout[-12000:]
    out = dag_runs["quick"].run_dir
    print(f"quick DAG: {dag_runs['quick'].took() / 60:.1f} min beside the other tests")
    rerun = snakemake("--profile", "workflow/profiles/quick", "--cores", "2", "-n", "--config", f"run_dir={out}")
    assert rerun.returncode == 0
    out.parent.joinpath("rerun.log").write_text(rerun.stdout + rerun.stderr)
    return out


# The files compared: the published tables (timing columns blanked) and every data file between the stages.
# Not compared: logs, benchmarks and metas (times), numbers/ (provenance names the run folder), Lucene's
# index files (segment ids are random), the resolved config (it names the run folder).
COMPARED = ("tables/*.md", "tables/*.csv", "tables/*.tex", "folds/*", "work/runs/*/*", "work/eval/*/*",
            "work/segments/*/*", "work/scores/*/*/*.tsv", "work/scores/*/*.tsv", "work/fusion/*/*",
            "work/collections/*/*", "work/folds/*", "work/checkpoints/*/*.safetensors")


@pytest.fixture(scope="module")
def second_run(dag_runs) -> Path:
    """Part of the quick DAG (tests/background.py: DETERMINISM_TARGETS) once more, from nothing, into a
    second run folder: no state shared with the first but the read-only caches."""
    done = dag_runs["second"].wait()
    assert done.returncode == 0, done.stdout[-12000:]
    return dag_runs["second"].run_dir


def compared_files(run: Path) -> list[str]:
    """The run's files that a rerun from nothing must give byte for byte, relative to the run folder."""
    return sorted({str(p.relative_to(run)) for pattern in COMPARED for p in run.glob(pattern)
                   if p.is_file() and not p.name.endswith(".meta.json") and p.stem not in AFTER_COMPARISON})


# Scores are cached by content and shared by a run's jobs, so a unit scored first in another job's batch
# (Vaswani's sentences by its passages job, whose order the scheduler picks) carries that batch's fp32
# rounding: measured, 29 of 467 scores differed in the 8th digit (-0.772006989 vs -0.772007048), and the
# fused run's scores by up to ~1e-7, between two runs whose jobs ran in other orders. So score files and
# TREC runs are compared as what their readers give, (query, document) -> scores, to 1e-6 absolute (ranks
# of documents tied that closely may swap); everything else, tables included, byte for byte.
def evidence_numbers(path: Path) -> dict[str, dict[str, list[float]]]:
    """A fused run's evidence as its numbers per (query, document): the fused score and each term's contribution
    (gzipped, with its inputs' paths in the header: compared as read, like the run beside it)."""
    numbers: dict[str, dict[str, list[float]]] = {}
    for r in read_evidence(path)[1]:
        numbers.setdefault(r["qid"], {})[r["doc_id"]] = [r["fused"]["score"], r["doc"]["contribution"]] + [
            s["contribution"] for s in r["sentences"]]
    return numbers


READERS = {".tsv": read_unit_scores, ".run": read_run, ".gz": evidence_numbers}


def write_scores(path: Path, text: str) -> None:
    """A scores file written by hand, with the sidecar score would write (readers refuse one without)."""
    path.write_text(text)
    record_sidecar(path)


def same_scores(a: Path, b: Path) -> bool:
    # A run's header names its own command and resources: bodies byte for byte equal are the same run
    # (the first-stage runs, ~30 MB each, need no parse). Else one vectorised comparison: one np.allclose per
    # pair of scores made this test take 66 s on 4.5M pairs.
    if a.suffix == ".run" and run_body(a) == run_body(b):
        return True
    x, y = READERS[a.suffix](a), READERS[a.suffix](b)
    if x.keys() != y.keys() or any(x[q].keys() != y[q].keys() for q in x):
        return False
    keys = [(q, d) for q in x for d in x[q]]
    (x_sizes, x_values), (y_sizes, y_values) = flat(x, keys), flat(y, keys)
    return x_sizes == y_sizes and np.allclose(x_values, y_values, rtol=0, atol=1e-6)


def flat(numbers: dict, keys: list[tuple[str, str]]) -> tuple[list[int], np.ndarray]:
    """The numbers of `keys` in that order, as each key's count and one array (a run's score is one number)."""
    values = [numbers[q][d] if isinstance(numbers[q][d], list) else [numbers[q][d]] for q, d in keys]
    return [len(v) for v in values], np.fromiter(itertools.chain.from_iterable(values), dtype=float)


def differing_files(first: Path, second: Path) -> list[str]:
    """The second run's compared files that the first made otherwise (or did not make). Records that name
    their inputs (evaluations, fusion parameters) name them in their own run folder: that name is set aside."""
    def content(run: Path, name: str) -> bytes | str:
        path = run / name
        if path.parent.name == "tables" and path.suffix in (".md", ".csv"):
            return without_machine_columns(path)
        return path.read_bytes().replace(str(run).encode(), b"{run_dir}")

    def differs(name: str) -> bool:
        if not (first / name).is_file():
            return True
        a, b = content(first, name), content(second, name)
        if a == b:
            return False
        return not (name.startswith("work/") and Path(name).suffix in READERS and same_scores(first / name, second / name))
    return [name for name in compared_files(second) if differs(name)]


def without_machine_columns(table: Path) -> str:
    """A table's Markdown or CSV with the cells of its machine-dependent columns (timings) blanked."""
    numbers = table.parent.parent / "numbers" / f"{table.stem}.json"
    timed = set(json.loads(numbers.read_text()).get("machine_dependent", [])) if numbers.is_file() else set()
    if table.suffix == ".csv":  # system, collection, measure, value, significant
        rows = list(csv.reader(io.StringIO(table.read_text())))
        return repr([row[:3] + ["–"] + row[4:] if row[2] in timed else row for row in rows])
    lines = table.read_text().splitlines()
    header = next((line for line in lines if line.startswith("| ")), "")
    columns = [i for i, name in enumerate(header.split(" | ")) if name.strip(" |") in timed]
    return "\n".join(" | ".join("–" if i in columns else cell for i, cell in enumerate(line.split(" | ")))
                     if line.startswith("| ") else line for line in lines)


def test_a_second_run_from_nothing_gives_identical_bytes(quick_run, second_run):
    """Determinism: the same code, data and machine give the same tables and intermediate files, byte for
    byte, but for timings."""
    compared = compared_files(second_run)
    tables = [name for name in compared if name.startswith("tables/")]
    assert {f"tables/{Path(t).name}" for t in DETERMINISM_TARGETS if t.startswith("tables/")} <= set(tables), tables
    assert any(name.endswith(".safetensors") for name in compared) and any("birch.scifact-soft-80.3S" in name for name in compared)
    assert len(compared) > 40, compared
    differ = differing_files(quick_run, second_run)
    assert not differ, differ


def test_the_determinism_check_fails_on_a_changed_table_or_file(tmp_path):
    """The comparison above catches one changed digit in a table, and a changed score."""
    first, second = tmp_path / "first", tmp_path / "second"
    table = "| System | AP |\n|---|---:|\n| BM25 | 0.3131 |\n"
    for run, value, score in ((first, "0.3131", "0.5"), (second, "0.3132", "0.5")):
        (run / "tables").mkdir(parents=True)
        (run / "tables" / "t.md").write_text(table.replace("0.3131", value))
        (run / "work" / "scores" / "c" / "k").mkdir(parents=True)
        write_scores(run / "work" / "scores" / "c" / "k" / "s.tsv", f"1\td1\t0\t{score}\n")
    assert differing_files(first, second) == ["tables/t.md"]
    (second / "tables" / "t.md").write_text(table)
    assert differing_files(first, second) == []
    write_scores(second / "work" / "scores" / "c" / "k" / "s.tsv", "1\td1\t0\t0.50000001\n")  # fp32 rounding
    assert differing_files(first, second) == []
    write_scores(second / "work" / "scores" / "c" / "k" / "s.tsv", "1\td1\t0\t0.5001\n")
    assert differing_files(first, second) == ["work/scores/c/k/s.tsv"]
    write_scores(second / "work" / "scores" / "c" / "k" / "s.tsv", "1\td2\t0\t0.5\n")
    assert differing_files(first, second) == ["work/scores/c/k/s.tsv"]
    write_scores(second / "work" / "scores" / "c" / "k" / "s.tsv", "1\td1\t0\t0.5\n")
    for run in (first, second):  # a run: its header (own command) set aside, its scores compared
        (run / "work" / "runs" / "c").mkdir(parents=True)
        (run / "work" / "runs" / "c" / "x.run").write_text(
            f"# ir_metadata.start\n# command: {run.name}\n# ir_metadata.end\n1 Q0 d1 1 0.5 t\n1 Q0 d2 2 0.4 t\n")
    assert differing_files(first, second) == []
    (second / "work" / "runs" / "c" / "x.run").write_text("1 Q0 d1 1 0.50000001 t\n1 Q0 d2 2 0.4 t\n")
    assert differing_files(first, second) == []
    (second / "work" / "runs" / "c" / "x.run").write_text("1 Q0 d1 1 0.5001 t\n1 Q0 d2 2 0.4 t\n")
    assert differing_files(first, second) == ["work/runs/c/x.run"]


def test_dry_run_shows_the_dag(birch_data):
    done = snakemake("-n")
    assert done.returncode == 0, done.stderr[-4000:]
    for rule in ("export_collection", "index", "retrieve", "evaluate", "baselines_table", "birch_main_table"):
        assert rule in done.stdout + done.stderr


def test_quick_profile_writes_every_table(quick_run):
    for name in ("baselines.md", "baselines.csv", "dataset_stats.md", "birch_main.md", "birch_main.csv", "birch_main.tex"):
        assert (quick_run / "tables" / name).stat().st_size > 0, name
    assert (quick_run / "figures" / "birch_main_per_query_ap.png").stat().st_size > 0
    # Each fine-tuned checkpoint's held-out loss against the label prior: a curve and a note.
    table = (quick_run / "tables" / "birch_main.md").read_text()
    labels = {"scifact-soft-80": "BERT(SciFact+titles, soft labels 0.8)", "scifact-bi": "Bi-encoder MiniLM-L3 (SciFact+titles)"}
    for name, label in labels.items():
        assert (quick_run / "figures" / f"checkpoint_{name}_loss.png").stat().st_size > 0
        assert f"{label}: held-out loss" in table and "label prior" in table
    assert "Bi-encoder MiniLM-L3 (zero-shot) 1S" in table
    checkpoints = json.loads((quick_run / "numbers" / "birch_main.json").read_text())["provenance"]["checkpoints"]
    assert {v["validation"]["select"] for v in checkpoints.values()} == {"best"}


def rules_with_logs() -> dict[str, set[str]]:
    """Per rule of workflow/rules/*.smk, the directives it declares (log, benchmark, ...)."""
    found: dict[str, set[str]] = {}
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")):
        rule = None
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            match = re.match(r"^\s*rule( \w+)?:", line)
            if match:  # a rule made in a loop (`rule:` with `name:`) is known by its line
                rule = match.group(1).strip() if match.group(1) else f"{path.name}:{number}"
                found[rule] = set()
            elif rule and re.match(r"^\s+(\w+):\s*$", line):
                found[rule].add(line.strip().rstrip(":"))
    return found


def test_every_rule_that_does_work_declares_a_benchmark():
    """A rule with a log runs a stage: Snakemake's own benchmark times it (no hand-written timers)."""
    rules = rules_with_logs()
    assert len(rules) >= 25 and "train" in rules and any(rule.startswith("rerank.smk:") for rule in rules)  # segment, score
    missing = [rule for rule, directives in rules.items() if "log" in directives and "benchmark" not in directives]
    assert not missing, missing


def test_every_job_of_the_quick_run_has_a_benchmark_and_the_resources_table_sums_them(quick_run):
    # names hold dots (cranfield.bm25.log): cut the suffix as text, not with Path.with_suffix
    logs = sorted(str(p.relative_to(quick_run / "logs"))[: -len(".log")] for p in (quick_run / "logs").glob("*/*.log"))
    assert len(logs) > 50
    missing = [log for log in logs if not (quick_run / "benchmarks" / f"{log}.tsv").is_file()]
    assert not missing, missing
    numbers = json.loads((quick_run / "numbers" / "resources.json").read_text())
    rows = numbers["numbers"]["resources"]
    stages = {row.split(" · ")[0] for row in rows}
    assert {"export", "index", "retrieve", "train", "score", "fuse", "evaluate", "tables", "sum"} <= stages, stages
    # the resources job's own benchmark is written after it ends: every other job is in the sum
    assert rows["sum"]["jobs"] == len(logs) - 1
    assert rows["sum"]["time (s)"] == pytest.approx(sum(v["time (s)"] for k, v in rows.items() if k != "sum"), rel=1e-6)
    assert all(isinstance(rows[k]["pairs/s"], float) and rows[k]["pairs/s"] > 0 for k in rows if k.startswith("score"))
    assert {rows[k]["GPU"] for k in rows if k.startswith(("train", "score"))} == {"none"}  # a CPU run says so
    table = (quick_run / "tables" / "resources.md").read_text()
    assert "Machine: " in table and "| sum |" in table
    # Every stored number names the resources file of the run that made it.
    birch = json.loads((quick_run / "numbers" / "birch_main.json").read_text())
    assert birch["provenance"]["resources"] == str(quick_run / "numbers" / "resources.json")


def test_quick_profile_writes_every_radboud_table(quick_run):
    """Every Radboud code path (enrich, mlm, nsp, each objective and ranking) ends in a table."""
    for number in ("2_1", "2_2", "2_3", "2_4", "3_1", "3_2", "3_3", "3_4", "3_5"):
        for suffix in ("md", "csv", "tex"):
            assert (quick_run / "tables" / f"radboud_{number}.{suffix}").stat().st_size > 0, number
    # every checkpoint's held-out loss against its prior: a figure per variant (its folds) and per pre-training
    for figure in ("radboud_baseline_loss", "radboud_regression-binary_loss", "radboud_pretrain_mlm_loss"):
        assert (quick_run / "figures" / f"{figure}.png").stat().st_size > 1000, figure
    enrich = (quick_run / "tables" / "radboud_2_1.md").read_text()
    assert "| BM25 |" in enrich and "Enrich, swap" in enrich and "‡ against BERT baseline" in enrich
    assert "by level 4's score" in (quick_run / "tables" / "radboud_3_2.md").read_text()
    assert "MLM, consecutive tokens" in (quick_run / "tables" / "radboud_2_2.md").read_text()


def test_quick_profile_writes_every_ntnu_table_and_figure(quick_run):
    """Every NTNU code path (passages, head-only, seeds, layer slices, distillation, speed, sweep) ends in a table."""
    for number in ("5_1", "5_2", "5_3", "5_4", "5_5", "5_6"):
        for suffix in ("md", "csv", "tex"):
            assert (quick_run / "tables" / f"ntnu_{number}.{suffix}").stat().st_size > 0, number
    # the rows no table's figure draws have their own loss curve
    for figure in ("ntnu_5_1", "ntnu_5_3", "ntnu_5_4", "ntnu_candidates", "ntnu_head-only_loss", "ntnu_layers-4_loss",
                   "ntnu_distilled-layers-4_loss"):
        assert (quick_run / "figures" / f"{figure}.png").stat().st_size > 1000, figure
    size = (quick_run / "tables" / "ntnu_5_5.md").read_text()
    assert "Queries/min" in size and "| BM25 |" in size and "6/384" in size
    assert "Mean ± sd" in (quick_run / "tables" / "ntnu_5_4.md").read_text()
    assert "MaxP" in (quick_run / "tables" / "ntnu_5_1.md").read_text()


def test_the_run_readme_gives_every_seed_table_its_file_and_a_verdict(quick_run):
    readme = (quick_run / "README.md").read_text()
    for table in result_tables(quick_run / "tables"):
        assert f"tables/{table.stem}" in readme, table.stem
    # every claim found its rows in the quick run, but those whose rows the quick profile leaves out: Birch's
    # cross-domain rows (the paper profile's), table 5.2's plain-encoder pair, figure 5.4 from R = 20 on (its sweep
    # is R = 1, 2) and table 5.6's 2-layer student
    not_run = [line for line in readme.splitlines() if "not run:" in line]  # one line each, below its table
    expected = ["birch-* [123]S", "MiniLM-L6 plain, all parameters", "MiniLM-L6 plain, head only and BM25",
                "has no x = 20", "first 2 layers"]
    assert len(not_run) == len(expected) and all(e in line for e, line in zip(expected, not_run)), not_run
    assert "not checked" not in readme
    assert readme.count("**reproduced**") + readme.count("**contradicted**") + readme.count("**inconclusive**") >= 8
    assert "stored before issue 58" not in readme  # every table the run made stores its per-query values
    assert "Made by `snakemake --cores all --profile workflow/profiles/quick`" in readme
    assert (quick_run / "figures" / "ntnu_candidates.json").exists()
    # the figures' captions, kept where the report is not: each figure of the run has one, as stored
    made = (quick_run / "figures" / "captions.json").read_text()
    assert made == (REPO / "results" / "quick" / "figures" / "captions.json").read_text()
    assert {p.name for p in (quick_run / "figures").glob("*.png")} == set(json.loads(made))


@pytest.fixture(scope="module")
def quick_report(quick_run) -> Path:
    report = quick_run / "report.html"
    done = snakemake("--profile", "workflow/profiles/quick", "--config", f"run_dir={quick_run}", "--report", str(report))
    assert done.returncode == 0, done.stderr[-4000:]
    return report


def test_the_report_holds_every_table_and_figure_with_its_caption(quick_run, quick_report):
    """`snakemake --report`: each table (as HTML) and figure of the run, captioned from its rule."""
    html = quick_report.read_text()
    tables = sorted(p.stem for p in (quick_run / "tables").glob("*.md"))
    figures = sorted(p.name for p in (quick_run / "figures").glob("*.png"))
    assert len(tables) >= 17 and figures
    missing = [f"{t}.html" for t in tables if f"{t}.html" not in html] + [f for f in figures if f not in html]
    assert not missing, missing
    for table in ("birch_main", "ntnu_5_5", "radboud_2_1"):  # the caption is the table's first line, rendered
        caption = (quick_run / "tables" / f"{table}.md").read_text().split("\n", 1)[0].strip("*")
        assert caption[:60] in html, table


def test_the_report_and_every_figure_in_it_render_in_chromium(quick_run, quick_report):
    """Headless Chromium: a screenshot of the report's first page, then every figure embedded in it decoded
    and laid out by the browser (natural size above zero)."""
    browser = next((shutil.which(name) for name in BROWSERS if shutil.which(name)), None)
    if browser is None:
        pytest.skip(f"no headless Chromium ({', '.join(BROWSERS)}); `make browser` installs one on Debian")
    shot = quick_run / "report.png"
    flags = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1400,1000",
             "--virtual-time-budget=10000"]
    subprocess.run(flags + [f"--screenshot={shot}", quick_report.as_uri()], capture_output=True, timeout=300, check=True)
    assert len(Image.open(shot).convert("RGB").getcolors(1 << 24)) > 50  # more than a blank or error page
    figures = re.findall(r'"data_uri": "(data:image/png;[^",]*base64,[A-Za-z0-9+/=]+)"', quick_report.read_text())
    assert len(figures) == len(list((quick_run / "figures").glob("*.png"))), "a figure is missing from the report"
    gallery = quick_run / "report_figures.html"
    gallery.write_text("<html><body>" + "".join(f'<img src="{uri}">' for uri in figures) + "<script>onload = () => "
                       "document.body.setAttribute('data-rendered', [...document.images].filter(i => i.naturalWidth > 0"
                       " && i.getBoundingClientRect().height > 0).length)</script></body></html>")
    dom = subprocess.run(flags + ["--dump-dom", gallery.as_uri()], capture_output=True, text=True, timeout=300, check=True).stdout
    assert f'data-rendered="{len(figures)}"' in dom, dom[:300]


def test_explain_works_on_every_fused_run_of_the_quick_dag_and_the_report_shows_the_largest_moves(quick_run, quick_report):
    fused = sorted((quick_run / "work" / "runs").glob("*/birch.*.run"))
    assert len(fused) >= 18  # 2 targets x 3 checkpoints x 1S-3S
    for run in fused:  # each run's first document: its evidence adds up to the score the run holds
        record = next(read_evidence(evidence_path(run))[1])
        assert total(record) == record["fused"]["score"]
        assert f"{record['fused']['score']:.9g}" == f"{read_run(run)[record['qid']][record['doc_id']]:.9g}"
    # A known document: the one that moved most in Vaswani's 3S fusion, explained by the command line.
    run = quick_run / "work" / "runs" / "vaswani" / "birch.scifact-soft-80.3S.run"
    record = max(read_evidence(evidence_path(run))[1], key=lambda r: (abs(move(r)), r["qid"], r["doc_id"]))
    done = subprocess.run([sys.executable, "-m", "reranker", "explain", "--run", str(run), record["qid"], record["doc_id"]],
                          cwd=REPO, capture_output=True, text=True, env=os.environ.copy(), timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"first stage: rank {record['first_stage']['rank']}," in done.stdout
    assert f"fused:       rank {record['fused']['rank']}," in done.stdout
    assert all(f'"{s["text"]}"' in done.stdout for s in record["sentences"]) and record["sentences"]
    assert done.stdout.rstrip().endswith(f"= {record['fused']['score']:.6g}")
    page = (quick_run / "evidence" / "birch_moves.html").read_text()
    assert "<h2>vaswani: birch-3S" in page and "<h2>cranfield: birch-3S" in page and "Up most" in page
    assert "birch_moves.html" in quick_report.read_text()


def test_rerun_has_nothing_to_do(quick_run):
    log = (quick_run.parent / "rerun.log").read_text()
    assert "Nothing to be done" in log, log[-2000:]


def test_the_run_ends_with_a_comparison_without_drift(quick_run):
    report = (quick_run / "comparison.md").read_text()
    assert " 0 drift beyond tolerance" in report and " 0 missing" in report, report[:2000]
    for name in ("baselines", "dataset_stats"):  # Lucene alone: byte for byte; model numbers within tolerance
        assert f"| tables/{name}.md | identical |" in report, report[-1500:]
    # Captions and row labels do not depend on the CPU's floats: every stored table's caption is the run's.
    stale = [p.name for p in sorted((REPO / "results" / "quick" / "tables").glob("*.md"))
             if (quick_run / "tables" / p.name).read_text().split("\n", 1)[0] != p.read_text().split("\n", 1)[0]]
    assert not stale, f"results/quick tables whose captions the code no longer writes: {stale}"
    # Nothing was written into the stored reference.
    done = subprocess.run(["git", "status", "--porcelain", "results"], cwd=REPO, capture_output=True, text=True)
    assert done.stdout == ""


def test_the_readme_shows_our_runs_against_the_originals_own(quick_run):
    """The quick run compares its Cranfield BM25 with the Radboud thesis' run and Birch's Robust04 run with
    itself (repro-eval, reranker.reproduction.run_level); the README shows both beside the verdicts."""
    folder = quick_run / "numbers" / "reproduction"
    thesis = json.loads((folder / "cranfield-thesis-bm25.json").read_text())
    birch = json.loads((folder / "robust04-birch-identity.json").read_text())
    assert (birch["numbers"]["KTU"], birch["numbers"]["RBO"]) == (1.0, 1.0) and set(birch["numbers"]["RMSE"].values()) == {0.0}
    assert round(thesis["numbers"]["mean_original"]["RadboudNDCG@20"], 4) == 0.4714  # the thesis' notebooks
    assert round(thesis["numbers"]["mean_reproduced"]["RadboudNDCG@20"], 4) == 0.5169  # the baselines table's
    assert 0 < thesis["numbers"]["RBO"] < 1 and thesis["depth"] == 100 and thesis["topics"]["compared"] == 225
    readme = (quick_run / "README.md").read_text()
    assert "## Runs against the originals' own runs (repro-eval)" in readme
    assert "| Cranfield BM25: the Radboud thesis' code's run against ours | 100 | 225 |" in readme
    assert "| Robust04 BM25+RM3: Birch's run against itself (sanity line) | all | 250 (249 judged) | 1.0000 | 1.0000 |" in readme
