"""The default in parts (`parts:`, `make run PART=name`): each part a batch job that makes some of the published files
from scratch. Together the parts make every published file of a whole run; a part's jobs are the whole run's jobs,
to the digest, so that a part promoted on its own is as current as the whole run would be (tools/stale.py reads one
record for both); a part's comparison reads only what it made, and its records go to parts/<name>/."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml

from reranker import experiments
from reranker.formats.errors import ConfigError
from reranker.workflow.experiment import Experiment

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tools"))
import dag_jobs  # noqa: E402

CONFIGS = [REPO / "workflow" / "config" / name for name in ("collections.yaml", "checkpoints.yaml", "config.yaml")]


def published(exp: Experiment) -> list[str]:
    """What the tables rule file publishes (workflow/rules/tables.smk: TABLES and the runs against the originals')."""
    tables = [exp.layout.path("table", table=t) for t in ("baselines", "dataset_stats")]
    tables += [output for plugin in exp.plugins.values() for output in plugin.outputs()]
    return tables + [exp.layout.path("run_reproduction", pair=pair) for pair in exp.config["reproduction"]]


def experiment(part: str | None = None) -> Experiment:
    return Experiment(experiments.load_config(CONFIGS, overrides={"part": part, "run_dir": "runs/x"}))


def test_the_parts_together_make_every_published_file(birch_data):
    whole = published(experiment())
    made = {name: experiment(name).part_targets(whole) for name in experiment().config["parts"]}
    assert set().union(*made.values()) == set(whole), sorted(set(whole) - set().union(*made.values()))
    assert all(made.values())
    # a table belongs to one part: two parts promoting one table would leave it the last one's, unnoticed
    tables = [path for files in made.values() for path in files if "/tables/" in path]
    assert len(tables) == len(set(tables))


def test_an_unknown_part_or_a_pattern_that_matches_nothing_is_refused(birch_data):
    whole = published(experiment())
    with pytest.raises(ConfigError, match="not one of"):
        experiment("no-such-part").part_targets(whole)
    exp = experiment("birch")
    exp.config["parts"]["birch"] = {"outputs": ["tables/no_such_table.md"], "note": ""}
    with pytest.raises(ConfigError, match="matches none"):
        exp.part_targets(whole)


def test_a_parts_jobs_are_the_whole_runs_jobs(tmp_path, birch_data):
    """Every numbers file a part makes rests on the jobs, digest for digest, that the whole run's would: the part
    changes which targets are asked for, never a job."""
    whole = dag_jobs.traced_jobs("default", tmp_path / "whole")[1]
    for name in experiment().config["parts"]:
        overlay = tmp_path / f"{name}.yaml"
        overlay.write_text(yaml.safe_dump({"part": name}))
        ours = dag_jobs.traced_jobs("default", tmp_path / name, configfiles=[str(overlay)])[1]
        assert ours, name
        assert {n: ours[n] for n in ours if n != "resources"} == {n: whole[n] for n in ours if n != "resources"}, name


def test_a_parts_record_replaces_only_what_it_made(tmp_path):
    stored = tmp_path / "jobs.json"
    stored.write_text(json.dumps({"profile": "default", "commit": "old", "numbers": {"a": {"j": "1"}, "b": {"j": "2"}}}))
    new = {"profile": "default", "commit": "new", "numbers": {"a": {"j": "3"}, "b": {"j": "4"}, "c": {"j": "5"}}}
    record = dag_jobs.merged(stored, new, {"b", "c"})
    assert record["numbers"] == {"a": {"j": "1"}, "b": {"j": "4"}, "c": {"j": "5"}}
    assert record["made_at"] == {"a": "old", "b": "new", "c": "new"}


def test_the_index_names_each_parts_job_its_wall_clock_machine_and_commit(tmp_path):
    from reranker.report.parts import section

    assert section(tmp_path) == []  # a whole run: its command line says it all
    record = {"command": "make run PART=birch", "git_commit": "e48e368" + "0" * 33, "git_dirty": False,
              "wall_clock_seconds": 5400.0, "jobs": 204, "started": "2026-12-02 00:36:00",
              "machine": {"cpu": "AMD EPYC", "cores": 2, "bf16": True, "gpu": "none"}}
    (tmp_path / "parts" / "birch").mkdir(parents=True)
    (tmp_path / "parts" / "birch" / "run.json").write_text(json.dumps(record))
    (tmp_path / "numbers").mkdir()
    (tmp_path / "numbers" / "run.json").write_text(json.dumps({**record, "command": "make run", "git_dirty": True}))
    lines = section(tmp_path)
    assert "| birch | `make run PART=birch` | 90.0 min | 204 | – | AMD EPYC, 2 cores, bf16 | e48e36800000 |" in "\n".join(lines)
    assert any(line.startswith("| whole run") and "(dirty)" in line for line in lines)
    # the jobs' CPU seconds per second of their own time, from the part's resources table as the writer makes it (its
    # total row left out, else every second counts twice): a part that shared its cores shows less than 1
    from pathlib import Path

    from reranker.formats.benchmarks import JobBenchmark
    from reranker.report.run_records import resources_table
    from reranker.report.table import write_numbers

    jobs = [JobBenchmark("train", "radboud-f1", 300.0, 150.0, 900.0, 1000.0, Path("a.tsv")),
            JobBenchmark("score", "cranfield.f1", 100.0, 50.0, 500.0, 1100.0, Path("b.tsv"))]
    machine = {"cpu": "AMD EPYC", "threads": 2, "cpu_bf16": True, "gpu": "none"}
    table = resources_table(jobs, [], machine, "What every stage cost")
    write_numbers(table, tmp_path / "parts" / "birch" / "resources.json", {})
    assert "| 204 | 0.50 | AMD EPYC" in "\n".join(section(tmp_path))


def test_the_stored_index_remade_with_its_profiles_settings_is_the_stored_one(tmp_path):
    """`make index PROFILE=quick` (after a part's promote) reads the seed file and preface from the profile's
    configuration, as the DAG's rule does: remade from the stored tables, the quick reference's index is unchanged."""
    import shutil

    from reranker.workflow import index

    reference = tmp_path / "quick"
    shutil.copytree(REPO / "results" / "quick", reference)
    config = experiments.load_config(index.profile_layers("quick"))
    assert index.main(["--reference", str(reference), "--profile", "quick", "--command", config["run_command"]]) == 0
    stored = (REPO / "results" / "quick" / "README.md").read_text(encoding="utf-8")
    assert (reference / "README.md").read_text(encoding="utf-8") == stored
    assert config["index_preface"].split()[0] in stored  # the preface the profile's configuration asks for
    assert index.main(["--reference", str(reference), "--profile", "quik"]) == 2  # one line, naming the known ones
