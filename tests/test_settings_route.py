"""One route for settings: a stage reads the configuration only through its settings function
(reranker/core/settings.py), whose result its rule lists as a param, so that every setting it reads reruns
its job when changed.

Three checks: the stages hold no other read of the configuration (the source, parsed); every rule that hands a
stage the configuration lists that stage's settings (the rules, parsed); and Snakemake itself, on the quick
profile with one setting of each stage changed (one dry run), changes the params of every job of those stages,
and of none that reads no changed setting: params are one of Snakemake's rerun triggers (the default), so those
jobs, and only those, rerun in a kept run folder.
"""

from __future__ import annotations

import ast
import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
QUICK = REPO / "workflow" / "config" / "quick.yaml"
# What a stage may take from the configuration itself: where the run is, and the command that remakes it
# (provenance, as the run's files record it), neither of which changes a number.
PATHS_AND_PROVENANCE = {"run_dir", "run_command"}


def test_stages_read_the_configuration_only_through_their_settings():
    """In reranker/stages/, `config[...]` only for a path or provenance key, and no `config.get`."""
    found = []
    for path in sorted((REPO / "reranker" / "stages").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and node.value.id == "config":
                key = node.slice.value if isinstance(node.slice, ast.Constant) else ast.unparse(node.slice)
                if key not in PATHS_AND_PROVENANCE:
                    found.append(f"{path.name}:{node.lineno}: config[{key!r}]")
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "config"
                    and node.attr in ("get", "items", "keys", "values")):
                found.append(f"{path.name}:{node.lineno}: config.{node.attr}")
    assert not found, "read through the stage's settings function instead:\n" + "\n".join(found)


RULE = re.compile(r"^(?:rule (\S+):|    rule:\n        name:\n            (\S+))", re.M)
STAGE_CALL = re.compile(r"python -m reranker (\w+)(?: \w+)? --config \{params\.config\}")


def rules() -> Iterator[tuple[str, str, str]]:
    """(file, rule, body) of every rule of the workflow and the test papers."""
    files = [REPO / "Snakefile", *sorted((REPO / "workflow" / "rules").glob("*.smk"))]
    for path in files:
        text = path.read_text()
        starts = [(m.start(), m.group(1) or m.group(2)) for m in RULE.finditer(text)]
        for (start, name), (end, _) in zip(starts, [*starts[1:], (len(text), "")]):
            yield path.name, name, text[start:end]


def test_every_rule_that_hands_a_stage_the_configuration_lists_its_settings():
    handed = [(f, name, body) for f, name, body in rules() if STAGE_CALL.search(body)]
    assert len(handed) >= 8
    missing = [f"{f}: {name}" for f, name, body in handed
               if not re.search(r"settings=(lambda w: )?settings\(|\*\*\w+\.params", body)]
    assert not missing, missing


def test_every_segment_and_score_job_that_hands_a_stage_the_configuration_lists_its_settings(tmp_path):
    """The same for the jobs the shared middle rule writes from each paper's plugin (workflow/rules/rerank.smk),
    the test paper's included."""
    from reranker import experiments
    from reranker.workflow.experiment import Experiment

    overlay = {"plugins": ["tests.plugins.fake_paper"], "fake_paper": {"collection": "cranfield"}, "run_dir": str(tmp_path)}
    experiment = Experiment(experiments.load_config([REPO / "workflow" / "config" / "config.yaml"], overrides=overlay))
    jobs = [(name, job) for name, plugin in experiment.plugins.items() for job in plugin.stage_jobs()]
    assert {"birch", "radboud", "ntnu", "fake_paper"} <= {name for name, _ in jobs} and len(jobs) >= 8
    handed = [(name, job) for name, job in jobs if re.match(r"\w+ --config \{params\.config\}", job.command)]
    assert len(handed) == len(jobs)
    missing = [f"{name}: {job.rule}" for name, job in handed if "settings" not in job.params]
    assert not missing, missing


def test_a_section_names_its_own_tokenizer_and_null_keeps_the_suites():
    """Birch fills the suite's `segment.tokenizer` (its first checkpoint's model); a thesis whose model is another
    names its own, which only its segment jobs read."""
    from reranker import experiments
    from reranker.core import settings

    config = experiments.load_config([REPO / "workflow" / "config" / "config.yaml"])
    suite = config["segment"]["tokenizer"]
    assert suite and config["ntnu"]["tokenizer"] is None
    assert settings.segment(config, "ntnu")["tokenizer"] == settings.segment(config, "radboud")["tokenizer"] == suite
    config = experiments.load_config([REPO / "workflow" / "config" / "config.yaml"], overrides={"ntnu": {"tokenizer": "bert-base-uncased"}})
    assert settings.segment(config, "ntnu")["tokenizer"] == "bert-base-uncased"
    assert settings.segment(config, "radboud")["tokenizer"] == settings.segment(config)["tokenizer"] == suite


# One setting per stage, each changed within its schema's bounds, and the rules whose every job must then rerun
# (their params change) and, for the stages' own settings, nothing else: the quick DAG's jobs against the stored
# snapshot (tests/data/dag/quick.json), both from tools/dag_jobs.py, in one dry run. The training's setting is a
# named checkpoint's declared head (once read outside the stage's settings, so a change reran nothing): the
# trainings that name it must rerun, and only they.
NAMED = "minilm-l6-bi-encoder"
CHANGES = {
    "seeded_folds": {"seed": 43},                                    # collections: export, folds, stats
    "java_heap": "5g",                                               # index and retrieve
    "retrieval": {"depth": 999},                                     # retrieve
    "segment": {"max_length": 255},                                  # segment (each paper's)
    "checkpoints": {NAMED: {"head": "mean_pooling"}},                # train (those naming it), score (its own)
    "score": {"shard_size": 19999},                                  # score (each paper's)
    "birch": {"fusion": {"alpha_step": 0.05}},                       # fuse
    "compare": {"model": 0.02},                                      # compare
    "reproduction": {"cranfield-thesis-bm25": {"depth": 99}},        # run_reproduction
}
RERUN = {"export_collection", "folds", "index", "retrieve", "segment", "segment_documents", "segment_provided_documents",
         "segment_ntnu", "score", "score_radboud", "score_ntnu", "fuse_birch", "compare"}


@pytest.mark.slow
def test_a_changed_setting_reruns_each_job_that_reads_it(tmp_path, birch_data):
    """Snakemake reruns a job whose params changed: each stage's jobs do, after a change to one of its settings."""
    sys.path.insert(0, str(REPO / "tools"))
    import dag_jobs

    from reranker import experiments
    from reranker.core.config import CHECKPOINT_SETTINGS, training_config

    layer = tmp_path / "changed.yaml"
    layer.write_text(yaml.safe_dump(CHANGES))
    stored = {(j["rule"], *j["outputs"]): j["params"] for j in json.loads((REPO / "tests/data/dag/quick.json").read_text())}
    today = dag_jobs.jobs("quick", tmp_path / "quick", configfiles=[str(QUICK), str(layer)])
    moved_jobs = [j for j in today if j["params"] != stored[(j["rule"], *j["outputs"])]]
    moved = {j["rule"] for j in moved_jobs}
    kept = {j["rule"] for j in today if j["params"] == stored[(j["rule"], *j["outputs"])]}
    assert not RERUN & kept, f"jobs that read a changed setting and would not rerun: {sorted(RERUN & kept)}"
    assert RERUN <= moved
    unrelated = {"aggregate", "rerank_ntnu", "rerank_radboud", "join_fold_scores", "evaluate", "radboud_agreement"}
    assert not unrelated & moved, f"reruns without a changed setting: {sorted(unrelated & moved)}"
    # a run-level reproduction pair's job, and not the other pair's
    assert [j["outputs"] for j in moved_jobs if j["rule"] == "run_reproduction"] == [
        ["{run_dir}/numbers/reproduction/cranfield-thesis-bm25.json"]]
    # exactly the trainings whose training names the changed checkpoint (teacher, positive filter, head source)
    config = experiments.load_config([REPO / "workflow/config/checkpoints.yaml", REPO / "workflow/config/config.yaml", QUICK])
    trained = {j["outputs"][0].split("/")[-2] for j in today if j["rule"] == "train"}
    retrained = {j["outputs"][0].split("/")[-2] for j in moved_jobs if j["rule"] == "train"}
    naming = {c for c in trained if any(training_config(config, c).get(s) == NAMED for s in CHECKPOINT_SETTINGS)}
    assert naming and retrained == naming, (sorted(retrained - naming), sorted(naming - retrained))
