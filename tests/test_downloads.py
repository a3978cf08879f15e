"""The files no library downloads (workflow/config/downloads.yaml, reranker/corpora/downloads.py), fetched for real:
an HTTP server on 127.0.0.1 stands in for the origins (BIRCH_DATA_URL, or a test registry's URLs), pooch fetches and
checks, and what a cut connection or another version leaves is looked at. No test reaches the internet."""

from __future__ import annotations

import gzip
import hashlib
import http.server
import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import numpy as np
import pytest
import yaml

from reranker.corpora import downloads
from reranker.corpora.downloads import DataError

REPO = Path(__file__).resolve().parent.parent


class Origin:
    """A small HTTP server on the loopback address: files from `root`, every GET counted; `cut` paths send their
    Content-Length and then half the body before the connection closes."""

    def __init__(self, root: Path, cut: set[str] = frozenset()):
        self.gets: list[str] = []
        origin = self

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *args, **kwargs):
                super().__init__(*args, directory=str(root), **kwargs)

            def do_GET(self):  # noqa: N802 (the standard library's name)
                origin.gets.append(self.path)
                name = self.path.lstrip("/")
                if name in cut:
                    body = (root / name).read_bytes()
                    self.send_response(200)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                super().do_GET()

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def origin_of(tmp_path):
    started = []

    def start(root: Path, cut: set[str] = frozenset()) -> Origin:
        started.append(Origin(root, cut))
        return started[-1]

    yield start
    for server in started:
        server.close()


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def registry(tmp_path: Path, files: dict) -> dict[str, downloads.Entry]:
    base = {"what": "a test file", "licence": "CC0 (a test)", "origin": "http://127.0.0.1/", "checked": "made by the test"}
    path = tmp_path / "downloads.yaml"
    path.write_text(yaml.safe_dump({"files": {name: {**base, **spec} for name, spec in files.items()}}))
    return downloads.load_registry(path)


def test_the_registry_names_every_file_the_profiles_read_with_its_origin_licence_and_checksum(birch_data):
    """Every ${BIRCH_DATA} path of the default, quick and paper configurations is registered (needed() refuses one that
    is not); every entry names its public origin, licence and how it was checked (the schema requires them), and
    every file the mirror holds matches its checksum."""
    from reranker import experiments

    entries = downloads.load_registry()
    for layers in ([], ["workflow/config/quick.yaml"], ["workflow/config/paper.yaml"]):
        needed = downloads.needed(experiments.load_config([REPO / f for f in layers]), entries, birch_data)
        assert {"classic/cisi.tar.gz", "radboud-thesis/bm25.top100.run.gz"} <= {e.path for e in needed}
    for entry in entries.values():
        assert entry.origin.startswith(("http://", "https://")) and entry.licence and entry.checked
        assert entry.derived or entry.url.startswith(("http://", "https://"))
        assert "127.0.0.1" not in (entry.url or "") and "shared" not in (entry.url or "")  # an origin, not a copy of ours
    assert len(downloads.verify_present(entries.values(), birch_data)) >= 14


def test_pooch_fetches_checks_and_refuses_and_a_cut_download_leaves_nothing(tmp_path, origin_of):
    served = tmp_path / "served"
    served.mkdir()
    good, other = b"qid Q0 doc 1 2.0 run\n" * 2000, b"another version\n" * 2000
    (served / "run.txt").write_bytes(good)
    (served / "other.txt").write_bytes(other)
    (served / "cut.txt").write_bytes(good)
    with tarfile.open(served / "bundle.tar.gz", "w:gz") as bundle:
        info = tarfile.TarInfo("bundle/qrels.txt")
        info.size = len(good)
        bundle.addfile(info, io.BytesIO(good))
    server = origin_of(served, cut={"cut.txt"})
    entries = registry(tmp_path, {
        "a/run.txt": {"url": f"{server.url}/run.txt", "sha256": sha(good), "size": len(good)},
        "a/other.txt": {"url": f"{server.url}/other.txt", "sha256": sha(good), "size": len(good)},
        "a/cut.txt": {"url": f"{server.url}/cut.txt", "sha256": sha(good), "size": len(good)},
        "a/qrels.txt": {"url": f"{server.url}/bundle.tar.gz", "member": "qrels.txt", "sha256": sha(good), "size": len(good),
                        "download_sha256": sha((served / "bundle.tar.gz").read_bytes())},
        "a/run.txt.gz": {"derive": {"kind": "gzip", "from": ["a/run.txt"], "how": "gzip"}, "sha256": sha(good),
                         "size": len(good)},
        "a/gone.txt": {"url": "http://127.0.0.1:9/gone.txt", "sha256": sha(good), "size": len(good)},  # nothing listens
    })
    root = tmp_path / "data"

    assert downloads.fetch(entries["a/run.txt"], root, progress=False).read_bytes() == good
    assert downloads.fetch(entries["a/qrels.txt"], root, progress=False).read_bytes() == good  # out of the archive
    made = downloads.derive(entries["a/run.txt.gz"], entries, root)
    assert gzip.decompress(made.read_bytes()) == good and made.read_bytes()[4:8] == b"\0\0\0\0"  # no time in the header

    with pytest.raises(DataError, match="refused"):  # another version: refused, nothing in place
        downloads.fetch(entries["a/other.txt"], root, progress=False)
    with pytest.raises(DataError, match="could not download|refused"):  # half the body, then the connection closed
        downloads.fetch(entries["a/cut.txt"], root, progress=False)
    with pytest.raises(DataError, match=r"could not download http://127.0.0.1:9/gone.txt .*set BIRCH_DATA"):
        downloads.fetch(entries["a/gone.txt"], root, progress=False)
    assert sorted(p.name for p in (root / "a").iterdir()) == ["qrels.txt", "run.txt", "run.txt.gz"]  # no temporary left
    assert set(downloads.verify_present(entries.values(), root)) == {root / "a" / n for n in ("run.txt", "qrels.txt", "run.txt.gz")}

    (root / "a" / "run.txt").write_bytes(good[:-1] + b"!")  # one byte changed
    with pytest.raises(DataError, match=rf"run.txt: sha256 {sha(good[:-1] + b'!')}, expected {sha(good)} .*delete it"):
        downloads.verify_present(entries.values(), root)


def test_derived_files_are_the_sources_recipes(tmp_path):
    """The thesis' folds from its arrays (positions + 1; train sorted) and its run from the fold runs (prefixes
    stripped, ranks to the depth), each checked against the content the registry records."""
    sources = tmp_path / "data"
    (sources / "f").mkdir(parents=True)
    np.save(sources / "f" / "test_index_fold1.npy", np.array([2, 0], dtype=np.int64))
    np.save(sources / "f" / "train_index_fold1.npy", np.array([3, 1], dtype=np.int64))
    (sources / "f" / "result-BM25-Fold1").write_text("Q1\tQ0\tD9\t1\t3.5\trun\nQ1\tQ0\tD4\t2\t1.0\trun\nQ1\tQ0\tD7\t3\t0.0\trun\n")
    folds = json.dumps({"fold1": {"test_qids": ["3", "1"], "train_qids": ["2", "4"]}}, indent=1).encode()
    run = b"1 Q0 9 1 3.5 thesis-bm25\n1 Q0 4 2 1.0 thesis-bm25\n"
    arrays = ["f/test_index_fold1.npy", "f/train_index_fold1.npy"]
    entries = registry(tmp_path, {
        **{name: {"url": "http://127.0.0.1:9/x", "sha256": sha((sources / name).read_bytes()), "size": 1} for name in arrays},
        "f/result-BM25-Fold1": {"url": "http://127.0.0.1:9/x", "sha256": sha((sources / "f/result-BM25-Fold1").read_bytes()),
                                "size": 1},
        "f/folds.json": {"derive": {"kind": "folds_from_npy", "from": arrays, "how": "+1"}, "sha256": sha(folds), "size": 1},
        "f/run.gz": {"derive": {"kind": "trec_run_from_folds", "from": ["f/result-BM25-Fold1"], "how": "top 2", "depth": 2,
                                "tag": "thesis-bm25", "strip_query_prefix": "Q", "strip_doc_prefix": "D"},
                     "sha256": sha(run), "size": 1},
    })
    assert downloads.derive(entries["f/folds.json"], entries, sources).read_bytes() == folds
    assert gzip.decompress(downloads.derive(entries["f/run.gz"], entries, sources).read_bytes()) == run


def snakemake(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "snakemake", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **env}, timeout=900)


@pytest.mark.slow
def test_make_runs_data_steps_fetch_every_file_from_an_http_origin_and_a_second_run_downloads_nothing(
        tmp_path, origin_of, birch_data):
    """An empty data folder (a fresh clone's data/) with an HTTP mirror standing in for the origins (BIRCH_DATA_URL,
    the test-only setting): the DAG's `data` target fetches and checks every file the default reads; a second run
    downloads nothing; then a changed byte stops the next use (a dry run) in one line and exit 2."""
    server = origin_of(birch_data)
    data, run = tmp_path / "data", tmp_path / "run"
    data.mkdir()
    env = {"BIRCH_DATA": str(data), "BIRCH_DATA_URL": server.url}
    first = snakemake(["data", "--cores", "2", "--config", f"run_dir={run}"], env)
    assert first.returncode == 0, first.stderr[-3000:]
    registered = downloads.load_registry()
    from reranker import experiments

    named = {e.path for e in downloads.needed(experiments.load_config(), registered, birch_data)}  # as the config names them
    fetched = {str(p.relative_to(data)) for p in data.rglob("*") if p.is_file()}
    assert fetched == named and len(server.gets) == len(named) >= 14  # each once, as the mirror holds it
    assert all(downloads.verify(registered[name], data) for name in fetched)

    second = snakemake(["data", "--cores", "2", "--config", f"run_dir={run}"], env)
    assert second.returncode == 0 and "Nothing to be done" in second.stdout + second.stderr
    assert len(server.gets) == len(fetched)  # nothing downloaded again

    query = data / "classic" / "cacm" / "query.text"
    query.write_bytes(query.read_bytes().replace(b"I'm", b"I am", 1))
    altered = snakemake(["data", "-n", "--config", f"run_dir={run}"], env)
    assert altered.returncode == 2
    lines = [line for line in altered.stderr.splitlines() if line.strip() and not line.startswith("Using workflow specific profile")]
    assert len(lines) == 1 and lines[0].startswith(f"data: error: {query}: sha256 ")  # beside Snakemake's own profile notice
    assert registered["classic/cacm/query.text"].sha256 in lines[0]
    shutil.rmtree(data)


def test_the_data_folder_is_birch_data_else_data_in_the_checkout(monkeypatch):
    monkeypatch.delenv("BIRCH_DATA", raising=False)
    assert downloads.data_root() == Path("data")  # as `${BIRCH_DATA:-data}` expands in the configuration
    monkeypatch.setenv("BIRCH_DATA", "")
    assert downloads.data_root() == Path("data")
    monkeypatch.setenv("BIRCH_DATA", "/srv/mirror")
    assert downloads.data_root() == Path("/srv/mirror")


def test_offline_with_no_mirror_the_first_rule_that_needs_a_file_names_it_its_url_and_birch_data(tmp_path):
    """Nothing listens where the registry points (an offline machine): the fetch fails in one line, naming the file,
    its URL and BIRCH_DATA, and leaves nothing behind."""
    entry = downloads.load_registry()["trec-topics-qrels/topics.core17.txt"]
    offline = downloads.Entry(**{**entry.__dict__, "url": "http://127.0.0.1:9/data/core/core_nist.txt"})
    root = tmp_path / "data"
    with pytest.raises(DataError) as caught:
        downloads.fetch(offline, root, progress=False)
    line = str(caught.value)
    assert "\n" not in line and str(root / entry.path) in line and "http://127.0.0.1:9/data/core/core_nist.txt" in line
    assert "BIRCH_DATA" in line and not any(p.is_file() for p in root.rglob("*"))


def test_the_paper_profile_lists_every_licensed_collection_it_lacks_with_how_to_register_it():
    from reranker import experiments
    from reranker.corpora.load import load_collection
    from reranker.workflow import data as run_data

    config = experiments.load_config([REPO / "workflow" / "config" / "paper.yaml"])
    lines = run_data.licensed_missing([load_collection(c, config) for c in ("robust04", "core17", "core18", "cranfield")])
    assert [line.split(":")[0] for line in lines] == ["robust04", "core17", "core18"]
    assert "disks45/nocr/trec-robust-2004" in lines[0] and "https://ir-datasets.com/disks45.html#DataAccess" in lines[0]
    assert all("reads its documents from /" in line and "IR_DATASETS_HOME" in line for line in lines)
    default = experiments.load_config()
    assert run_data.licensed_missing([load_collection("robust04", default)]) == []  # run-only: its documents unused


def test_the_readmes_data_note_comes_after_the_two_commands_in_at_most_ten_lines():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert text.index("make run") < text.index("make test") < text.index("**Data.**")
    note = text[text.index("**Data.**"):].split("\n\n")[0].splitlines()
    assert len(note) <= 10 and "downloads.yaml" in note[2] and any("BIRCH_DATA" in line for line in note)
