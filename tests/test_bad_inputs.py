"""The bad-input corpus (tests/bad_inputs/cases.yaml): every stage refuses bad input the same way.

One line on stderr (`stage: error: ...`, naming the file, the line and the fix), exit code 2, no
traceback, nothing left at the output path. Cases call each stage's own `main` in this process, as a
Python user would (the command line adds nothing to it); one runs as a real subprocess.
"""

from __future__ import annotations

import gzip
import importlib
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranker.__main__ import STAGES
from reranker.formats.sidecar import record_sidecar

CORPUS = Path(__file__).parent / "bad_inputs"
CASES = yaml.safe_load((CORPUS / "cases.yaml").read_text())


LONG = "x" * 252  # {long}: a file name that fits the file system's 255 bytes, but not with the .tmp it is written as


def _fill(value, folder: Path):
    """{dir} (and {long}) in every string of a YAML value."""
    if isinstance(value, str):
        return value.replace("{dir}", str(folder)).replace("{long}", LONG)
    if isinstance(value, list):
        return [_fill(v, folder) for v in value]
    if isinstance(value, dict):
        return {k: _fill(v, folder) for k, v in value.items()}
    return value


def _prepare(case: dict, folder: Path) -> list[str]:
    shutil.copytree(CORPUS / "files", folder, dirs_exist_ok=True)
    for name, text in case.get("files", {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)  # a run folder's numbers/, say
        (folder / name).write_bytes(text.encode("latin-1" if case.get("latin-1") else "utf-8"))
    if "config" in case:
        (folder / "config.yaml").write_text(yaml.safe_dump(_fill(case["config"], folder)))
    if case.get("checkpoint") == "partial":  # a config without weights or tokenizer: a copy cut short
        (folder / "ckpt").mkdir()
        (folder / "ckpt" / "config.json").write_text('{"model_type": "bert", "architectures": ["BertModel"]}\n')
    if case.get("cut_gzip"):  # NAME.gz: the gzip of NAME without its last bytes, as a copy cut short leaves it
        data = gzip.compress((folder / case["cut_gzip"]).read_bytes(), mtime=0)
        (folder / (case["cut_gzip"] + ".gz")).write_bytes(data[:-12])
    if case.get("full_disk"):  # writes to <path>.tmp go to /dev/full, which answers ENOSPC, root or not
        (folder / (case["full_disk"] + ".tmp")).symlink_to("/dev/full")
    if case.get("read_only"):
        (folder / case["read_only"]).mkdir()
        (folder / case["read_only"]).chmod(0o555)
    scores = folder / "scores.tsv"  # score writes a sidecar beside each scores file; readers refuse one without
    if scores.exists() and not Path(str(scores) + ".meta.json").exists() and not case.get("no_sidecar"):
        record_sidecar(scores, recorded="tests/test_bad_inputs.py: as score would")
    for name in case.get("sidecars", []):  # other score files, each with the sidecar score would write
        record_sidecar(folder / name, recorded="tests/test_bad_inputs.py: as score would")
    if "config_text" in case:  # YAML as written, for what a dump cannot say (a key twice, an alias, .nan)
        (folder / "config.yaml").write_text(case["config_text"])
    for name, files in case.get("folder", {}).items():  # a folder holding files of its own
        (folder / name).mkdir(parents=True, exist_ok=True)
        for file in files:
            (folder / name / file).write_text("kept\n")
    for name, target in case.get("symlink", {}).items():
        (folder / name).symlink_to(folder / target)
    for name in case.get("fifo", []):
        os.mkfifo(folder / name)
    return _fill(case["argv"], folder)


def _digests(folder: Path, names: list[str]) -> dict[str, list[tuple[str, bytes]]]:
    """What must stay as it was: each named file's bytes, or a folder's files, or a link's target."""
    out = {}
    for name in names:
        path = folder / name
        if path.is_symlink():
            out[name] = [("link", os.readlink(path).encode())]
        elif path.is_dir():
            out[name] = sorted((str(p.relative_to(path)), p.read_bytes()) for p in path.rglob("*") if p.is_file())
        else:
            out[name] = [("file", path.read_bytes())]
    return out


def test_corpus_is_large_and_names_unique():
    ids = [case["id"] for case in CASES]
    assert len(ids) == len(set(ids)) and sum(case["exit"] == 2 for case in CASES) >= 25


@pytest.mark.parametrize("case", CASES, ids=[case["id"] for case in CASES])
def test_bad_input(case, tmp_path, capsys, monkeypatch):
    if case.get("read_only") and os.geteuid() == 0:
        pytest.skip("root writes into read-only folders")
    monkeypatch.chdir(tmp_path)  # no stray files beside the checkout
    argv = _prepare(case, tmp_path / "case")
    before = _digests(tmp_path / "case", case.get("unchanged", []))
    code = importlib.import_module(f"reranker.stages.{argv[0]}").main(argv[1:])  # an input error escaping it fails here
    out, err = capsys.readouterr()
    assert code == case["exit"], err
    assert "Traceback" not in err
    if case["exit"] == 2:
        last = err.strip().splitlines()[-1]
        assert re.match(rf"{argv[0]}: error: ", last), last
        assert re.search(case["message"], last), last
    if "stdout" in case:
        assert re.search(case["stdout"], out), out
    for name in case.get("absent", []):
        left = tmp_path / "case" / name
        assert not left.exists() and not Path(str(left) + ".tmp").exists(), left
    assert _digests(tmp_path / "case", case.get("unchanged", [])) == before  # refused with nothing changed


@pytest.mark.parametrize("stage", STAGES)
def test_every_stage_main_reports_input_errors_itself(stage):
    """`exits_on_input_error` on each stage's `main`: called from Python it returns 2, as the command line does."""
    assert getattr(importlib.import_module(f"reranker.stages.{stage}").main, "__wrapped__", None), stage


def test_command_line_prints_one_line(tmp_path):
    """The real command line: one line on stderr for an input error, exit 2."""
    case = next(c for c in CASES if c["id"] == "run-nan-score")
    argv = _prepare(case, tmp_path)
    done = subprocess.run([sys.executable, "-m", "reranker", *argv], capture_output=True, text=True)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("evaluate: error: "), done.stderr


def test_the_output_folders_marks_are_the_stages_own():
    """formats.outputs checks a folder output before the stage reads anything, by the file that marks it as the
    stage's own: the same names as the stages write."""
    from reranker.formats.outputs import OUTPUT_FOLDERS
    from reranker.neural.models import META_FILE
    from reranker.stages.index import BUILD_FILE

    assert OUTPUT_FOLDERS == {"train": ("--out", META_FILE), "index": ("--index", BUILD_FILE)}
