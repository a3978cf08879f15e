"""Adding a paper is one module, one .smk, its config section and its claims: a test paper
(tests/plugins/fake_paper.py) loaded from a configuration, with files and a score step of its own, run through
the DAG beside Birch, its claim judged. And what every plugin relies on: a registry built per call (so a
configuration resolves the same whatever was imported), the base class declaring what the rules call, paths
that never clash with the suite's."""

from __future__ import annotations

import importlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranker import experiments
from reranker.core import run_metadata
from reranker.core.config import CONFIG_DIR, ConfigError, read_yaml, write_resolved
from reranker.experiments.base import Plugin
from reranker.workflow.experiment import Experiment

REPO = Path(__file__).resolve().parent.parent
FAKE = "tests.plugins.fake_paper"
# The test paper alone (Birch, Radboud and NTNU off): a small run for the tests of the Makefile and the run lock.
LAYER = {"plugins": [FAKE], "fake_paper": {"collection": "cranfield"},
         "birch": {"targets": []}, "radboud": {"collection": None}, "ntnu": {"collection": None},
         "baselines": {"collections": ["cranfield"], "provided_runs": []}}
SEEDS = {"heading": "# The test paper", "intro": "One table.", "works": [{
    "title": "A fourth paper", "details": "Its one table.",
    "tables": [{"source": "Table 1: BM25 vs BM25+RM3", "table": "fake_paper_1", "effect": "RM3 helps",
                "claims": [{"kind": "compare", "rows": "BM25+RM3", "than": "BM25", "measure": "AP@1000", "expect": "above",
                            "cite": "a test's own words", "says": "Expansion helps."}]}]}]}
QUICK = [CONFIG_DIR / "quick.yaml"]
TEST_PLUGINS = ("tests.plugins.fake_paper", "tests.plugins.gated_paper")


def test_the_registry_holds_the_papers_and_their_parts():
    registry = experiments.load()
    assert list(registry) == ["birch", "radboud", "ntnu"]
    assert list(experiments.load([FAKE])) == ["birch", "radboud", "ntnu", "fake_paper"]
    assert list(experiments.load()) == ["birch", "radboud", "ntnu"]  # built per call: the last load added nothing
    assert experiments.wall_clock_parts() == {"radboud": "radboud|segment_documents", "ntnu": "ntnu"}
    assert experiments.checkpoint_prefixes() == ["radboud-", "ntnu-"]
    with pytest.raises(ConfigError, match="has no PLUGIN"):
        experiments.load(["reranker.core.settings"])


def test_resolve_is_the_same_whatever_was_imported():
    """The quick profile resolved in a fresh interpreter, and here after importing every plugin module there is."""
    code = ("import json, sys; from reranker import experiments; from reranker.core.config import CONFIG_DIR;"
            "json.dump(experiments.load_config([CONFIG_DIR / 'quick.yaml']), sys.stdout)")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    fresh = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert fresh.returncode == 0, fresh.stderr[-3000:]
    for module in (*experiments.BUILTIN, *TEST_PLUGINS):
        importlib.import_module(module)
    here = json.loads(json.dumps(experiments.load_config(QUICK)))
    assert json.loads(fresh.stdout) == here
    assert "fake_paper" not in here and "gated_paper" not in here  # imported, not named by `plugins:`


def test_a_plugin_checks_its_own_section(tmp_path):
    layer = tmp_path / "bad.yaml"
    layer.write_text(yaml.safe_dump({**LAYER, "fake_paper": {"collection": "cranfield", "colour": 1}}))
    with pytest.raises(ConfigError, match=r"fake_paper: Additional properties are not allowed \('colour'"):
        experiments.load_config([layer])
    layer.write_text(yaml.safe_dump({**LAYER, "fake_paper": {"collection": "cranfield", "checkpoint": "nobody"}}))
    with pytest.raises(ConfigError, match="fake_paper/checkpoint: unknown checkpoint 'nobody'"):
        experiments.load_config([layer])
    config = experiments.load_config(QUICK, overrides=LAYER)
    assert config["fake_paper"] == {"collection": "cranfield", "candidates": 5, "checkpoint": "minilm-l3"}  # its defaults


def test_a_plugin_path_clashing_with_the_core_is_refused(tmp_path, monkeypatch):
    config = experiments.load_config(QUICK, overrides={**LAYER, "run_dir": str(tmp_path)})
    experiment = Experiment(config)
    assert experiment.layout.path("fake_scores", collection="c", checkpoint="m", k=5) == f"{tmp_path}/work/scores/c/m/bm25.k5.fake-docs.tsv"
    fake = experiments.load([FAKE])["fake_paper"]
    for clash in ({"docs": "work/fake/docs.jsonl"}, {"fake_docs": "work/collections/{collection}/docs.jsonl"},
                  {"fusion_params": "work/fake-fusion/{collection}.json"}):  # a suite's name, a suite's pattern, another plugin's name
        monkeypatch.setattr(fake, "paths", clash)
        with pytest.raises(ConfigError, match="plugin fake_paper: its paths .* are already in the run folder's layout"):
            Experiment(config)


def smk_plugin_calls() -> dict[str, set[str]]:
    """name -> the attributes the .smk files call on the plugin object bound by `X = EXP.plugins["name"]`."""
    calls: dict[str, set[str]] = {}
    for path in sorted((REPO / "workflow" / "rules").glob("*.smk")) + sorted((REPO / "tests" / "plugins").glob("*.smk")):
        text = path.read_text()
        for variable, name in re.findall(r'^(\w+) = EXP\.plugins\["(\w+)"\]', text, re.M):
            calls.setdefault(name, set()).update(re.findall(rf"\b{variable}\.(\w+)", text))
    return calls


def test_each_rules_file_calls_only_what_its_own_plugin_has():
    """Whatever a paper's rules file calls on its plugin, that paper's class has (its own, a mixin's, or the base's
    contract): a call nothing defines would fail only when Snakemake reads the file."""
    calls = smk_plugin_calls()
    assert {"birch", "radboud", "ntnu", "fake_paper", "gated_paper"} <= set(calls) and "copied_curves" in calls["birch"]
    registry = experiments.load(TEST_PLUGINS)
    for name, attributes in calls.items():
        missing = sorted(a for a in attributes if not hasattr(registry[name], a))
        assert not missing, f"{name}'s rules call {missing}, which its plugin class {registry[name].__name__} does not have"


# What the core (the Snakefile, the shared rules files, reranker/workflow, reranker/core's resolve) calls on every
# plugin; and what the base itself builds that on (a section's reading, the hooks `generate` and `check` call).
CONTRACT = {"name", "about", "rules", "wall_clock_part", "checkpoint_prefix", "named_rows", "section_schema", "paths",
            "published", "figure_jobs", "table_jobs", "stage_jobs",
            "enabled", "generate", "check", "resolved", "study", "collections", "outputs", "pages",
            "table_specs"}
BASE_HELPERS = {"section_of", "section", "slug", "checkpoints", "cross_check", "score_job"}
CORE = ["Snakefile", "workflow/rules/tables.smk", "workflow/rules/rerank.smk", "workflow/rules/common.smk", "reranker/workflow/*.py",
        "reranker/core/config.py", "reranker/experiments/__init__.py"]


def test_the_base_holds_only_the_contract_the_core_uses():
    """reranker/experiments/base.py's Plugin declares what the core calls on every paper and nothing a single paper
    alone needs: a fourth paper adds its own members to its own class, never to the shared one."""
    members = {m for m in vars(Plugin) if not m.startswith("_")} | {m for m in Plugin.__annotations__ if not m.startswith("_")}
    assert members == CONTRACT | BASE_HELPERS, f"beyond the contract: {sorted(members - CONTRACT - BASE_HELPERS)}"
    core = "\n".join(path.read_text() for pattern in CORE for path in sorted(REPO.glob(pattern)))
    unused = sorted(m for m in CONTRACT if not re.search(rf"\.{m}\b", core))
    assert not unused, f"the base declares {unused}, which the core never calls"


def old_research_goal_studies(config: dict, collection: str, works: dict) -> list[dict]:
    """The studies of a run's research goal as reranker.core.run_metadata found them before the plugins wrote
    `studies:` (each built-in paper's section read in place, from the resolved file)."""
    studies = []
    for section in ("birch", "radboud", "ntnu"):
        part = config.get(section) or {}
        if collection in part.get("targets", []) or collection in (part.get("collection"), part.get("train_collection")):
            tables = part.get("tables") or {f"{section}_main": None}
            studies.append({"name": section, "work": works.get(section, {}).get("work", "unknown"),
                            "tables": [caption if isinstance(caption, str) else (caption or {}).get("caption", name)
                                       for name, caption in tables.items()]})
    return studies


@pytest.mark.parametrize("profile", ["default", "quick", "paper"])
def test_research_goals_come_from_the_plugins_studies_unchanged(profile, tmp_path):
    """A run's header names the same studies, tables and works as when the core read each paper's section."""
    files = [] if profile == "default" else [CONFIG_DIR / f"{profile}.yaml"]
    path = write_resolved(experiments.load_config(files), tmp_path / "config.yaml", ["x"])
    written = yaml.safe_load(path.read_text())  # what a stage reads: the resolved file
    works = read_yaml(REPO / "workflow" / "config" / "source_numbers.yaml")["sources"]
    used = {c for study in written["studies"] for c in study["collections"]}
    assert {"birch", "radboud", "ntnu"} & {study["name"] for study in written["studies"]}
    for collection in sorted(used) + [c for c in written["collections"] if c not in used][:2]:  # and some no paper uses
        goal = run_metadata.research_goal(written, collection)
        baselines = [s for s in goal["studies"] if s["name"] == "baselines"]
        assert goal["studies"] == baselines + old_research_goal_studies(written, collection, works), collection


def test_a_fourth_paper_with_its_own_files_is_planned_beside_birch(tmp_path, birch_data):
    """The quick profile (Birch on) plus the test paper: the DAG for its table runs its own segment and score
    rules into its plugin's paths and the suite's evaluation, beside Birch's settings. (A dry run: the same paper
    is run end to end, its table made and its claim judged, by test_kill_resume's `make run`.)"""
    run_dir = tmp_path / "fake"
    layer = tmp_path / "fake.yaml"
    layer.write_text(yaml.safe_dump({"plugins": [FAKE], "fake_paper": {"collection": "cranfield"}, "run_dir": str(run_dir)}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    table = run_dir / "tables" / "fake_paper_1.md"
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--cores", "2", "--configfile", str(QUICK[0]),
                           str(layer), "--", str(table)], cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    planned = done.stdout + done.stderr
    for rule in ("fake_segment", "fake_score", "fake_rerank", "evaluate"):
        assert f"rule {rule}:" in planned, rule
    for name in ("segments/cranfield/bm25.k5.fake-docs.jsonl", "scores/cranfield/minilm-l3/bm25.k5.fake-docs.tsv"):
        assert str(run_dir / "work" / name) in planned, name
    resolved = yaml.safe_load((run_dir / "config.yaml").read_text())
    assert resolved["birch"]["targets"] and resolved["fake_paper"]["checkpoint"] == "minilm-l3"  # Birch on, beside it


@pytest.mark.slow
def test_a_job_of_the_shared_middle_runs_its_own_command(tmp_path, birch_data):
    """Snakemake evaluates a looped rule's shell again when its job runs, after the loop has moved on: each job of
    rerank.smk (and tables.smk) must still run its own command. The test paper's segment job runs (with the export,
    index and retrieval before it), not the last job the loops defined."""
    run_dir = tmp_path / "fake"
    layer = tmp_path / "fake.yaml"
    layer.write_text(yaml.safe_dump({"plugins": [FAKE], "fake_paper": {"collection": "cranfield"}, "run_dir": str(run_dir)}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")])),
           "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ["PATH"]])}
    segments = run_dir / "work" / "segments" / "cranfield" / "bm25.k5.fake-docs.jsonl"
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", str(QUICK[0]), str(layer),
                           "--", str(segments)], cwd=REPO, capture_output=True, text=True, env=env, timeout=600)
    assert done.returncode == 0, (done.stdout + done.stderr)[-3000:]
    log = (run_dir / "logs" / "segment" / "cranfield.fake.log").read_text()
    assert segments.stat().st_size > 0 and "documents from" in log, log
