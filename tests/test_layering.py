"""The library's layering: no stage reaches the workflow's logic or an experiment, directly or through
another module, at import time or inside a function. Rules hand stages every input they read."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from reranker.__main__ import STAGES

PACKAGE = Path(__file__).resolve().parent.parent / "reranker"
# What only the DAG may know: run-folder logic, rows and captions, and the papers' plugins.
ABOVE_STAGES = ("reranker.workflow", "reranker.experiments")


def module_file(name: str) -> Path | None:
    parts = name.split(".")[1:]
    if not parts:
        return PACKAGE / "__init__.py"
    relative = Path(*parts)
    for path in (PACKAGE / relative.with_suffix(".py"), PACKAGE / relative / "__init__.py"):
        if path.exists():
            return path
    return None


def imports(name: str) -> set[str]:
    """The reranker modules a module imports anywhere in its text (functions included)."""
    tree = ast.parse(module_file(name).read_text())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found |= {f"{node.module}.{alias.name}" for alias in node.names}  # `from reranker import settings`
    return {m for m in found if m.startswith("reranker") and module_file(m) is not None}


def reachable(start: str) -> dict[str, str]:
    """Every reranker module `start` reaches, each with the module that imports it."""
    seen, todo = {start: ""}, [start]
    while todo:
        current = todo.pop()
        for name in sorted(imports(current)):
            if name not in seen:
                seen[name] = current
                todo.append(name)
    return seen


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_no_stage_imports_the_workflow_or_an_experiment(stage):
    seen = reachable(f"reranker.{stage}")
    bad = {name: via for name, via in seen.items() if name.startswith(ABOVE_STAGES)}
    assert not bad, f"stage {stage} reaches {', '.join(f'{n} (imported by {v})' for n, v in bad.items())}"


def test_the_check_sees_an_import_inside_a_function(tmp_path):
    # The check itself can fail: the workflow module reaches itself, and a stage that imported it would.
    assert "reranker.workflow" in reachable("reranker.workflow")
    assert "reranker.settings" in imports("reranker.score")
