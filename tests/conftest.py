"""Test configuration: offline caches and a tiny but real model.

The offline mirrors default to `../shared` beside the checkout (this workplace's layout); set
IR_DATASETS_MIRROR, HF_HOME and BIRCH_DATA to use others. ir_datasets writes derived files beside
its sources, so the mirror is copied into a writable cache first.
"""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED = REPO.parent / "shared"


def _default(name: str, value: Path) -> None:
    if not os.environ.get(name) and value.exists():
        os.environ[name] = str(value)


_default("IR_DATASETS_MIRROR", SHARED / "ir_datasets")
_default("HF_HOME", SHARED / "hf_home")
_default("BIRCH_DATA", SHARED / "data")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# Rules call `python`: the interpreter running the tests (the suite's venv) must come first.
os.environ["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("OPENAI_API_KEY", "not-used-by-birch-repro")
if not os.environ.get("IR_DATASETS_HOME"):
    os.environ["IR_DATASETS_HOME"] = str(REPO / ".cache" / "ir_datasets")


def _fill_ir_datasets_cache() -> None:
    mirror = os.environ.get("IR_DATASETS_MIRROR")
    home = Path(os.environ["IR_DATASETS_HOME"])
    if mirror and Path(mirror).exists():
        home.mkdir(parents=True, exist_ok=True)
        shutil.copytree(mirror, home, dirs_exist_ok=True,
                        ignore=lambda d, names: [n for n in names if (home / Path(d).relative_to(mirror) / n).is_file()])


_fill_ir_datasets_cache()

TINY_BASE = "sentence-transformers/all-MiniLM-L6-v2"
TINY_LAYERS = 2


@pytest.fixture(scope="session")
def birch_data() -> Path:
    path = Path(os.environ.get("BIRCH_DATA", REPO / "data"))
    if not path.exists():
        pytest.skip(f"BIRCH_DATA ({path}) is absent")
    return path


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory) -> Path:
    """The first 2 layers of all-MiniLM-L6-v2 with a seeded two-way head, saved in HF format."""
    from reranker.neural.models import load_classifier, write_meta

    classifier = load_classifier(TINY_BASE, num_layers=TINY_LAYERS, seed=0)
    out = tmp_path_factory.mktemp("tiny-minilm")
    classifier.model.save_pretrained(out)
    classifier.tokenizer.save_pretrained(out)
    write_meta(out, {"head": classifier.head, "relevant_index": classifier.relevant_index,
                     "base": TINY_BASE, "num_layers": TINY_LAYERS})
    return out


def pytest_collection_modifyitems(session, config, items):
    """The `dag` tests last, whatever their file: each waits for the background DAG, and one met half way
    (test_ir_metadata) held every later test back for 20 minutes while 2 cores had room beside the DAG."""
    items.sort(key=lambda item: item.get_closest_marker("dag") is not None)  # stable: the order otherwise kept


BACKGROUND: dict = {}  # the session's background runs, for the summary below


def pytest_terminal_summary(terminalreporter):
    """How long each background run took beside the suite: whether the quick DAG is the critical path."""
    for name, run in BACKGROUND.items():
        took = run.took()
        terminalreporter.write_line(f"background run {name}: " + (f"{took:.0f} s" if took is not None else "stopped")
                                    + f", from the session's start ({run.log})")


@pytest.fixture(scope="session", autouse=True)
def dag_runs(request, tmp_path_factory):
    """When `dag` tests are selected, their Snakemake runs start with the session, beside the other tests
    (tests/background.py says why); the `dag` tests wait for them. Stopped at the end if still running."""
    if not any(item.get_closest_marker("dag") for item in request.session.items) or not Path(
            os.environ.get("BIRCH_DATA", REPO / "data")).exists():
        yield {}
        return
    from tests.background import start_dag_runs

    runs = start_dag_runs(tmp_path_factory.mktemp("dag"))
    BACKGROUND.update(runs)
    try:
        yield runs
    finally:
        for run in runs.values():
            run.stop()
