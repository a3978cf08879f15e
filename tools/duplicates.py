"""Repeated code: every run of six or more lines of the same shape shared by two places in the library,
the workflow's rules and the test papers (by default reranker/, workflow/, the Snakefile, tests/plugins/),
found by pylint's Symilar on the text with every name folded into one placeholder, so a copy with its
variables renamed is still a copy. Literals stay (two rules of one shape for other stages differ in them);
comments, docstrings, imports, def signatures and field declarations do not count. The Snakefile and the
.smk files are tokenized like Python, Snakemake's directives kept as words.

    python tools/duplicates.py [--report] [--min N] [PATH ...]

Prints one line per pair (`N lines: a.py:10-15 = rules/b.smk:40-45`), then the pairs by file. Exit 1
when any pair is found (make lint), 0 with --report (a listing only).
"""

from __future__ import annotations

import argparse
import ast
import io
import keyword
import sys
import tokenize
from collections import Counter
from pathlib import Path

from pylint.checkers.symilar import Symilar

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ("reranker", "workflow", "Snakefile", "tests/plugins")
SUFFIXES = (".py", ".smk")


def sources(paths: list[str]) -> list[Path]:
    """The files named, and the .py and .smk files under the folders named."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found += sorted(f for f in p.rglob("*") if f.suffix in SUFFIXES and "__pycache__" not in f.parts)
        elif p.is_file():
            found.append(p)
        else:
            raise SystemExit(f"duplicates: error: {p}: no such file or folder")
    return found


def blanked(text: str) -> str:
    """Python text with its import lines and def signatures emptied, line numbers kept.

    Symilar's own ignore_imports/ignore_signatures parse with astroid, whose inference follows the
    imports (models.py alone takes minutes through torch); the standard parser marks the same lines."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return text
    drop = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            drop.update(range(node.lineno, node.end_lineno + 1))
        elif isinstance(node, ast.AnnAssign) and node.value is None:
            drop.update(range(node.lineno, node.end_lineno + 1))  # a field's declaration, like a signature
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            drop.update(range(node.lineno, node.body[0].lineno))  # as pylint: def line to the body
    lines = text.splitlines(keepends=True)
    return "".join("\n" if n in drop else line for n, line in enumerate(lines, 1))


# Snakemake's directives are the rule's grammar, not its names: folding them would make any two rules alike.
DIRECTIVES = frozenset(
    "rule checkpoint input output params log benchmark threads resources priority message shell run script "
    "wildcard_constraints localrules ruleorder include configfile container conda envmodules group "
    "default_target retries cache handover wrapper notebook".split()
)


def folded(text: str) -> str:
    """The text with every name written as one placeholder, comments gone, line numbers kept: two runs that
    differ only in what they call things are then the same lines.

    Keywords, operators, literals and Snakemake's directives stay, so the shape of a line is compared, not
    its spelling. A string over several lines is written on its first, so that Symilar still knows a
    docstring by its quotes. Text the tokenizer cannot read is returned as it is."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return text
    lines = [[] for _ in range(text.count("\n") + 1)]
    for tok in tokens:
        if tok.type == tokenize.NAME:
            lines[tok.start[0] - 1].append(tok.string if keyword.iskeyword(tok.string) or tok.string in DIRECTIVES else "N")
        elif tok.type in (tokenize.NUMBER, tokenize.STRING, tokenize.OP):
            lines[tok.start[0] - 1].append(" ".join(tok.string.split()))
    return "\n".join(" ".join(words) for words in lines) + "\n"


def last_line(lineset, end: int) -> int:
    """1-based last code line of a run ending before 0-based `end` (Symilar's end runs past trailing blanks)."""
    return max(s.line_number for s in lineset.stripped_lines if s.line_number < end) + 1


def pairs(files: list[Path], least: int = 6) -> list[tuple[int, str, str]]:
    """(lines, 'file:first-last', 'file:first-last') for every repeated run of at least `least` lines."""
    # Symilar reports runs longer than its min_lines (pylint 4.1.1 compares with `>`): hence least - 1.
    sym = Symilar(min_lines=least - 1, ignore_comments=True, ignore_docstrings=True)
    for f in files:
        text = f.read_text(encoding="utf-8")
        sym.append_stream(name(f), io.StringIO(folded(blanked(text) if f.suffix == ".py" else text)))
    found = set()
    # Its public run() only prints, and keeps one pair of a run found in three places.
    for c in sym._iter_sims():
        a = f"{c.fst_lset.name}:{c.fst_file_start + 1}-{last_line(c.fst_lset, c.fst_file_end)}"
        b = f"{c.snd_lset.name}:{c.snd_file_start + 1}-{last_line(c.snd_lset, c.snd_file_end)}"
        found.add((c.cmn_lines_nb, *sorted((a, b))))
    return sorted(found, key=lambda p: (-p[0], p[1], p[2]))


def name(f: Path) -> str:
    f = f.resolve()
    return str(f.relative_to(ROOT)) if f.is_relative_to(ROOT) else str(f)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="duplicates", description=__doc__.split("\n\n")[0])
    ap.add_argument("paths", nargs="*", help=f"files or folders (default: {' '.join(DEFAULT)}, from the repository root)")
    ap.add_argument("--min", type=int, default=6, dest="least", help="shortest run reported, in lines (default 6)")
    ap.add_argument("--report", action="store_true", help="list the pairs and exit 0")
    args = ap.parse_args(argv)
    found = pairs(sources(args.paths or [str(ROOT / p) for p in DEFAULT]), args.least)
    for n, a, b in found:
        print(f"{n} lines: {a} = {b}")
    per_file = Counter(f for _, *locs in found for f in {loc.rsplit(":", 1)[0] for loc in locs})
    for f, k in per_file.most_common():
        print(f"  {f}: {k} pair{'s' * (k != 1)}")
    print(f"{len(found)} pair{'s' * (len(found) != 1)} of {args.least} or more lines of the same shape")
    return 1 if found and not args.report else 0


if __name__ == "__main__":
    sys.exit(main())
