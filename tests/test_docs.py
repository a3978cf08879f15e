"""The README stays a five-minute read, and no link of it or of the documentation pages (docs/) is broken.

Checked here, without MkDocs: README.md is under 150 lines; every relative link of README.md and docs/*.md
names a file or folder of the checkout and, with a `#fragment`, a heading of that page; every source path
a page names in code (`reranker/...`, `tests/...`, `workflow/...`, `benchmarks/...`) exists, so a moved
module shows here; only the README names the offline mirrors' usual place. Where MkDocs is installed (the
dev extra), the site is built as `make docs` builds it, --strict, so its own link and anchor checks fail
the test too.
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]

FENCE = re.compile(r"^ *```.*?^ *```", re.DOTALL | re.MULTILINE)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
SOURCE = re.compile(r"`((?:reranker|tests|workflow|benchmarks)/[\w./-]+)`")


def slug(heading: str) -> str:
    """A heading's anchor as Python-Markdown's toc (MkDocs) and, for plain headings, GitHub make it."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading).replace("`", "")
    text = unicodedata.normalize("NFKD", text).encode("ascii", "ignore").decode()
    return re.sub(r"[-\s]+", "-", re.sub(r"[^\w\s-]", "", text).strip().lower())


def anchors(page: Path) -> set[str]:
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} +(.+?) *#*$", text, re.MULTILINE)}


def broken_links(page: Path) -> list[str]:
    """Each relative link of `page` whose file, or heading, is not there."""
    text = FENCE.sub("", page.read_text(encoding="utf-8"))
    broken = []
    for target in LINK.findall(text):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, mailto: ...: not checked offline
            continue
        path, _, fragment = target.partition("#")
        found = (page.parent / path).resolve() if path else page
        if not found.exists():
            broken.append(f"{target}: no such file")
        elif fragment and found.suffix == ".md" and fragment not in anchors(found):
            broken.append(f"{target}: no heading with that anchor")
    return broken


def test_the_readme_is_a_five_minute_read():
    lines = README.read_text(encoding="utf-8").splitlines()
    assert len(lines) < 150, f"README.md has {len(lines)} lines: move a section to docs/ (and link it)"
    assert "make run" in "\n".join(lines[:8]) and "make test" in "\n".join(lines[:8]), "README.md opens with the two commands"


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_link_resolves(page):
    assert broken_links(page) == []


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_source_path_named_exists(page):
    text = page.read_text(encoding="utf-8")
    named = {p for p in SOURCE.findall(text) if not re.search(r"[*<{]", p)}
    assert sorted(p for p in named if not (ROOT / p).exists()) == []


def test_the_check_finds_a_broken_link_and_anchor(tmp_path):
    (tmp_path / "a.md").write_text("# A `page`: one\n\n## Two words\n")
    page = tmp_path / "b.md"
    page.write_text(
        "[ok](a.md#a-page-one) [ok](a.md#two-words) [x](c.md) [y](a.md#three) [web](https://x.org/a)\n```\n[in code](nothing.md)\n```\n"
    )
    assert broken_links(page) == ["c.md: no such file", "a.md#three: no heading with that anchor"]


def test_only_the_readme_names_the_offline_mirrors():
    """The offline note in the README is the one page that names this workplace's `../shared`."""
    assert "../shared" in README.read_text(encoding="utf-8")
    assert [p.name for p in PAGES[1:] if "../shared" in p.read_text(encoding="utf-8")] == []


@pytest.mark.skipif(importlib.util.find_spec("mkdocs") is None, reason="mkdocs not installed (pip install -e .[dev])")
def test_the_site_builds_strictly(tmp_path):
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert (tmp_path / "site" / "index.html").is_file()
