"""tools/duplicates.py, the repeated-code check of `make lint`: what it counts as a pair (names folded), and a
run over the repository, which must have none."""

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
    assert done.stdout.splitlines()[-1] == "1 pair of 6 or more lines of the same shape"
    assert run("--report", a, b).returncode == 0


def test_five_lines_imports_and_signatures_are_no_pair(tmp_path):
    imports = "".join(f"import m{i}\n" for i in range(6))
    signature = "def f(\n    a,\n    b,\n    c,\n    d,\n    e,\n):\n"
    for f in ("a.py", "b.py"):
        (tmp_path / f).write_text(imports + "\n" + signature + "".join("    " + line for line in BODY[:5]))
    done = run(tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines()[-1] == "0 pairs of 6 or more lines of the same shape"


def test_a_copy_with_its_names_changed_is_a_pair_and_one_with_other_literals_is_not(tmp_path):
    """Names fold (a copy with its variables renamed is a copy); literals stay (a rule of the same shape for
    another stage differs in them)."""
    a, b = tmp_path / "a.py", tmp_path / "b.py"
    a.write_text("".join(BODY))
    b.write_text("".join(line.replace("x", "y").replace("total", "summed") for line in BODY))
    done = run(a, b)
    assert done.returncode == 1 and f"6 lines: {a}:1-6 = {b}:1-6" in done.stdout
    b.write_text("".join(f"x{i} = total(x{i - 1}, {i + 10})\n" for i in range(1, 7)))
    assert run(a, b).returncode == 0


def test_the_repository_has_no_pair():
    done = run()
    assert done.returncode == 0, done.stdout + done.stderr
