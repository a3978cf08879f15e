"""What a stage writes and what a configuration says, under one discipline (formats.outputs, formats.strict_yaml):
the mechanisms the bad-input corpus exercises case by case (tests/bad_inputs/cases.yaml: outputs, numbers and
configurations), here where a case cannot show them: two writers of one output, Ctrl-C, Snakemake's own reading of
a configuration file."""

from __future__ import annotations

import http.server
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from reranker.formats import outputs, strict_yaml
from reranker.formats.errors import ConfigError

REPO = Path(__file__).resolve().parent.parent
FILES = REPO / "tests" / "bad_inputs" / "files"


def test_a_second_writer_of_one_output_is_refused_while_the_first_holds_it(tmp_path, capsys):
    from reranker.stages import evaluate

    out = tmp_path / "out.json"
    argv = ["--run", str(FILES / "run.txt"), "--qrels", str(FILES / "qrels.txt"), "--out", str(out)]
    with outputs.held("evaluate", argv):  # the first writer, mid-way
        assert evaluate.main(argv) == 2
        assert not out.exists()
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{out}: another process is writing it (--out)" in err
    assert evaluate.main(argv) == 0 and out.exists()  # once the first has ended


class SlowOrigin(http.server.BaseHTTPRequestHandler):
    """Answers with a Content-Length and then a trickle: a download that Ctrl-C interrupts."""
    asked = threading.Event()

    def do_GET(self):  # noqa: N802
        SlowOrigin.asked.set()
        self.send_response(200)
        self.send_header("Content-Length", "1000000")
        self.end_headers()
        for _ in range(600):
            try:
                self.wfile.write(b"x" * 100)
                self.wfile.flush()
            except OSError:
                return
            time.sleep(0.1)

    def log_message(self, *args):
        pass


def test_ctrl_c_is_one_line_exit_130_and_leaves_nothing_at_the_output(tmp_path):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), SlowOrigin)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    data = tmp_path / "data"
    env = {**os.environ, "BIRCH_DATA": str(data), "BIRCH_DATA_URL": f"http://127.0.0.1:{server.server_address[1]}"}
    try:
        # SIGINT as a terminal delivers it: a background job (nohup, CI) starts with SIGINT ignored, which the child
        # would inherit, and Python then leaves it ignored
        process = subprocess.Popen([sys.executable, "-m", "reranker", "data", "fetch", "--path", "classic/cacm/query.text",
                                    "--no-progress"], cwd=REPO, env=env, stderr=subprocess.PIPE, text=True,
                                   preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))  # noqa: PLW1509
        assert SlowOrigin.asked.wait(120)
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        _, err = process.communicate(timeout=60)
    finally:
        server.shutdown()
        server.server_close()
    lines = [line for line in err.splitlines() if line.strip() and not line.startswith("Downloading data from")]
    assert process.returncode == 130 and lines == ["data: interrupted; no output was left half-written"], err
    assert not [p for p in data.rglob("*") if p.is_file()]


def test_yaml_that_says_something_else_is_refused_with_where(tmp_path):
    with pytest.raises(ConfigError, match=r"x\.yaml: not valid YAML \(the key 'k' is given twice in one mapping \(lines 2 and 3\)"):
        strict_yaml.loads("a: 1\nk: 1\nk: 2\n", "x.yaml")
    with pytest.raises(ConfigError, match=r"x\.yaml: a/1/b: not a finite number"):
        strict_yaml.loads("a: [1, {b: .inf}]\n", "x.yaml")
    merged = strict_yaml.loads("base: &b {x: 1, y: 2}\nother:\n  <<: *b\n  y: 3\n", "x.yaml")
    assert merged["other"] == {"x": 1, "y": 3}  # a merge key's values may be overridden: not a duplicate
    bomb = "a: &a [1, 1, 1, 1, 1, 1, 1, 1, 1, 1]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(6))
    started = time.monotonic()
    with pytest.raises(ConfigError, match="expand it beyond 1,000,000 values"):
        strict_yaml.loads(bomb, "bomb.yaml")
    assert time.monotonic() - started < 5


def test_snakemake_refuses_a_configuration_file_with_a_key_twice_in_one_line(tmp_path, birch_data):
    """Snakemake's own reader keeps the last of two keys; the Snakefile reads each file strictly first."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("segment:\n  candidates: 5\nsegment:\n  candidates: 30\n")
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--configfile", str(mine), "--config",
                           f"run_dir={tmp_path / 'run'}"], cwd=REPO, capture_output=True, text=True, timeout=600)
    lines = [line for line in done.stderr.splitlines() if line.strip() and not line.startswith("Using workflow specific")]
    assert done.returncode == 2 and len(lines) == 1, done.stderr[-2000:]
    assert lines[0].startswith(f"config: error: {mine}: not valid YAML (the key 'segment' is given twice")


@pytest.mark.skipif(os.geteuid() != 0, reason="a root-owned checkout is made as root")
def test_the_image_wrapper_names_why_uid_1000_cannot_write_a_root_owned_checkout(tmp_path):
    """As root in a root-owned clone, the image runs as uid 1000: the wrapper says that is why, before any engine
    starts (inside, the entrypoint could only say the checkout is read-only)."""
    checkout = tmp_path / "clone"
    checkout.mkdir(mode=0o755)
    done = subprocess.run([str(REPO / "containers" / "run"), "--checkout", str(checkout), "bash"], capture_output=True, text=True)
    assert done.returncode == 2 and "owned by root (mode 755) and the image runs as uid 1000, which cannot write it" in done.stderr
    checkout.chmod(0o777)  # writable by others: the wrapper goes on (to the engine, present or not)
    done = subprocess.run([str(REPO / "containers" / "run"), "--checkout", str(checkout), "--engine", "none", "bash"],
                          capture_output=True, text=True)
    assert "owned by root" not in done.stderr
