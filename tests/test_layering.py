"""The library's layering: each module lives in a layer's folder, and imports (at import time or inside a
function, `importlib.import_module` of a constant included) only lower layers or its own folder, with no cycle.
So no stage reaches the workflow's logic or an experiment: rules hand stages every input they read."""

from __future__ import annotations

import ast
import graphlib
import io
import re
import tokenize
from pathlib import Path

import pytest

from reranker.__main__ import STAGES

PACKAGE = Path(__file__).resolve().parent.parent / "reranker"
# Low to high; folders of one layer never import each other.
LAYERS = {"formats": 0, "core": 1, "measures": 1, "neural": 2, "corpora": 2, "ranking": 2, "reproduction": 2,
          "report": 3, "stages": 4, "experiments": 5, "workflow": 6}
TOP = {"reranker", "reranker.__main__"}  # the package and the command line, above every layer
MAX_LINES = 500
OVER_LIMIT: set[str] = set()  # none left: collections and train were split


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


MODULES = modules()


def folder(name: str) -> str | None:
    return name.split(".")[1] if name not in TOP else None


def imports(name: str) -> set[str]:
    """The reranker modules a module imports anywhere in its text (functions and import_module constants included)."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text())):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}  # `from reranker.core import settings`
        elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
              and node.args and isinstance(node.args[0], ast.Constant)):
            found.add(node.args[0].value)
    # the root package is a namespace here (`from reranker import measures` imports measures)
    return {m for m in found if m in MODULES and m not in (name, "reranker")}


GRAPH = {name: imports(name) for name in MODULES}


def reachable(start: str) -> dict[str, str]:
    """Every reranker module `start` reaches, each with the module that imports it."""
    seen, todo = {start: ""}, [start]
    while todo:
        current = todo.pop()
        for name in sorted(GRAPH[current]):
            if name not in seen:
                seen[name] = current
                todo.append(name)
    return seen


def test_every_module_lives_in_a_layer_folder():
    stray = [name for name in MODULES if name not in TOP and folder(name) not in LAYERS]
    assert not stray, f"modules outside the layer folders {sorted(LAYERS)}: {stray}"


def test_no_import_from_a_higher_layer_or_a_sibling_folder():
    bad = []
    for name, targets in GRAPH.items():
        if name in TOP:
            continue
        for target in targets:
            if target in TOP:
                bad.append(f"{name} -> {target}")
            elif folder(target) != folder(name) and LAYERS[folder(target)] >= LAYERS[folder(name)]:
                bad.append(f"{name} -> {target}")
    assert not bad, "imports up or sideways: " + "; ".join(sorted(bad))


def test_no_import_cycle():
    try:
        tuple(graphlib.TopologicalSorter(GRAPH).static_order())
    except graphlib.CycleError as err:
        pytest.fail(f"import cycle: {' -> '.join(err.args[1])}")


def test_no_module_over_500_lines():
    lines = {name: len(path.read_text().splitlines()) for name, path in MODULES.items()}
    over = {name: n for name, n in lines.items() if n > MAX_LINES and name not in OVER_LIMIT}
    assert not over, f"over {MAX_LINES} lines: {over}"
    assert all(lines[name] > MAX_LINES for name in OVER_LIMIT), "a module split below the limit: drop it from OVER_LIMIT"


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_stages_table_names_real_modules(stage):
    name = f"reranker.stages.{stage}"
    assert name in MODULES, f"`python -m reranker {stage}` has no module {name}"
    assert any(isinstance(node, ast.FunctionDef) and node.name == "main" for node in ast.parse(MODULES[name].read_text()).body)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_no_stage_imports_the_workflow_or_an_experiment(stage):
    seen = reachable(f"reranker.stages.{stage}")
    bad = {name: via for name, via in seen.items() if folder(name) in ("workflow", "experiments")}
    assert not bad, f"stage {stage} reaches {', '.join(f'{n} (imported by {v})' for n, v in bad.items())}"


def test_the_checks_see_imports_inside_functions_and_cycles():
    assert "reranker.core.settings" in imports("reranker.stages.score")
    assert "reranker.report.run_records" in imports("reranker.workflow.finish")  # inside a function or at the top
    cyclic = {"a": {"b"}, "b": {"a"}}
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter(cyclic).static_order())


def argparse_imports(source: str) -> list[int]:
    """The line of each `import argparse` and `from argparse import ...` (at the top or inside a function)."""
    return sorted(node.lineno for node in ast.walk(ast.parse(source))
                  if isinstance(node, ast.Import) and any(alias.name.split(".")[0] == "argparse" for alias in node.names)
                  or isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "argparse" and node.level == 0)


def test_no_report_module_imports_argparse():
    """The report's functions are typed; the command line (its parsers, its Namespace) is the tables stage's."""
    found = {name: lines for name, path in MODULES.items() if folder(name) == "report"
             for lines in [argparse_imports(path.read_text())] if lines}
    assert not found, f"report modules importing argparse (lines): {found}"


def test_the_argparse_check_sees_every_form_of_the_import():
    source = "import argparse\nfrom argparse import Namespace\nimport os, argparse as ap\ndef f():\n    import argparse\nimport json\n"
    assert argparse_imports(source) == [1, 2, 3, 5]


# No paper's section is read in the core: what is a paper's comes from its plugin (reranker/experiments/), whose
# rules name its section. Checked: the library below the plugins, the DAG's logic, the Snakefile and the shared rules.
PAPERS = ("birch", "radboud", "ntnu", "fake_paper", "gated_paper")
CORE_FOLDERS = ("formats", "core", "measures", "neural", "corpora", "ranking", "reproduction", "report", "stages")
CORE_RULES = ("Snakefile", "workflow/rules/common.smk", "workflow/rules/collections.smk", "workflow/rules/retrieval.smk",
              "workflow/rules/evaluation.smk", "workflow/rules/training.smk", "workflow/rules/rerank.smk",
              "workflow/rules/tables.smk")


def paper_reads(source: str) -> list[tuple[int, str]]:
    """(line number, line) of each `x["paper"]`, `x.get("paper")`, `import reranker.experiments.<paper>` and a paper's
    name handed to a settings function (`settings.fuse(config, c, "paper")`: its section read by name) in a module."""
    found, lines, tree = [], source.splitlines(), ast.parse(source)
    readers = settings_names(tree)
    for node in ast.walk(tree):
        key = None
        if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
            key = node.slice.value
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
              and node.args and isinstance(node.args[0], ast.Constant)):
            key = node.args[0].value
        elif isinstance(node, ast.Call) and ast.unparse(  # `fuse(...)` imported from settings, or `settings.fuse(...)`
                node.func.value if isinstance(node.func, ast.Attribute) else node.func) in readers:
            key = next((a.value for a in [*node.args, *(k.value for k in node.keywords)]
                        if isinstance(a, ast.Constant) and a.value in PAPERS), None)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
            key = next((n.rsplit(".", 1)[1] for n in names if n.startswith("reranker.experiments.")), None)
        if key in PAPERS:
            found.append((node.lineno, lines[node.lineno - 1].strip()))
    return found


def settings_names(tree: ast.AST) -> set[str]:
    """The names under which a module reaches reranker.core.settings: the module's alias, or its functions'."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "reranker.core.settings":
            names |= {a.asname or a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module == "reranker.core":
            names |= {a.asname or a.name for a in node.names if a.name == "settings"}
    return names


def rule_files_text() -> dict[str, str]:
    return {name: (PACKAGE.parent / name).read_text() for name in CORE_RULES}


def test_no_paper_section_is_read_in_the_core():
    found = [(name, line, text) for name, path in MODULES.items()
             if folder(name) in CORE_FOLDERS or name == "reranker.workflow.experiment"
             for line, text in paper_reads(path.read_text())]
    assert found == []
    pattern = re.compile(r"""\[\s*["'](%s)["']\s*\]|\.get\(\s*["'](%s)["']|reranker\.experiments\.(%s)\b"""
                         % (("|".join(PAPERS),) * 3))
    assert [(name, m.group(0)) for name, text in rule_files_text().items() for m in pattern.finditer(text)] == []
    from reranker.formats.layout import PATTERNS
    assert [n for n in PATTERNS if n.startswith(PAPERS)] == []  # a paper's paths are its plugin's


def test_the_paper_check_sees_subscripts_gets_and_imports():
    source = ('x = config["birch"]["folds"]\ny = config.get("ntnu")\nimport reranker.experiments.radboud\n'
              'z = config["segment"]\nfrom reranker.experiments.base import Plugin\n')
    assert sorted(line for line, _ in paper_reads(source)) == [1, 2, 3]
    source = ('from reranker.core.settings import fuse as f\nfrom reranker.core import settings as s\n'
              'a = f(config, c, "birch")\nb = s.score(config, k, section="radboud")\nc = f(config, c, args.section)\n'
              'd = print("birch")\n')
    assert sorted(line for line, _ in paper_reads(source)) == [3, 4]  # a section named by the core, not by a flag


# Comments say why, and an issue number or a work package's name is no reason: a reader without the tracker learns
# nothing from it. Checked: comments and docstrings of the Python code, `#` comments of the rules and the Makefile.
CITATION = re.compile(r"\b[Ii]ssues? #?\d+|\bWP\d+[a-z]?\b|\bwp\d+[a-z]?\b")
ROOT = PACKAGE.parent


def python_comments(source: str) -> list[tuple[int, str]]:
    """(first line, text) of each comment and each module, class or function docstring; string literals are code."""
    found = [(t.start[0], t.string) for t in tokenize.generate_tokens(io.StringIO(source).readline)
             if t.type == tokenize.COMMENT]
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                and ast.get_docstring(node, clean=False) is not None):
            found.append((node.body[0].lineno, node.body[0].value.value))
    return found


def hash_comments(text: str) -> list[tuple[int, str]]:
    """(line, text) of each `#` comment in a Snakefile, a Makefile or YAML: from a `#` that starts a word to the line's end."""
    return [(n, m.group(0)) for n, line in enumerate(text.splitlines(), 1) if (m := re.search(r"(?:^|(?<=\s))#.*", line))]


def citations(path: Path) -> list[str]:
    """`file:line` of each issue number or work package's name in the file's comments and docstrings."""
    text = path.read_text(encoding="utf-8")
    pieces = python_comments(text) if path.suffix == ".py" else hash_comments(text)
    name = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    return [f"{name}:{line + piece[:m.start()].count(chr(10))}: {m.group(0)}"
            for line, piece in pieces for m in CITATION.finditer(piece)]


def commented_files() -> list[Path]:
    python = [p for folder in ("reranker", "tests", "tools", "benchmarks") for p in sorted((ROOT / folder).rglob("*.py"))
              if not p.is_relative_to(ROOT / "tests" / "data")]
    rules = [*sorted((ROOT / "workflow" / "rules").glob("*.smk")), *sorted((ROOT / "tests" / "plugins").glob("*.smk"))]
    return [*python, *rules, ROOT / "Snakefile", ROOT / "Makefile", ROOT / "tests" / "bad_inputs" / "cases.yaml"]


def test_no_comment_cites_an_issue_number():
    """A comment or docstring says why in plain words; an issue number or work package's name sends the reader away."""
    found = [hit for path in commented_files() for hit in citations(path)]
    assert not found, "comments citing an issue or a work package, say the reason instead:\n" + "\n".join(found)


def test_the_citation_check_sees_comments_and_docstrings_but_not_string_literals(tmp_path):
    """The check can fail: a planted citation is found in comments and docstrings, and a string literal the code uses
    (an error message, a shell command) is left alone."""
    planted = tmp_path / "planted.py"
    planted.write_text('"""Module.\n\nAs issue 12 asked."""\nx = "issue 7"  # see WP3\n\n\nclass C:\n'
                       '    """wp2b."""\n\n    def f(self):\n        """Fine."""\n        return "Issue #9"\n')
    assert [hit.split(": ")[0].rsplit(":", 1)[1] for hit in citations(planted)] == ["4", "3", "8"]
    rules = tmp_path / "rules.smk"
    rules.write_text('rule a:\n    shell: "echo issue 5"\n# issue 6: why\nrule b:  # WP1b\n')
    assert [hit.rsplit(": ", 1)[1] for hit in citations(rules)] == ["issue 6", "WP1b"]
