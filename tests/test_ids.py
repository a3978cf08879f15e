"""The id rule (reranker/formats/ids.py) in every reader, evaluate's coverage, and the one-line errors
that the bad-input corpus cannot show: a full disk's message, a cut gzip, a reader that leaves a pipe early."""

from __future__ import annotations

import errno
import gzip
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from reranker.formats.atomic import atomic_write
from reranker.formats.docs import read_docs
from reranker.formats.errors import FormatError, input_error_line
from reranker.formats.folds import read_folds
from reranker.formats.ids import id_key, near_misses
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import read_run
from reranker.formats.segments import read_segments
from reranker.formats.topics import read_topics_tsv
from reranker.formats.unit_scores import read_unit_scores, record_unit_scores
from reranker.stages import evaluate

BOM = "\ufeff"


def read_recorded_scores(path: Path):
    """A scores file made here, recorded as score records its own (in a copy: the corpus stays as it is), then read."""
    copy = Path(tempfile.mkdtemp()) / path.name
    shutil.copyfile(path, copy)
    record_unit_scores(copy)
    return read_unit_scores(copy)

FILES = Path(__file__).parent / "bad_inputs" / "files"
READERS = {  # file, reader, what the first id reads as
    "run.txt": (read_run, lambda run: next(iter(run))),
    "qrels.txt": (read_qrels, lambda qrels: next(iter(qrels))),
    "topics.tsv": (read_topics_tsv, lambda topics: next(iter(topics))),
    "scores.tsv": (lambda path: read_recorded_scores(path), lambda scores: next(iter(scores))),
    "segments.jsonl": (read_segments, lambda segments: next(iter(segments))),
    "folds.json": (read_folds, lambda folds: folds["1"][0]),
    "docs.jsonl": (lambda path: read_docs(path, {"d1", "d2", "d3"}), lambda docs: next(iter(docs))),
}


@pytest.mark.parametrize("name", READERS)
def test_a_bom_at_the_start_is_dropped_by_every_reader(name, tmp_path):
    read, first = READERS[name]
    plain = read(FILES / name)
    path = tmp_path / name
    path.write_text(BOM + (FILES / name).read_text(encoding="utf-8"), encoding="utf-8")
    assert read(path) == plain and BOM not in first(read(path))


@pytest.mark.parametrize("name, line", [("run.txt", 3), ("qrels.txt", 2), ("topics.tsv", 2), ("scores.tsv", 3)])
def test_a_bom_inside_a_file_is_refused_with_file_and_line(name, line, tmp_path):
    read, _ = READERS[name]
    lines = (FILES / name).read_text(encoding="utf-8").splitlines(keepends=True)
    lines[line - 1] = BOM + lines[line - 1]
    path = tmp_path / name
    path.write_text("".join(lines), encoding="utf-8")
    with pytest.raises(FormatError, match=rf"{name}:{line}: query id '\\ufeff.*' holds an invisible character, a byte-order mark"):
        read(path)


@pytest.mark.parametrize("qid", ["1\u200b", "\u200e1", "1\x00", "1\u00a0a"])
def test_invisible_characters_and_odd_spaces_in_ids_are_refused(qid, tmp_path):
    path = tmp_path / "topics.tsv"
    path.write_text(f"{qid}\tflow\n", encoding="utf-8")
    with pytest.raises(FormatError, match=r"topics\.tsv:1: query id .* holds (whitespace|an invisible character), .*: remove it"):
        read_topics_tsv(path)


def test_ids_are_read_as_written(tmp_path):
    """No reader normalises: `001`, `Q1` and non-ASCII ids stay as they are."""
    path = tmp_path / "qrels.txt"
    path.write_text("001 0 d1 1\nQ1 0 d\u00e92 1\n\u00e91 0 d3 0\n", encoding="utf-8")
    assert read_qrels(path) == {"001": {"d1": 1}, "Q1": {"d\u00e92": 1}, "\u00e91": {"d3": 0}}


def test_near_misses_are_the_same_id_written_two_ways():
    assert id_key("001") == id_key("1") == id_key(" 1") == id_key(BOM + "1") == "1"
    assert id_key("Q007a") == id_key("q7A") and id_key("10") != id_key("1") and id_key("0") == id_key("000")
    assert near_misses(["001", "2", "9"], {"1", "2", "3"}) == [("001", "1")]
    assert near_misses(["1", "001"], {"1"}) == []  # 1 is there as written: 001 is another query of the run


def test_evaluate_reports_its_coverage_on_stderr_and_in_the_json(tmp_path, capsys):
    run, qrels, out = tmp_path / "run.txt", tmp_path / "qrels.txt", tmp_path / "eval.json"
    run.write_text((FILES / "run.txt").read_text() + "5 Q0 d1 1 1.0 t\n")
    qrels.write_text("1 0 d1 1\n2 0 d3 2\n3 0 d2 1\n")
    assert evaluate.main(["--run", str(run), "--qrels", str(qrels), "--measures", "AP@1000", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert f"{run}: 2 of the run's 3 queries judged and evaluated; 1 left out, no judgments in {qrels} (e.g. 5); " \
           "1 judged queries are not in the run (e.g. 3), not evaluated" in err
    saved = json.loads(out.read_text())
    assert saved["coverage"] == {"run_queries": 3, "judged": 2, "left_out": ["5"], "not_in_run": ["3"]}
    assert saved["queries"] == 2 and set(saved["per_query"]["AP@1000"]) == {"1", "2"}


def test_evaluate_refuses_a_run_and_qrels_without_a_query_in_common():
    with pytest.raises(FormatError, match=r"run\.txt: none of its 1 queries is judged in qrels\.txt"):
        evaluate.evaluate({"1": {"d1": 1.0}}, {"2": {"d1": 1}}, ["AP@1000"], "run.txt", "qrels.txt")


def test_a_cut_gzip_names_the_file(tmp_path):
    data = gzip.compress((FILES / "run.txt").read_bytes())
    cut, plain = tmp_path / "run.txt.gz", tmp_path / "plain.gz"
    cut.write_bytes(data[:-12])
    plain.write_bytes((FILES / "run.txt").read_bytes())  # named .gz, but not gzip
    with pytest.raises(FormatError, match=r"run\.txt\.gz: not a complete gzip file \(.*\): it was cut short"):
        read_run(cut)
    with pytest.raises(FormatError, match=r"plain\.gz: not a complete gzip file \(Not a gzipped file"):
        read_run(plain)


def test_a_full_disk_is_one_line_naming_the_output(tmp_path):
    out = tmp_path / "out.json"
    (tmp_path / "out.json.tmp").symlink_to("/dev/full")  # /dev/full answers every write with ENOSPC
    with pytest.raises(OSError) as caught, atomic_write(out) as f:
        f.write("{}\n")
    assert caught.value.errno == errno.ENOSPC and not out.exists() and not os.path.lexists(str(out) + ".tmp")
    assert input_error_line(caught.value) == f"{out}: the disk is full: free space and rerun; nothing partial was kept"
    try:
        with open("/dev/full", "w") as f:
            f.write("x")
    except OSError as err:  # a write names no file; wrapped as another error, its cause still counts
        wrapped = RuntimeError("saving failed")
        wrapped.__cause__ = err
        assert input_error_line(wrapped) == "the disk is full: free space and rerun; nothing partial was kept"
    assert input_error_line(RuntimeError("No space left on device (os error 28)")).startswith("the disk is full")
    assert input_error_line(RuntimeError("a bug")) is None


def _evaluate_argv(tmp_path: Path) -> list[str]:
    return [sys.executable, "-m", "reranker", "evaluate", "--run", str(FILES / "run.txt"), "--qrels",
            str(FILES / "qrels.txt"), "--measures", "AP@1000", "P@1", "--out", str(tmp_path / "eval.json")]


def test_a_reader_that_leaves_the_pipe_early_gets_no_traceback(tmp_path):
    """`evaluate | head -1`: the reader's end of a real pipe is closed before evaluate prints."""
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)}
    child = subprocess.Popen(_evaluate_argv(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    child.stdout.close()  # the reader is gone long before the interpreter has started
    err = child.stderr.read().decode()
    assert child.wait() == 1 and "Traceback" not in err and "Broken pipe" not in err, err
    assert json.loads((tmp_path / "eval.json").read_text())["aggregate"]["AP@1000"] == 0.75  # written before printing
    shell = subprocess.run(["bash", "-c", " ".join(_evaluate_argv(tmp_path)) + " | head -1"], capture_output=True,
                           text=True, env=env)
    assert shell.stdout.startswith("AP@1000") and "Traceback" not in shell.stderr, shell.stderr
