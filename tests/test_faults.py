"""Faults: a full disk, a kill, two processes on one folder, a damaged cache. Each ends in a clear
error or a correct result, never exit 0 with wrong output.

The full disk is a real one: a tmpfs mounted for the test (root only; skipped elsewhere), sized so that
the stage's writes fail partway, then remounted larger. Each stage, on a small synthetic collection:
one line `stage: error: <file>: the disk is full ...`, exit 2, no traceback, nothing partial left (no
output, no `.tmp`); with room again the same command succeeds, and its output equals, byte for byte,
that of a run that never saw the full disk.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch
import yaml

from reranker.formats.runs import read_run
from reranker.formats.score_cache import ScoreCache
from reranker.formats.segments import read_segments
from reranker.formats.text import meta_path
from reranker.formats.topics import read_topics_tsv
from reranker.formats.unit_scores import read_unit_scores, record_unit_scores
from reranker.neural import scoring
from reranker.neural.models import load_classifier
from reranker.neural.shards import shard_dir
from reranker.neural.training.resume import is_complete, resume_path
from reranker.neural.training.run import LOG_FILE, VALIDATION_FILE
from reranker.reproduction import promote
from reranker.stages import compare, fuse, segment, train
from reranker.stages import score as sc
from reranker.workflow.run_lock import BUSY, NAME, RunLock
from tests.test_compare import numbers
from tests.test_compare import setup as compare_setup
from tests.test_plugins import LAYER

REPO = Path(__file__).resolve().parent.parent
CORPUS = Path(__file__).parent / "bad_inputs" / "files"


# ---------------------------------------------------------------- a full disk (a real tmpfs)

PAGE = 4096  # tmpfs counts whole pages
ROOM = 1 << 30  # a size the stages never fill: a tmpfs takes memory only for what is written
FULL_LINE = r": the disk is full: free space and rerun; nothing partial was kept$"


class Disk:
    """A tmpfs mounted at `path`; `resize` remounts it at another size, keeping its files."""

    def __init__(self, path: Path):
        self.path = path

    def resize(self, size: int) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)

    def used(self) -> int:
        stat = os.statvfs(self.path)
        return (stat.f_blocks - stat.f_bfree) * stat.f_frsize

    def clear(self) -> None:
        for item in self.path.iterdir():
            shutil.rmtree(item) if item.is_dir() else item.unlink()

    def files(self) -> list[str]:
        return sorted(str(p.relative_to(self.path)) for p in self.path.rglob("*"))


@pytest.fixture
def disk(tmp_path):
    if os.geteuid() != 0 or not shutil.which("mount"):
        pytest.skip("mounting a tmpfs needs root")
    path = tmp_path / "disk"
    path.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={ROOM}", "tmpfs", str(path)], capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield Disk(path)
    finally:
        subprocess.run(["umount", str(path)], check=True)


def in_process(module, argv: list[str], capsys):
    """A stage's `main` as `python -m reranker` calls it: (exit code, stderr)."""
    def run() -> tuple[int, str]:
        capsys.readouterr()
        code = module.main(argv)
        return code, capsys.readouterr().err
    return run


def full_then_freed(disk: Disk, run, stage: str, outputs: list[str], size=None) -> tuple[dict[str, bytes], str]:
    """Run the stage with room (the reference), on the disk cut to `size` (bytes, or a function of the bytes the
    reference left and its outputs; default: half of those bytes), then with room again. Returns the reference's
    `outputs`, which the last run's equal byte for byte, and the last run's stderr. The failed run leaves no
    `.tmp` and not the first output; another it left (fuse's parameters, written before its run) must be whole."""
    code, err = run()
    assert code == 0, err
    whole = {name: content(disk.path / name) for name in outputs}
    if not isinstance(size, int):
        size = (size or (lambda used, _: used // 2))(disk.used(), whole) // PAGE * PAGE
        assert size >= PAGE, "too little written to fail partway"
    disk.clear()  # caches too: the failing run starts where the reference did
    disk.resize(size)
    code, err = run()
    last = err.strip().splitlines()[-1]
    assert code == 2 and "Traceback" not in err, err[-3000:]
    assert re.match(rf"{stage}: error: {re.escape(str(disk.path))}/\S+{FULL_LINE}", last), last
    assert sum("error" in line for line in err.splitlines()) == 1, err[-3000:]
    left = disk.files()
    assert outputs[0] not in left and not [name for name in left if name.endswith(".tmp")], left
    assert not [name for name in outputs if name in left and content(disk.path / name) != whole[name]], left
    disk.resize(ROOM)
    code, err = run()
    assert code == 0, err
    for name in outputs:
        assert content(disk.path / name) == whole[name], name
    return whole, err


def content(path: Path) -> bytes:
    """A file's bytes; a run's without its ir_metadata header, which holds the stage's timings."""
    data = path.read_bytes()
    if path.suffix == ".run":
        data = b"".join(line for line in data.splitlines(keepends=True) if not line.startswith(b"#"))
    return data


WORDS = ("flow wing lift drag heat transfer gas shock wave boundary layer plate pressure body cone jet nozzle laminar "
         "turbulent skin friction cylinder stream supersonic hypersonic mach number flat edge").split()


@pytest.fixture(scope="module")
def collection(tmp_path_factory) -> dict[str, Path]:
    """60 queries over 60 documents of 6 seeded sentences: a word-overlap run, graded judgments, two folds, and
    seeded unit scores of each query's top 10 (fuse's input)."""
    root, rng = tmp_path_factory.mktemp("synthetic"), random.Random(59)
    words = {}
    with open(root / "docs.jsonl", "w") as f:
        for d in range(1, 61):
            body = " ".join(" ".join(rng.choices(WORDS, k=rng.randint(6, 12))).capitalize() + "." for _ in range(6))
            words[f"d{d}"] = set(body.lower().replace(".", "").split())
            f.write(json.dumps({"id": f"d{d}", "title": " ".join(rng.choices(WORDS, k=3)), "text": body}) + "\n")
    topics = {str(q): " ".join(rng.sample(WORDS, 3)) for q in range(1, 61)}
    (root / "topics.tsv").write_text("".join(f"{q}\t{text}\n" for q, text in topics.items()))
    run, qrels, scores = [], [], []
    for q, text in topics.items():
        ranked = sorted(words, key=lambda d: (-len(set(text.split()) & words[d]), int(d[1:])))
        run += [f"{q} Q0 {d} {r} {len(ranked) - r}.5 overlap\n" for r, d in enumerate(ranked, start=1)]
        qrels += [f"{q} 0 {d} {rng.randint(0, 2)}\n" for d in rng.sample(ranked[:20], 6)]
        scores += [f"{q}\t{d}\t{u}\t{rng.gauss(0, 1):.6f}\n" for d in ranked[:10] for u in range(6)]
    (root / "run.txt").write_text("".join(run))
    (root / "qrels.txt").write_text("".join(qrels))
    (root / "scores.tsv").write_text("".join(scores))
    record_unit_scores(root / "scores.tsv")  # as score's sidecar would
    (root / "folds.json").write_text(json.dumps({"1": list(topics)[::2], "2": list(topics)[1::2]}) + "\n")
    return {name.split(".")[0]: root / name for name in ("docs.jsonl", "topics.tsv", "run.txt", "qrels.txt",
                                                         "scores.tsv", "folds.json")}


def test_evaluate_on_a_full_disk_through_the_command_line(disk, collection):
    argv = [sys.executable, "-m", "reranker", "evaluate", "--run", str(collection["run"]), "--qrels",
            str(collection["qrels"]), "--out", str(disk.path / "eval.json"), "--measures", "AP@1000", "P@5", "P@10",
            "P@20", "nDCG@10", "nDCG@20", "R@100", "RR@10"]

    def run() -> tuple[int, str]:
        done = subprocess.run(argv, capture_output=True, text=True)
        return done.returncode, done.stderr
    whole, _ = full_then_freed(disk, run, "evaluate", ["eval.json"])
    assert len(whole["eval.json"]) > 2 * PAGE  # cut partway, not before its first byte


def test_segment_on_a_full_disk(disk, collection, capsys):
    out = disk.path / "seg.jsonl"
    argv = ["--docs", str(collection["docs"]), "--run", str(collection["run"]), "--topics", str(collection["topics"]),
            "--candidates", "10", "--out", str(out)]
    whole, _ = full_then_freed(disk, in_process(segment, argv, capsys), "segment", ["seg.jsonl", "seg.jsonl.meta.json"])
    assert len(whole["seg.jsonl"]) > 2 * PAGE


def test_fuse_on_a_full_disk(disk, collection, capsys):
    argv = ["birch", "--section", "birch", "--run", str(collection["run"]), "--scores", str(collection["scores"]), "--qrels",
            str(collection["qrels"]), "--folds", str(collection["folds"]), "--top-n", "3", "--out",
            str(disk.path / "fused.run"), "--params-out", str(disk.path / "fused.json")]
    whole, _ = full_then_freed(disk, in_process(fuse, argv, capsys), "fuse", ["fused.run", "fused.json"])
    assert len(whole["fused.run"]) > 2 * PAGE


@pytest.fixture
def torch_threads():
    """score's and train's --threads set torch's for the process: put it back for the other tests."""
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


SHM = 32 << 10  # the score cache's shared-memory file (SQLite's WAL index), made when it opens


@pytest.mark.parametrize("kept", ["shards", "cache"])
def test_score_on_a_full_disk_resumes_from_what_it_kept(disk, collection, tiny_model_dir, tmp_path, capsys, kept,
                                                        torch_threads):
    """Shards (without a cache), or shards and the cache (SQLite), on the disk: the failed run keeps whole shards
    and committed cache rows, the rerun scores only the rest and writes the reference's bytes."""
    segments = tmp_path / "seg.jsonl"
    assert segment.main(["--docs", str(collection["docs"]), "--run", str(collection["run"]), "--topics",
                         str(collection["topics"]), "--candidates", "2", "--out", str(segments)]) == 0
    layer = tmp_path / "layer.yaml"
    layer.write_text(yaml.safe_dump({"run_dir": str(tmp_path / "run"), "segment": {"candidates": 2},
                                     "checkpoints": {"tiny": {"source": "hf", "model": str(tiny_model_dir)}},
                                     "score": {"batch_size": 16, "shard_size": 100}}))
    out = disk.path / "scored.tsv"
    argv = ["--config", str(layer), "--checkpoint", "tiny", "--segments", str(segments), "--run", str(collection["run"]),
            "--topics", str(collection["topics"]), "--threads", "1", "--out", str(out),
            *(["--no-cache"] if kept == "shards" else ["--cache", str(disk.path / "cache")])]
    size = None if kept == "shards" else lambda used, _: SHM + used // 2  # the cache opens, then fills
    whole, _ = full_then_freed(disk, in_process(sc, argv, capsys), "score", ["scored.tsv"], size=size)
    meta = json.loads(meta_path(out).read_text())
    assert meta["shards_resumed"] + meta["cache_hits"] > 0 and meta["scored"] < meta["pairs"], meta
    assert meta["shards"] >= 4 and len(whole["scored.tsv"]) > 2 * PAGE and not shard_dir(out).exists()


def test_a_cache_that_cannot_open_on_a_full_disk_says_so(disk):
    """SQLite's shared-memory file takes 32 KiB: on less, SQLite said 'disk I/O error' (score's traceback, exit 1);
    now it is a full disk naming the cache."""
    disk.resize(PAGE * 4)
    with pytest.raises(OSError, match=rf"No space left on device: '{re.escape(str(disk.path))}/cache/scores.sqlite'"):
        ScoreCache(disk.path / "cache")


def test_train_resumes_from_its_last_state_after_a_full_disk(disk, collection, tiny_model_dir, capsys, torch_threads):
    """Two steps, a state saved after each; the disk holds one state but not the second beside it. The failed run
    keeps the first (whole), the rerun goes on from it, and the checkpoint equals an uninterrupted run's."""
    out = disk.path / "ckpt"
    argv = ["--base", str(tiny_model_dir), "--docs", str(collection["docs"]), "--topics", str(collection["topics"]),
            "--qrels", str(collection["qrels"]), "--run", str(collection["run"]), "--out", str(out), "--batch-size", "4",
            "--max-pairs", "8", "--epochs", "1", "--eval-every", "1", "--max-length", "64", "--trainable", "head",
            "--select", "last", "--threads", "1"]
    # A state is about the weights' size (with a head's optimiser and the logs): one fits, the second beside it not.
    weights = (tiny_model_dir / "model.safetensors").stat().st_size
    files = ["ckpt/model.safetensors", f"ckpt/{LOG_FILE}", f"ckpt/{VALIDATION_FILE}"]
    _, err = full_then_freed(disk, in_process(train, argv, capsys), "train", files, size=weights * 3 // 2 // PAGE * PAGE)
    assert f"resumed at step 1 of 2 from {resume_path(out)}" in err
    assert not resume_path(out).exists() and is_complete(out)


# ---------------------------------------------------------------- SIGKILL during a promote; two promotes at once

def promotable(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A run whose six published files all differ from the reference's: (config, run, reference)."""
    path = compare_setup(tmp_path, 0.35, 0.25)
    run, ref = tmp_path / "run", tmp_path / "ref"
    for name in ("radboud_2_1", "ntnu_5_1"):
        for folder, value in ((run, 0.5), (ref, 0.4)):
            numbers(folder / "numbers" / f"{name}.json", {"c": {"BERT": {"RR@10": value}}})
            (folder / "tables" / f"{name}.md").write_text(f"{value}\n")
    return path, run, ref


def published(folder: Path) -> dict[str, bytes]:
    """Every file below `folder` but a promote's lock (empty, git-ignored, left by design)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != promote.LOCK}


def paused_promote(path: Path) -> subprocess.Popen:
    """`compare --promote` with a pause after each staged file and rename (promote.PAUSE)."""
    return subprocess.Popen([sys.executable, "-m", "reranker", "compare", "--config", str(path), "--promote"],
                            env={**os.environ, promote.PAUSE: "0.2"}, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def wait_until(ready, process: subprocess.Popen, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while not ready() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert process.poll() is None, "the promote ended first"


def kill_when(path: Path, ready) -> None:
    """Start a paused promote, SIGKILL it once `ready()`."""
    process = paused_promote(path)
    wait_until(ready, process)
    os.kill(process.pid, signal.SIGKILL)
    assert process.wait() == -signal.SIGKILL, "the promote ended before it was killed"


def test_a_promote_killed_mid_swap_is_refused_by_compare_then_finished_by_the_next_promote(tmp_path, capsys):
    """A killed promote once left new tables beside old numbers, and no sign of it. Now the reference holds a
    marker from the first rename to the last; compare refuses it, and the next promote finishes the swap."""
    path, run, ref = promotable(tmp_path)
    old, new = published(ref), published(run)
    marker = ref / promote.MARKER

    def swapping() -> bool:
        return marker.exists() and any(published(ref).get(name) == data for name, data in new.items())
    kill_when(path, swapping)
    mixed = {name: data for name, data in published(ref).items() if name != promote.MARKER}
    assert marker.exists() and all(data for data in mixed.values())  # no file cut short
    assert {mixed[n] == new[n] for n in new} == {True, False} and all(mixed[n] in (old[n], new[n]) for n in new)
    capsys.readouterr()
    assert compare.main(["--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{marker}: a promote of {run} was interrupted" in err and "--promote" in err
    assert compare.main(["--config", str(path), "--promote"]) == 0  # the killed holder's lock went with it
    assert "finished an interrupted promote" in capsys.readouterr().out
    assert published(ref) == new and not promote.staging_dir(ref).exists()
    assert compare.main(["--config", str(path)]) == 0


def test_a_promote_killed_while_staging_leaves_the_reference_as_it_was(tmp_path, capsys):
    path, run, ref = promotable(tmp_path)
    old, new, staging = published(ref), published(run), promote.staging_dir(ref)
    kill_when(path, lambda: staging.is_dir() and len(published(staging)) >= 2)
    assert published(ref) == old and staging.is_dir()
    assert compare.main(["--config", str(path)]) == 1  # the old reference, whole: the run drifts from it
    assert compare.main(["--config", str(path), "--promote"]) == 0
    assert published(ref) == new and not staging.exists()


def test_a_second_promote_into_a_reference_being_promoted_is_refused(tmp_path, capsys):
    """Two promotes at once would stage into one folder and swap together: the second is refused in one line,
    the first finishes, and the reference is its run's."""
    path, run, ref = promotable(tmp_path)
    new, staging = published(run), promote.staging_dir(ref)
    first = paused_promote(path)
    try:
        wait_until(lambda: staging.is_dir() and len(published(staging)) >= 1, first)
        capsys.readouterr()
        assert compare.main(["--config", str(path), "--promote"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith(f"compare: error: {ref}: another promote into it is running")
        assert first.wait(timeout=60) == 0
    finally:
        if first.poll() is None:
            first.kill()
            first.wait()
    assert published(ref) == new and not staging.exists() and not (ref / promote.MARKER).exists()
    assert compare.main(["--config", str(path), "--promote"]) == 0  # the lock ended with its holder


# ---------------------------------------------------------------- two snakemake runs on one run folder

def snakemake(*args: str) -> list[str]:
    return [sys.executable, "-m", "snakemake", "--cores", "1", *args]


def layer(tmp_path: Path, name: str, run_dir: Path, gate: Path, caption: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump({**LAYER, "run_dir": str(run_dir),
                                    "plugins": [*LAYER["plugins"], "tests.plugins.gated_paper"],
                                    "fake_paper": {"collection": "cranfield", "caption": caption},
                                    "gated_paper": {"collection": "cranfield", "gate": str(gate)}}))
    return path


def wait_for(log: Path, text: str, process: subprocess.Popen, seconds: float = 300) -> None:
    deadline = time.monotonic() + seconds
    while text not in log.read_text() and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert text in log.read_text(), log.read_text()[-3000:]


def test_a_second_snakemake_on_a_folder_in_use_is_refused_and_the_first_run_finishes(tmp_path, birch_data):
    """One run per run folder, for every entry point: the Snakefile takes the folder's lock (reranker/workflow/run_lock.py),
    so a second `snakemake` is refused before it schedules a job and the first run's outputs stay as it made them.
    Real Snakemake processes on Cranfield; the first holds its run in a job that waits for the test's gate file
    (tests/plugins/gated_paper.smk)."""
    run_dir, gate = tmp_path / "run", tmp_path / "gate"
    mine, other = layer(tmp_path, "mine", run_dir, gate, "mine"), layer(tmp_path, "other", run_dir, gate, "other")
    docs, held = run_dir / "work" / "collections" / "cranfield" / "docs.jsonl", run_dir / "work" / "gated" / "cranfield.count"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    log = tmp_path / "first.log"
    with open(log, "w") as sink:
        first = subprocess.Popen(snakemake("--configfile", str(mine), "--", str(held)), cwd=REPO, stdout=sink,
                                 stderr=subprocess.STDOUT, env=env, start_new_session=True)
    try:
        wait_for(log, "rule gated_count:", first)  # the export is done; its job waits, in a child holding nothing
        made = docs.read_bytes(), docs.stat().st_mtime_ns
        config = (run_dir / "config.yaml").read_bytes()

        # A real run with another configuration, forcing the first's finished job again: refused, one line.
        second = subprocess.run(snakemake("--forcerun", "export_collection", "--configfile", str(other), "--", str(held)),
                                cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
        assert second.returncode == BUSY, second.stderr[-3000:]
        errors = [line for line in second.stderr.splitlines() if "error" in line.lower()]
        assert len(errors) == 1 and errors[0].startswith("snakemake: error: run folder "), second.stderr[-3000:]
        assert f"{run_dir} is in use by pid {first.pid} " in errors[0] and "--configfile" in errors[0], errors[0]
        assert "Traceback" not in second.stderr and "rule export_collection:" not in second.stdout + second.stderr

        # A dry run beside it reads and writes nothing.
        dry = subprocess.run(snakemake("-n", "--configfile", str(other), "--", str(held)), cwd=REPO, capture_output=True,
                             text=True, env=env, timeout=300)
        assert dry.returncode == 0 and f"note: run folder {run_dir} is in use" in dry.stderr, dry.stderr[-3000:]
        assert (run_dir / "config.yaml").read_bytes() == config  # the first's, not the other configuration's

        gate.touch()
        assert first.wait(timeout=300) == 0, log.read_text()[-3000:]
        assert "note: run folder" not in log.read_text()  # its `run:` job's child read the Snakefile too, as the run's
    finally:
        gate.touch()
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
    assert (docs.read_bytes(), docs.stat().st_mtime_ns) == made
    assert held.read_text() == f"{len(made[0].splitlines())} documents, counted in a child process\n"
    lock = RunLock(run_dir)  # ended with its holder: the next run takes it
    assert lock.held and (run_dir / NAME).read_text().startswith(f"pid {os.getpid()} ")
    lock.release()


# ---------------------------------------------------------------- a corrupted cache byte

@pytest.fixture(scope="module")
def scorer(tiny_model_dir) -> scoring.Scorer:
    return scoring.Scorer(load_classifier(str(tiny_model_dir)), batch_size=4, device="cpu")


@pytest.fixture(scope="module")
def pairs() -> list[scoring.UnitPair]:
    return scoring.make_pairs(read_run(CORPUS / "run.txt"), read_topics_tsv(CORPUS / "topics.tsv"),
                         read_segments(CORPUS / "segments.jsonl"), 2)


def flip(blob: bytes, at: int = 3) -> bytes:
    """One byte changed: at 3, a little-endian float32's sign and high exponent bits."""
    changed = bytearray(blob)
    changed[at] ^= 0x3C
    return bytes(changed)


@pytest.mark.parametrize("damage", ["flipped byte", "stored as a float"])
def test_a_cache_row_changed_in_place_is_scored_again_not_served(tmp_path, capsys, damage):
    values = np.array([-0.0201, 1.5], dtype=np.float32)
    key, other = ScoreCache.key(["m"], "q", "t"), ScoreCache.key(["m"], "q", "u")
    cache = ScoreCache(tmp_path)
    cache.put([(key, values), (other, values + 1)])
    cache.close()
    with sqlite3.connect(tmp_path / "scores.sqlite") as db:
        blob = db.execute("SELECT logits FROM logits WHERE key = ?", (key,)).fetchone()[0]
        db.execute("UPDATE logits SET logits = ? WHERE key = ?", (flip(blob) if damage == "flipped byte" else -0.0201, key))
        assert db.execute("PRAGMA integrity_check").fetchone()[0] == "ok"  # SQLite sees nothing wrong

    cache = ScoreCache(tmp_path)
    found = cache.get([key, other])
    assert list(found) == [other] and cache.rejected == 1
    assert "1 rows of" in capsys.readouterr().err
    cache.put([(key, values), (other, values + 7)])  # the rejected row is replaced; a good one keeps its value
    found = cache.get([key, other])
    assert np.array_equal(found[key], values) and np.array_equal(found[other], values + 1) and cache.rejected == 1
    cache.close()


def test_scores_from_a_damaged_cache_are_those_of_a_sound_one(scorer, pairs, tmp_path):
    cache = ScoreCache(tmp_path / "cache")
    first = scoring.score_pairs_sharded(scorer, pairs, tmp_path / "first.tsv", cache=cache, shard_size=4)
    assert first["cache_rejected"] == 0 and first["scored"] == len({(p.query, p.text) for p in pairs}) > 6
    with sqlite3.connect(cache.path) as db:
        key, blob = db.execute("SELECT key, logits FROM logits ORDER BY key LIMIT 1").fetchone()
        at = 4 * scorer.classifier.relevant_index + 3  # in the logit the score reads
        db.execute("UPDATE logits SET logits = ? WHERE key = ?", (flip(blob, at), key))
    stored, served = (scorer.read(np.frombuffer(b, dtype=np.float32)[None].copy())[0] for b in (blob, flip(blob, at)))
    assert abs(stored - served) > 1e-3  # what serving the damaged row would have changed
    again = scoring.score_pairs_sharded(scorer, pairs, tmp_path / "again.tsv", cache=cache, shard_size=4)
    assert again["cache_rejected"] == 1 and again["scored"] == 1 and again["cache_hits"] == len(pairs) - 1
    before, after = (read_unit_scores(tmp_path / name) for name in ("first.tsv", "again.tsv"))
    flat = [(v, w) for q in before for d in before[q] for v, w in zip(before[q][d], after[q][d])]
    assert max(abs(v - w) for v, w in flat) < 1e-5  # recomputed (in a batch of its own), not served
    cache.close()
