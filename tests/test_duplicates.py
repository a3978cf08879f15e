"""tools/duplicates.py, the repeated-code check of `make lint`: what it counts as a pair, and a run over
the repository, which must have none (make lint fails on a pair)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

TOOL = Path(__file__).resolve().parent.parent / "tools" / "duplicates.py"
BODY = [f"x{i} = total(x{i - 1}, {i})\n" for i in range(1, 7)]


def run(*args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(TOOL), *map(str, args)], capture_output=True, text=True, timeout=120)


def test_a_six_line_pair_is_found_across_python_and_smk_files(tmp_path):
    # A comment inside one copy does not break the run; the .smk file is read as text.
    a, b = tmp_path / "a.py", tmp_path / "b.smk"
    a.write_text("import os\n\n" + "".join(BODY[:3]) + "# why\n" + "".join(BODY[3:]) + "y = 1\n")
    b.write_text('rule r:\n    """Doc."""\n    shell:\n        "true"\n\n' + "".join(BODY))
    done = run(a, b)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"6 lines: {a}:3-9 = {b}:6-11" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == "1 pair of 6 or more identical lines"
    assert run("--report", a, b).returncode == 0


def test_five_lines_imports_and_signatures_are_no_pair(tmp_path):
    imports = "".join(f"import m{i}\n" for i in range(6))
    signature = "def f(\n    a,\n    b,\n    c,\n    d,\n    e,\n):\n"
    for f in ("a.py", "b.py"):
        (tmp_path / f).write_text(imports + "\n" + signature + "".join("    " + line for line in BODY[:5]))
    done = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "0 pairs of 6 or more identical lines"


def test_the_repository_has_no_pair():
    done = run()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "0 pairs of 6 or more identical lines"
