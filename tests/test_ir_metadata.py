"""ir_metadata headers on the runs the stages write: read by repro-eval, skipped by every reader of
runs, no number changed; and `python -m reranker bundle`, loaded by repro-eval and ranx as it is."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import ir_measures
import pytest

from reranker.core import run_metadata
from reranker.formats.errors import FormatError
from reranker.formats.ir_metadata import END, START, header, read_metadata, run_body
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import read_run, read_run_lines, write_run
from reranker.formats.text import file_sha256
from reranker.formats.unit_scores import record_unit_scores
from reranker.stages import bundle, fuse
from reranker.stages import evaluate as ev

CORPUS = Path(__file__).resolve().parent / "bad_inputs" / "files"
PRIMAD = ["platform", "research goal", "implementation", "method", "actor", "data"]
RUN = {"1": {"d1": 2.0, "d2": 1.0, "d3": 0.5}, "2": {"d2": 3.0, "d3": 1.5, "d1": 1.5}}
QRELS = "1 0 d1 1\n1 0 d3 0\n2 0 d3 2\n2 0 d1 1\n"


def metadata_handler():
    with warnings.catch_warnings():  # repro-eval 0.5.0 imports pkg_resources, deprecated
        warnings.simplefilter("ignore")
        from repro_eval.metadata import MetadataHandler
    return MetadataHandler


def without_header(path: Path, out: Path) -> Path:
    out.write_bytes(run_body(path))
    return out


def test_a_header_changes_no_run_line_and_no_number(tmp_path):
    plain, headed = tmp_path / "plain.run", tmp_path / "headed.run"
    write_run(RUN, plain, tag="t")
    write_run(RUN, headed, tag="t", metadata={"method": {"automatic": True}, "note": "ends in #"})
    assert headed.read_text().startswith(START + "\n") and headed.read_text().endswith(plain.read_text())
    assert read_run(headed) == read_run(plain) and list(read_run_lines(headed)) == list(read_run_lines(plain))
    assert read_metadata(headed)["tag"] == "t" and read_metadata(plain) is None
    (tmp_path / "qrels.txt").write_text(QRELS)
    measures = ["AP@1000", "nDCG@20", "P@20", "RR@10"]
    ours = [ev.evaluate_files(path, tmp_path / "qrels.txt", measures) for path in (headed, plain)]
    assert ours[0].aggregate == ours[1].aggregate and ours[0].per_query == ours[1].per_query
    # ir_measures on the file without its header, as it reads files, gives the same numbers
    parsed = [ir_measures.parse_measure(m) for m in measures]
    theirs = ir_measures.calc_aggregate(parsed, ir_measures.read_trec_qrels(str(tmp_path / "qrels.txt")),
                                        ir_measures.read_trec_run(str(without_header(headed, tmp_path / "stripped.run"))))
    assert {str(m): v for m, v in theirs.items()} == pytest.approx(ours[0].aggregate, abs=0, rel=0)


def test_a_run_cut_short_or_edited_after_its_header_is_refused(tmp_path):
    """The header records the run lines (count, sha256): a run cut at a line's end reads as a whole run of fewer
    queries, one edited as another ranking; both are refused, naming the file. A run with no header is read as is."""
    path = tmp_path / "headed.run"
    write_run(RUN, path, tag="t", metadata={"note": "x"})
    assert read_metadata(path)["body"]["lines"] == sum(len(docs) for docs in RUN.values())
    text = path.read_text()
    path.write_text(text[: text.rstrip("\n").rfind("\n") + 1])  # the last line gone, at a line's end
    with pytest.raises(FormatError, match=r"headed\.run: \d+ run lines where its ir_metadata header records \d+: it was cut short"):
        read_run(path)
    last = text.rstrip("\n").rsplit("\n", 1)[1].split()
    path.write_text(text.replace(" ".join(last), " ".join(last[:4] + ["99", last[5]])))  # one score edited
    with pytest.raises(FormatError, match=r"do not match the sha256 its ir_metadata header records"):
        read_run(path)
    path.write_text("".join(line + "\n" for line in text.splitlines() if not line.startswith("#")))
    assert read_run(path) == {q: {d: pytest.approx(v) for d, v in docs.items()} for q, docs in RUN.items()}


def test_ir_measures_and_pytrec_eval_take_the_header_for_a_run_line(tmp_path):
    """Why the suite reads runs itself and the bundle has a JSON twin: ir_measures 0.4.3's `read_trec_run` (and
    pytrec_eval's `parse_run`, under repro-eval's `load_run`) do not skip `#` lines as trec_eval does."""
    import pytrec_eval

    write_run(RUN, tmp_path / "headed.run", tag="t", metadata={})
    with pytest.raises(ValueError):
        list(ir_measures.read_trec_run(str(tmp_path / "headed.run")))
    with pytest.raises(ValueError), open(tmp_path / "headed.run") as f:
        pytrec_eval.parse_run(f)


def test_header_errors_name_the_line(tmp_path):
    (tmp_path / "open.run").write_text(f"{START}\n# tag: t\n1 Q0 d1 1 1.0 t\n")
    with pytest.raises(FormatError, match=r"open\.run:3: .* ends without"):
        read_metadata(tmp_path / "open.run")
    (tmp_path / "bad.run").write_text(f"{START}\n# tag: t\n# a: [b\n{END}\n1 Q0 d1 1 1.0 t\n")
    with pytest.raises(FormatError, match=r"bad\.run:\d+: the ir_metadata header is not YAML"):
        read_metadata(tmp_path / "bad.run")
    assert header({"x": "é"}).isascii()


def fused_runs(folder: Path) -> dict[str, Path]:
    """`fuse birch` (Cranfield's settings) over the corpus' run and scores, then `fuse aggregate` over its output."""
    for name in ("run.txt", "scores.tsv", "qrels.txt", "folds.json"):
        shutil.copy(CORPUS / name, folder / name)
    record_unit_scores(folder / "scores.tsv")  # the corpus' hand-made scores, taken as they are
    birch, maxp = folder / "birch.run", folder / "maxp.run"
    assert fuse.main(["birch", "--section", "birch", "--collection", "cranfield", "--run", str(folder / "run.txt"), "--scores",
                      str(folder / "scores.tsv"), "--qrels", str(folder / "qrels.txt"), "--folds", str(folder / "folds.json"),
                      "--top-n", "2", "--out", str(birch), "--params-out", str(folder / "birch.json")]) == 0
    assert fuse.main(["aggregate", "--method", "maxp", "--run", str(birch), "--scores", str(folder / "scores.tsv"),
                      "--out", str(maxp)]) == 0
    return {"birch": birch, "maxp": maxp}


def test_fused_runs_carry_primad_that_repro_eval_reads(tmp_path):
    runs = fused_runs(tmp_path)
    handler = metadata_handler()
    birch = handler(str(runs["birch"])).get_metadata()
    assert list(birch) == ["schema-version", "tag", *PRIMAD, "body"] and birch["tag"] == "birch-2S"
    steps = birch["method"]["retrieval"]
    assert [s["name"] for s in steps] == ["t", "scores", "birch-2S"] and steps[-1]["interpolates"] == ["t", "scores"]
    assert set(steps[-1]["weight"]) == {"1", "2"} and birch["method"]["score ties"].startswith("score descending")
    assert birch["data"]["test collection"] == {"name": "cranfield", "source": "ir_datasets", "ir_datasets": "cranfield"}
    assert "RadboudNDCG@20" in birch["research goal"]["evaluation"]["reported measures"]
    assert {s["name"] for s in birch["research goal"]["studies"]} >= {"radboud", "birch"}
    assert birch["implementation"]["executable"]["cmd"].startswith("python -m reranker fuse birch --section birch --collection cranfield")
    assert birch["platform"]["hardware"]["cpu"]["number of cores"] >= 1
    assert any(lib.startswith("ir-measures==") for lib in birch["platform"]["software"]["libraries"]["python"])
    # the aggregation passes the fusion's steps on, reranking its output
    maxp = handler(str(runs["maxp"])).get_metadata()
    assert [s["name"] for s in maxp["method"]["retrieval"]] == ["t", "scores", "birch-2S", "scores", "maxp"]
    assert maxp["method"]["retrieval"][-1]["reranks"] == "birch-2S" and maxp["data"]["test collection"]["name"] == "cranfield"
    assert maxp["research goal"]["evaluation"]["baseline"] == ["birch-2S"]
    for path in runs.values():
        stripped = {q: dict(docs) for q, docs in handler.strip_metadata(str(path)).items()}
        assert stripped == read_run(path)


def test_the_resource_record_says_what_it_measured_or_why_not():
    record = run_metadata.Tracker().record()
    if record["tracker"] == "none":
        assert record["why"]
        return
    assert record["tracker"].startswith("tirex-tracker ") and isinstance(record["wall clock (ms)"], int)
    for part in ("CPU", "RAM", "GPU"):
        energy = record[f"{part} energy (J)"]
        assert isinstance(energy, (int, float)) or energy.startswith("not measured: "), energy


def run_folder(root: Path) -> Path:
    """A run folder as the workflow lays it out: the fused runs, their evaluations, the qrels, a seed index."""
    runs = fused_runs(root)
    folder = root / "rd"
    for name, path in runs.items():
        (folder / "work" / "runs" / "cranfield").mkdir(parents=True, exist_ok=True)
        shutil.copy(path, folder / "work" / "runs" / "cranfield" / f"{name}.run")
    (folder / "work" / "collections" / "cranfield").mkdir(parents=True)
    shutil.copy(root / "qrels.txt", folder / "work" / "collections" / "cranfield" / "qrels.txt")
    for name in runs:
        assert ev.main(["--run", str(folder / "work" / "runs" / "cranfield" / f"{name}.run"), "--qrels", str(root / "qrels.txt"),
                        "--measures", "AP@1000", "nDCG@20", "--out", str(folder / "work" / "eval" / "cranfield" / f"{name}.json")]) == 0
    (folder / "README.md").write_text("# Seed index\n")
    return folder


def test_the_bundle_loads_in_repro_eval_and_ranx_as_it_is(tmp_path):
    import ranx

    folder, out = run_folder(tmp_path), tmp_path / "bundle"
    assert bundle.main([str(folder), str(out)]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["bundle"] == bundle.FORMAT and manifest["provenance"]["git_commit"]
    for entry in manifest["files"]:
        assert file_sha256(out / entry["path"]) == entry["sha256"], entry["path"]
    assert {e["kind"] for e in manifest["files"]} == {"trec run", "run as JSON", "qrels", "evaluation", "seed index", "readme"}
    assert (out / "index.md").read_text() == "# Seed index\n"
    handler = metadata_handler()
    qrels = ranx.Qrels.from_file(str(out / "qrels" / "cranfield.txt"))
    for name in ("birch", "maxp"):
        run_file = out / "runs" / "cranfield" / f"{name}.run"
        assert run_file.read_bytes() == (folder / "work" / "runs" / "cranfield" / f"{name}.run").read_bytes()
        assert handler(str(run_file)).get_metadata()["tag"] in ("birch-2S", "maxp")
        ours = read_run(run_file)
        assert {q: dict(d) for q, d in handler.strip_metadata(str(run_file)).items()} == ours
        run = ranx.Run.from_file(str(out / "runs" / "cranfield" / f"{name}.json"))
        assert {q: dict(d) for q, d in run.to_dict().items()} == ours
        stored = json.loads((out / "eval" / "cranfield" / f"{name}.json").read_text())
        assert ranx.evaluate(qrels, run, "map@1000") == pytest.approx(stored["aggregate"]["AP@1000"], abs=1e-12)
    assert read_qrels(out / "qrels" / "cranfield.txt") == read_qrels(tmp_path / "qrels.txt")
    # a second bundle replaces the first
    assert bundle.main([str(folder), str(out)]) == 0 and not Path(str(out) + ".tmp").exists()


@pytest.mark.slow
def test_retrieve_writes_the_first_stage_header(tmp_path):
    """BM25 on three hand-written documents: the index's analyser and the parameters in the header."""
    from reranker.stages import index, retrieve

    docs = [{"id": "d1", "title": "Supersonic flow", "text": "Boundary layers in supersonic flow over a flat plate."},
            {"id": "d2", "title": "Heat transfer", "text": "Heat transfer in hypersonic boundary layers."}]
    (tmp_path / "docs.jsonl").write_text("".join(json.dumps(d) + "\n" for d in docs))
    (tmp_path / "topics.tsv").write_text("1\tsupersonic boundary layers\n")
    assert index.main(["--docs", str(tmp_path / "docs.jsonl"), "--index", str(tmp_path / "index"), "--threads", "1"]) == 0
    out = tmp_path / "bm25.run"
    assert retrieve.main(["--index", str(tmp_path / "index"), "--topics", str(tmp_path / "topics.tsv"), "--model", "bm25",
                          "--collection", "cranfield", "--out", str(out)]) == 0
    found = metadata_handler()(str(out)).get_metadata()
    step = found["method"]["retrieval"][0]
    assert step["name"] == "bm25" and set(step["params"]) == {"k1", "b", "depth"}
    assert found["method"]["indexing"]["stemmer"] == "porter" and "DefaultEnglishAnalyzer" in found["method"]["indexing"]["tokenizer"]
    assert found["data"]["files"]["topics"].endswith("topics.tsv") and list(read_run(out)) == ["1"]


@pytest.mark.slow
@pytest.mark.dag
def test_the_quick_dags_runs_carry_headers_that_change_no_number(dag_runs, tmp_path):
    """Acceptance: repro-eval reads the header of the quick DAG's runs; evaluated with and without it,
    a run gives the numbers the DAG stored."""
    done = dag_runs["quick"].wait()
    assert done.returncode == 0, done.stdout[-12000:]
    work = dag_runs["quick"].run_dir / "work"
    handler = metadata_handler()
    fused = work / "runs" / "vaswani" / "birch.scifact-soft-80.3S.run"
    runs = [path for path in [fused, *sorted(work.glob("runs/vaswani/bm25*.run"))]
            if (work / "eval" / "vaswani" / f"{path.stem}.json").is_file()]
    assert runs[0] == fused and len(runs) >= 2, runs
    for path in runs:
        found = handler(str(path)).get_metadata()
        assert found is not None and list(found)[2:] == [*PRIMAD, "body"], path  # body: what read_run checks
        stored = json.loads((work / "eval" / "vaswani" / f"{path.stem}.json").read_text())
        plain = without_header(path, tmp_path / path.name)
        for run_file in (path, plain):
            again = ev.evaluate_files(run_file, work / "collections" / "vaswani" / "qrels.txt", stored["measures"])
            assert again.aggregate == stored["aggregate"] and again.per_query == stored["per_query"], run_file
    steps = handler(str(fused)).get_metadata()["method"]["retrieval"]
    assert steps[-1]["interpolates"][0] == steps[0]["name"] and steps[1]["checkpoint"] == "scifact-soft-80"
