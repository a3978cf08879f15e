"""Kill and resume: every long stage, SIGKILLed mid-way and rerun, ends as an uninterrupted run does.

index, retrieve, segment and fuse publish their outputs atomically: a killed job leaves nothing at
its output path, and the rerun redoes the stage (its whole time, printed). train resumes from its
last check and score from its last shard; their tests are in test_train.py and test_score.py.
On Cranfield (1,400 documents, all 225 queries), through `python -m reranker` in subprocesses.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from reranker.formats.ir_metadata import run_body
from reranker.formats.runs import read_run, top_k_docs
from reranker.formats.unit_scores import record_unit_scores

pytestmark = pytest.mark.slow


def reranker(*args: str) -> list[str]:
    return [sys.executable, "-m", "reranker", *args]


def timed(command: list[str]) -> float:
    started = time.monotonic()
    subprocess.run(command, check=True, capture_output=True)
    return time.monotonic() - started


def kill_mid_way(command: list[str], seconds: float, outputs: tuple[Path, ...]) -> None:
    """Start `command`, SIGKILL it after a third of an uninterrupted run's time (not half: the suite runs
    beside the quick DAG, so one run of a stage can go faster than the one that was timed). Under that
    load one run can take ten times another (a retrieval timed at 311 s once ended within 104 s), so a
    try that ends first is redone, its `outputs` removed, waiting a third as long, up to 4 tries."""
    wait = seconds / 3
    for _ in range(4):
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            process.wait(timeout=wait)
        except subprocess.TimeoutExpired:
            os.kill(process.pid, signal.SIGKILL)
            process.wait()
            break
        for out in outputs:
            shutil.rmtree(out) if out.is_dir() else out.unlink(missing_ok=True)
        wait /= 3
    assert process.returncode == -signal.SIGKILL, "the stage ended before it was killed, 4 times"


def body(path: Path) -> bytes:
    """A file without its ir_metadata header lines (`#`), whose command and resources differ between two runs
    of a stage; the header itself must be whole (its end marker there)."""
    data = path.read_bytes()
    assert not data.startswith(b"#") or b"# ir_metadata.end\n" in data, f"{path}: header cut short"
    return run_body(path)


def assert_nothing_partial(out: Path, whole: Path) -> None:
    """A killed stage leaves its output absent, or complete (killed after the rename, e.g. while the
    JVM shut down): never a part of it."""
    assert not out.exists() or body(out) == body(whole), f"{out} is partial"


@pytest.fixture(scope="module")
def cranfield(tmp_path_factory) -> dict[str, Path]:
    """Cranfield exported as the stages exchange it, its folds, and seeded unit scores for fuse."""
    root = tmp_path_factory.mktemp("cranfield-kill")
    subprocess.run(reranker("collections", "export", "--collection", "cranfield", "--out", str(root)), check=True,
                   capture_output=True)
    subprocess.run(reranker("collections", "folds", "--collection", "cranfield", "--out", str(root / "folds.json")),
                   check=True, capture_output=True)
    return {"docs": root / "docs.jsonl", "topics": root / "topics.tsv", "qrels": root / "qrels.txt",
            "folds": root / "folds.json", "root": root}


def bm25_run(index: Path, topics: Path, out: Path) -> list[str]:
    return reranker("retrieve", "--index", str(index), "--topics", str(topics), "--model", "bm25_rm3", "--out", str(out))


def test_index_and_retrieve(cranfield, tmp_path):
    whole, killed = tmp_path / "whole", tmp_path / "killed"
    seconds = timed(reranker("index", "--docs", str(cranfield["docs"]), "--index", str(whole)))
    kill_mid_way(reranker("index", "--docs", str(cranfield["docs"]), "--index", str(killed)), seconds, (killed,))
    assert not killed.exists()
    timed(reranker("index", "--docs", str(cranfield["docs"]), "--index", str(killed)))
    # Lucene's files carry random segment ids: the indexes are compared by what they retrieve.
    runs = {}
    for name, index in (("whole", whole), ("killed", killed)):
        out = tmp_path / f"{name}.run"
        runs[name] = timed(bm25_run(index, cranfield["topics"], out)), out
    assert body(runs["whole"][1]) == body(runs["killed"][1])

    resumed = tmp_path / "resumed.run"
    kill_mid_way(bm25_run(whole, cranfield["topics"], resumed), runs["whole"][0], (resumed,))
    assert_nothing_partial(resumed, runs["whole"][1])
    timed(bm25_run(whole, cranfield["topics"], resumed))
    assert body(resumed) == body(runs["whole"][1])
    print(f"redone: index {seconds:.1f} s, retrieve {runs['whole'][0]:.1f} s")
    cranfield["run"] = runs["whole"][1]


def test_segment_and_fuse(cranfield, tmp_path):
    if "run" not in cranfield:
        pytest.skip("needs the run of test_index_and_retrieve")
    segment = reranker("segment", "--docs", str(cranfield["docs"]), "--run", str(cranfield["run"]), "--topics",
                       str(cranfield["topics"]))
    whole, killed = tmp_path / "whole.jsonl", tmp_path / "killed.jsonl"
    seconds = timed([*segment, "--out", str(whole)])
    kill_mid_way([*segment, "--out", str(killed)], seconds, (killed,))
    assert_nothing_partial(killed, whole)
    timed([*segment, "--out", str(killed)])
    assert killed.read_bytes() == whole.read_bytes()

    rng = random.Random(0)  # seeded unit scores for every (query, unit) of the top 30: fuse alone is timed
    units: dict[str, list[int]] = {}
    for line in whole.read_text().splitlines():
        unit = json.loads(line)
        units.setdefault(unit["doc_id"], []).append(unit["unit"])
    scores = tmp_path / "scores.tsv"
    with open(scores, "w") as f:
        for qid, docs in top_k_docs(read_run(cranfield["run"]), 30).items():
            for doc in docs:
                for unit in units.get(doc, []):
                    f.write(f"{qid}\t{doc}\t{unit}\t{rng.gauss(0, 1):.6f}\n")
    record_unit_scores(scores)  # made here, not by score: taken as it is, on purpose
    fuse = reranker("fuse", "birch", "--section", "birch", "--run", str(cranfield["run"]), "--scores", str(scores), "--qrels",
                    str(cranfield["qrels"]), "--folds", str(cranfield["folds"]), "--top-n", "3")
    outputs = {name: (tmp_path / f"{name}.run", tmp_path / f"{name}.json") for name in ("whole", "killed")}
    fuse_seconds = timed([*fuse, "--out", str(outputs["whole"][0]), "--params-out", str(outputs["whole"][1])])
    kill_mid_way([*fuse, "--out", str(outputs["killed"][0]), "--params-out", str(outputs["killed"][1])], fuse_seconds,
                 outputs["killed"])
    assert_nothing_partial(outputs["killed"][0], outputs["whole"][0])
    timed([*fuse, "--out", str(outputs["killed"][0]), "--params-out", str(outputs["killed"][1])])
    assert body(outputs["killed"][0]) == body(outputs["whole"][0])
    print(f"redone: segment {seconds:.1f} s, fuse {fuse_seconds:.1f} s")


def test_a_run_killed_with_sigkill_resumes_with_make_run(tmp_path, birch_data):
    """The machine goes away mid-run (SIGKILL to make, snakemake and the running job at once); `make run`
    again finishes the run: the default profile's rerun-incomplete redoes the killed job, the stale lock
    is lifted, and the wall clock adds the two stretches. A small configuration (the test paper's, on
    Cranfield) through the Makefile's own target, post-DAG steps and report included: also the test of a
    fourth paper run end to end (its own segment and score files, its table, its claim judged)."""
    from tests.test_plugins import LAYER, SEEDS

    repo = Path(__file__).resolve().parent.parent
    run_dir = tmp_path / "run"
    layer = tmp_path / "layer.yaml"
    seeds = tmp_path / "seeds.json"  # the test paper's claims, judged by the run's README
    seeds.write_text(json.dumps(SEEDS))
    layer.write_text(json.dumps({**LAYER, "run_dir": str(run_dir), "reference": str(tmp_path / "reference"),
                                 "seed_tables": str(seeds)}))
    venv = Path(sys.executable).parent.parent  # this interpreter's: `-o setup` installs nothing
    make = ["make", "-o", "setup", "run", f"VENV={venv}", "CORES=2", f"RUN_DIR={run_dir}",
            f"SNAKEMAKE_ARGS=--configfile {layer}"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(repo), os.environ.get("PYTHONPATH")]))}
    first = tmp_path / "first.log"
    with open(first, "w") as out:
        process = subprocess.Popen(make, cwd=repo, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        deadline = time.monotonic() + 600
        while "rule retrieve:" not in first.read_text() and process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        assert process.poll() is None, first.read_text()[-3000:]
        time.sleep(2)  # inside a retrieve job
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()
    done = subprocess.run(make, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, (done.stdout + done.stderr)[-4000:]
    assert "Using workflow specific profile profiles/default" in done.stderr  # plain snakemake: the default profile
    left = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(layer)], cwd=repo,
                          capture_output=True, text=True, env=env, timeout=300)
    assert left.returncode == 0 and "Nothing to be done" in left.stdout + left.stderr, left.stderr[-2000:]
    record = json.loads((run_dir / "numbers" / "run.json").read_text())
    assert len(record["stretches"]) == 2 and not record["stretches"][0]["finished"] and record["stretches"][1]["finished"]
    assert [s["git_commit"] for s in record["stretches"]] == [record["git_commit"]] * 2  # each noted as it began
    for path in ("tables/fake_paper_1.md", "tables/baselines.md", "tables/resources.md", "report.html", "README.md"):
        assert (run_dir / path).exists(), path
    # The test paper's own files, its table with the suite's marks, and its claim judged by a paired test.
    text = (run_dir / "tables" / "fake_paper_1.md").read_text()
    rows = [line for line in text.splitlines() if line.startswith("| BM25")]
    assert len(rows) == 3 and "| BM25 >> minilm-l3 |" in text and "| AP |" in text, text
    for pattern in ("segments/cranfield/bm25.k*.fake-docs.jsonl", "scores/cranfield/minilm-l3/bm25.k*.fake-docs.tsv"):
        made = list((run_dir / "work").glob(pattern))
        assert made and made[0].stat().st_size > 0, pattern
    verdict = next(line for line in (run_dir / "README.md").read_text().splitlines() if "BM25+RM3" in line and "AP@1000" in line)
    assert any(f"**{word}**" in verdict for word in ("reproduced", "contradicted", "inconclusive")), verdict
    assert "95% CI" in verdict, verdict  # its run stores per-query values
