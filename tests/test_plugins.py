"""Adding a paper is one module, one .smk, its config section and its claims: a test paper
(tests/plugins/fake_paper.py) registered from a configuration, run through the DAG, its claim judged."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranker import experiments
from reranker.core.config import ConfigError, load_config

REPO = Path(__file__).resolve().parent.parent
LAYER = {"plugins": ["tests.plugins.fake_paper"], "experiments": {"fake_paper": {"collection": "cranfield"}},
         "birch": {"targets": []}, "radboud": {"collection": None}, "ntnu": {"collection": None},
         "baselines": {"collections": ["cranfield"], "provided_runs": []}}
SEEDS = {"heading": "# The test paper", "intro": "One table.", "works": [{
    "title": "A fourth paper", "details": "Its one table.",
    "tables": [{"source": "Table 1: BM25 vs BM25+RM3", "table": "fake_paper_1", "effect": "RM3 helps",
                "claims": [{"kind": "compare", "rows": "BM25+RM3", "than": "BM25", "measure": "AP@1000", "expect": "above",
                            "cite": "a test's own words", "says": "Expansion helps."}]}]}]}


def test_the_registry_holds_the_papers_and_their_parts():
    registry = experiments.load()
    assert list(registry)[:3] == ["birch", "radboud", "ntnu"]
    assert experiments.wall_clock_parts() == {"radboud": "radboud|segment_documents", "ntnu": "ntnu"}
    assert experiments.checkpoint_prefixes() == ["radboud-", "ntnu-"]


def test_a_plugin_checks_its_own_section(tmp_path):
    experiments.load(["tests.plugins.fake_paper"])
    layer = tmp_path / "bad.yaml"
    layer.write_text(yaml.safe_dump({**LAYER, "experiments": {"fake_paper": {"collection": "cranfield", "colour": 1}}}))
    with pytest.raises(ConfigError, match="experiments/fake_paper/: Additional properties"):
        load_config([layer])


@pytest.mark.slow
def test_a_fourth_paper_is_one_module_its_rules_config_and_claims(tmp_path, birch_data):
    run_dir = tmp_path / "fake"
    layer = tmp_path / "fake.yaml"
    layer.write_text(yaml.safe_dump({**LAYER, "run_dir": str(run_dir)}))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    table = run_dir / "tables" / "fake_paper_1.md"
    done = subprocess.run([sys.executable, "-m", "snakemake", "--cores", "2", "--configfile", str(layer), "--", str(table)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    text = table.read_text()
    assert "| BM25+RM3 |" in text and "| AP |" in text  # its rows, and the suite's significance marks
    seeds = tmp_path / "seeds.yaml"
    seeds.write_text(yaml.safe_dump(SEEDS, sort_keys=False))
    readme = run_dir / "README.md"
    done = subprocess.run([sys.executable, "-m", "reranker", "tables", "index", "--run-dir", str(run_dir), "--seeds", str(seeds),
                           "--sources", str(REPO / "workflow" / "config" / "source_numbers.yaml"), "--out", str(readme)],
                          cwd=REPO, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    verdict = next(line for line in readme.read_text().splitlines() if "BM25+RM3" in line and "AP@1000" in line)
    assert any(f"**{word}**" in verdict for word in ("reproduced", "contradicted", "inconclusive")), verdict
    assert "95% CI" in verdict, verdict  # its run stores per-query values: judged by a paired test
