"""The workflow's logic: each profile's resolved configuration reaches every stage unchanged, through
one route (the resolved file), and the rows, lineage and paths come from tested Python."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from reranker.core.config import CONFIG_DIR
from reranker.experiments import load_config
from reranker.formats.learning import grouped_label
from reranker.workflow.experiment import EARLY_PRIORITY, SCORE_PRIORITY, TRAIN_PRIORITY, Experiment, job_priority

REPO = Path(__file__).resolve().parent.parent
# Flags a rule may pass: paths, the ids a job is about (which experiment's section, which ranking of the
# logits, how many candidates a wildcard asks for, which reproduction pair), threads, and --no-cache where a
# job's own time is the measurement. Settings never travel as flags.
ALLOWED_FLAGS = {"--config", "--collection", "--checkpoint", "--model", "--unit", "--top-n", "--method", "--source",
                 "--section", "--ranking", "--candidates", "--no-cache", "--part", "--parts", "--base", "--teacher", "--head-from",
                 "--positive-filter", "--cache", "--filter-cache",
                 "--docs", "--topics", "--qrels", "--run", "--index", "--folds", "--segments", "--scores", "--out",
                 "--params-out", "--threads", "--pair", "--original", "--evidence-out"}
# Generic tools have no settings: table builders take cells and captions, aggregation a method.
GENERIC = {("tables", "results"), ("tables", "stats"), ("tables", "pretraining"), ("tables", "figure"), ("fuse", "aggregate"),
           ("speed", "--stage"), ("tables", "resources"), ("tables", "index"), ("evaluate", "agreement"), ("explain", "moves"),
           ("score", "join"), ("retrieve", "provided"), ("tables", "split")}


def profile_files(profile: str) -> list[Path]:
    return [] if profile == "default" else [CONFIG_DIR / f"{profile}.yaml"]


def dry_run(profile: str, tmp_path: Path) -> tuple[list[list[str]], Path]:
    run_dir = tmp_path / profile
    args = [sys.executable, "-m", "snakemake", "-n", "-p", "--forceall", "--config", f"run_dir={run_dir}"]
    if profile != "default":
        args += ["--profile", f"workflow/profiles/{profile}"]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    commands = [shlex.split(line.split("2>")[0].split(" > ")[0]) for line in done.stdout.splitlines()
                if " -m reranker " in line]
    return commands, run_dir / "config.yaml"


@pytest.mark.parametrize("profile", ["quick", "default", "paper"])
def test_the_resolved_config_reaches_every_stage_unchanged(profile, tmp_path, birch_data):
    commands, resolved = dry_run(profile, tmp_path)
    assert commands, "the dry run printed no stage command"
    written = yaml.safe_load(resolved.read_text())
    expected = load_config(profile_files(profile), overrides={"run_dir": str(tmp_path / profile)})
    assert {k: v for k, v in written.items() if k != "resolved_from"} == expected
    stages = set()
    for argv in commands:
        stage, command = argv[argv.index("reranker") + 1: argv.index("reranker") + 3]
        stages.add(stage)
        flags = {a for a in argv if a.startswith("--")}
        if (stage, command) in GENERIC:
            continue
        assert argv[argv.index("--config") + 1] == str(resolved), argv  # the file the run wrote, nothing else
        assert flags <= ALLOWED_FLAGS, f"{stage} gets settings as flags: {sorted(flags - ALLOWED_FLAGS)}"
    trained = {"train"}  # the paper's Birch checkpoints are fetched; its Radboud rerankers are trained
    assert {"collections", "index", "retrieve", "evaluate", "segment", "score", "fuse", "tables", "compare"} | trained <= stages
    if profile == "quick":
        assert "speed" in stages
    # run-level reproduction: both pairs of config.yaml in every profile, so that no profile skips the comparison
    pairs = sorted(argv[argv.index("--pair") + 1] for argv in commands if "reproduction" in argv)
    assert pairs == ["cranfield-thesis-bm25", "robust04-birch-identity"]


def test_score_parts_scatter_each_collections_scoring_and_gather_it(tmp_path, birch_data):
    layer = tmp_path / "parts.yaml"
    layer.write_text(yaml.safe_dump({"score": {"parts": 3}, "run_dir": str(tmp_path / "quick")}))
    done = subprocess.run([sys.executable, "-m", "snakemake", "-n", "-p", "--forceall", "--profile", "workflow/profiles/quick",
                           "--configfile", str(CONFIG_DIR / "quick.yaml"), str(layer)],
                          cwd=REPO, capture_output=True, text=True, env=os.environ.copy(), timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    birch_scores = [line for line in done.stdout.splitlines()
                    if " -m reranker score --" in line and "--section" not in line]
    gathers = [line for line in done.stdout.splitlines() if " -m reranker score gather " in line]
    assert gathers and len(birch_scores) == 3 * len(gathers)
    for gather in gathers:
        parts = shlex.split(gather.split("2>")[0])
        listed = parts[parts.index("--parts") + 1: parts.index("--out")]
        assert [p.rsplit(".part", 1)[1] for p in listed] == [f"{i}-of-3.tsv" for i in (1, 2, 3)]
        assert all(f"--out {p} " in " ".join(birch_scores) for p in listed)


def test_the_paper_profile_resolves_with_gpus_and_its_own_reference():
    config = load_config(profile_files("paper"))
    experiment = Experiment(config)
    assert config["score"]["gpus"] == 1 and config["training"]["gpus"] == 1
    birch = experiment.plugins["birch"]
    assert config["reference"] == "results/paper" and birch.candidates == 1000
    assert config["segment"]["tokenizer"] == "Capreolus/birch-bert-large-mb"  # filled by Birch's plugin


def test_rows_and_lineage_of_the_quick_profile(tmp_path):
    # the quick rows are the default's; a chained checkpoint (continued from a fine-tuned one) added as a layer
    layer = tmp_path / "chained.yaml"
    layer.write_text(yaml.safe_dump({"birch": {"checkpoints": ["scifact", "scifact-cranfield", "minilm-l3-bi-encoder"],
                                               "passage_checkpoint": "scifact"},
                                     "checkpoints": {"scifact": {"base": "minilm-l3"}}}))
    experiment = Experiment(load_config(profile_files("quick") + [layer]))
    assert experiment.training_chain("scifact-cranfield") == ["beir/scifact/train", "cranfield"]
    # a mixed stage is one stage in words, its collections still each excluded from scoring
    mixed = experiment.checkpoint("scifact-soft-80")["train_on"]
    assert experiment.training_stages("scifact-soft-80") == [" + ".join(mixed)] and len(mixed) > 1
    assert experiment.training_chain("scifact-soft-80") == mixed and not experiment.applies_to("scifact-soft-80", mixed[1])
    assert ", then " not in experiment.lineage("scifact-soft-80")
    assert experiment.hub_model("scifact-cranfield") == "sentence-transformers/paraphrase-MiniLM-L3-v2"
    cells = experiment.plugins["birch"].cells()
    # Cross-domain: the Cranfield-trained checkpoint has no Cranfield row.
    assert ("cranfield", "BERT(SciFact→Cranfield) 1S", "birch.scifact-cranfield.1S") not in cells
    assert ("vaswani", "BERT(SciFact→Cranfield) 1S", "birch.scifact-cranfield.1S") in cells
    assert experiment.plugins["birch"].table_finetuned == ["scifact", "scifact-cranfield"]
    caption = experiment.plugins["birch"].caption()
    assert "paraphrase-MiniLM-L3-v2" in caption and "top 5 documents" in caption  # the config actually used
    assert experiment.fold_overrides("cranfield", "bm25_rm3") and not experiment.fold_overrides("vaswani", "bm25_rm3")


def test_a_carried_head_is_a_declared_input_and_its_folder_a_flag(tmp_path):
    layer = tmp_path / "carry.yaml"
    # a variant's own head_from (its training merges last, over carry_head's)
    layer.write_text(yaml.safe_dump({"radboud": {"variants": {"regression-binary": {"training": {"head_from": "scifact-bi"}}}}}))
    experiment = Experiment(load_config(profile_files("quick") + [layer]))
    name = "radboud-regression-binary-g1-f1"
    assert experiment.head_from(name) == "scifact-bi"
    assert set(experiment.checkpoint_files("scifact-bi")) <= set(experiment.training_inputs(name))
    assert f"--head-from {experiment.checkpoint_ref('scifact-bi')}" in experiment.model_flags(name)
    assert experiment.head_from("scifact") is None and "--head-from" not in experiment.model_flags("scifact")
    # a positives filter likewise (config.CHECKPOINT_SETTINGS): a fine-tuned one is an input, a hub one a flag
    layer.write_text(yaml.safe_dump({"ntnu": {"training": {"positives": "best", "positive_filter": "scifact"}}}))
    experiment = Experiment(load_config(profile_files("quick") + [layer]))
    assert set(experiment.checkpoint_files("scifact")) <= set(experiment.training_inputs("ntnu-bert"))
    assert f"--positive-filter {experiment.checkpoint_ref('scifact')}" in experiment.model_flags("ntnu-bert")
    layer.write_text(yaml.safe_dump({"ntnu": {"training": {"positives": "best", "positive_filter": "minilm-l6-bi-encoder"}}}))
    flags = Experiment(load_config(profile_files("quick") + [layer])).model_flags("ntnu-bert")
    assert "--positive-filter sentence-transformers/all-MiniLM-L6-v2" in flags


def test_first_stages_come_from_the_configuration_not_from_names_in_code(tmp_path):
    """Training negatives come from `training.negatives_from`'s run; a provided run is labelled by its
    `run_model`; the baselines caption gives every first stage's parameters."""
    overlay = tmp_path / "rm3.yaml"
    overlay.write_text(yaml.safe_dump({"training": {"negatives_from": "bm25_rm3"},
                                       "retrieval": {"models": {"bm25_rm3": {"k1": 1.2}}}}))
    default = Experiment(load_config(profile_files("quick")))
    changed = Experiment(load_config(profile_files("quick") + [overlay]))
    runs = lambda e: {paths["run"] for _, paths in e.training_sources("scifact")}  # noqa: E731
    assert {Path(r).name for r in runs(default)} == {"bm25.run"} and {Path(r).name for r in runs(changed)} == {"bm25_rm3.run"}
    assert "7 BM25+RM3 negatives per positive" in changed.plugins["birch"].caption()
    assert "BM25 (k1=0.9, b=0.4) and BM25+RM3 (fb_terms=10" in default.baselines_caption()
    assert "BM25+RM3 (k1=1.2, fb_terms=10" in changed.baselines_caption()  # its own k1, where it differs
    config = load_config([CONFIG_DIR / "config.yaml"])
    provided = Experiment(config).baseline_spec()["eval"][-1]
    assert (provided["group"], provided["row"]) == ("BM25+RM3", "robust04 (provided run)")
    unlabelled = tmp_path / "unlabelled.yaml"
    unlabelled.write_text(yaml.safe_dump({"baselines": {"provided_runs": ["robust04", "cranfield"]}}))
    with pytest.raises(Exception, match="cranfield needs `run` and `run_model`"):
        load_config([CONFIG_DIR / "config.yaml", unlabelled])


def test_ntnu_captions_name_the_rows_that_train_otherwise_and_tables_record_their_models(tmp_path):
    experiment = Experiment(load_config())
    size = experiment.plugins["ntnu"].caption("ntnu_5_5")
    small = size.split("unless the row says.", 1)[1]
    # The reference's own settings are in the caption once; the small rows' steps and pick follow it.
    assert "MiniLM-L6, first 2 layers; MiniLM-L6, first layer; paraphrase-MiniLM-L3:" in small
    assert "at most 12800 pairs, the best step on held-out loss kept" in small and "first 4 layers" not in small
    assert "distilled" in experiment.plugins["ntnu"].caption("ntnu_5_6").split("unless the row says.", 1)[1]
    # head-only differs in what it trains (its label says); the plain rows of the thesis' factor train as the small rows
    assert experiment.plugins["ntnu"].training_exceptions("ntnu_5_2").startswith(
        " MiniLM-L6 plain, all parameters; MiniLM-L6 plain, head only: lr 0.0001, 1 epoch, at most 12800 pairs")
    assert "(of a relevant document only the passage that Bi-encoder MiniLM-L6 (zero-shot)" in size  # the default's filter
    noisy = tmp_path / "noisy.yaml"  # a row whose positives differ from the reference's (every passage) says so
    noisy.write_text(yaml.safe_dump({"ntnu": {"models": {"all-passages": {
        "label": "all passages", "tables": ["ntnu_5_1"], "training": {"max_pairs": None, "positives": "all"}}}}}))
    row = Experiment(load_config([noisy])).plugins["ntnu"].training_exceptions("ntnu_5_1")
    assert row == (" all passages: lr 3e-05, 1 epoch, every pair, the best step on held-out loss kept,"
                   " passages of relevant documents positive.")
    metas = experiment.plugins["ntnu"].table_metas("ntnu_5_6")
    assert [m.split("/")[-2] for m in metas] == ["ntnu-epochs-2", "ntnu-layers-4", "ntnu-layers-2", "ntnu-layers-1",
                                                 "ntnu-distilled-layers-4", "ntnu-distilled-layers-2",
                                                 "ntnu-distilled-layers-1"]


def test_paths_are_defined_once():
    experiment = Experiment(load_config())
    pattern = experiment.layout.pattern("scores", first_stage="bm25_rm3", k=30)
    assert pattern == "runs/default/work/scores/{collection}/{checkpoint}/bm25_rm3.k30.{unit}.tsv"
    assert experiment.layout.path("scores", collection="cacm", checkpoint="scifact", first_stage="bm25_rm3", k=30,
                                  unit="sentences") == re.sub(r"\{(\w+)\}", lambda m: {"collection": "cacm",
                                  "checkpoint": "scifact", "unit": "sentences"}[m.group(1)], pattern)


def test_ntnu_rows_columns_and_pipelines_of_the_quick_profile():
    config = load_config(profile_files("quick"))
    experiment, section = Experiment(config), config["ntnu"]
    assert experiment.plugins["ntnu"].depth == max(section["candidate_sweep"] + [section["candidates"]])
    rows = experiment.plugins["ntnu"].rows("ntnu_5_1")
    assert [(m, a) for _, m, a in rows] == [("bert", a) for a in section["aggregations"]]
    assert all(a == section["aggregation"] for _, _, a in experiment.plugins["ntnu"].rows("ntnu_5_2"))
    spec = experiment.plugins["ntnu"].spec("ntnu_5_5")
    specs, values = spec["eval"], spec["value"]
    assert specs[0]["row"] == "BM25" and len(specs) == 1 + len(experiment.plugins["ntnu"].rows("ntnu_5_5"))
    # Queries/min for every row, the first stage's included; the shape and size for the models alone.
    assert sum(v["column"] == "Queries/min" for v in values) == len(specs)
    assert sum(v["column"] == "Parameters" for v in values) == len(specs) - 1
    stages = experiment.plugins["ntnu"].speed_stages("layers-4")
    assert list(stages) == ["retrieve", "segment", "score"] and "ntnu-layers-4" in stages["score"]
    assert list(experiment.plugins["ntnu"].speed_stages(section["first_stage"])) == ["retrieve"]
    [summary] = experiment.plugins["ntnu"].summary("ntnu_5_4")
    assert summary["rows"] == [label for label, _, _ in experiment.plugins["ntnu"].rows("ntnu_5_4")]
    # Table 5.6: "Train" and "Distilled" groups, each with the first stage (its baseline); a size's two cells share a row.
    cells = experiment.plugins["ntnu"].table_cells("ntnu_5_6")
    assert [g for g, _, _ in cells].count("Distilled") == 1 + len(section["tables"]["ntnu_5_6"]["distilled"])
    assert {(g, label) for g, label, run in cells if run == section["first_stage"]} == {("Train", "BM25"), ("Distilled", "BM25")}
    distilled = {label: run for g, label, run in cells if g == "Distilled"}
    assert distilled["MiniLM-L6, first 4 layers"] == experiment.plugins["ntnu"].run("distilled-layers-4", section["aggregation"])
    assert experiment.plugins["ntnu"].eval(distilled["MiniLM-L6, first 4 layers"]) in experiment.plugins["ntnu"].table_inputs("ntnu_5_6")
    # The distilled students learn from the 2-epoch teacher, whose checkpoint their training waits for.
    assert experiment.checkpoint_files("ntnu-epochs-2")[0] in experiment.training_inputs("ntnu-distilled-layers-4")
    # The rows the profile names null are gone, from the section and from the checkpoints alike.
    assert "head-seed-3" not in section["models"] and "ntnu-head-seed-3" not in config["checkpoints"]
    assert "layers-2" not in section["tables"]["ntnu_5_6"]["distilled"] and "layers-4" in section["tables"]["ntnu_5_6"]["distilled"]
    assert "regression-identity" not in config["radboud"]["variants"] and "regression-exponential" in config["radboud"]["variants"]
    assert experiment.plugins["ntnu"].figure_args("ntnu_5_4").endswith("--what validation")
    sweep = experiment.plugins["ntnu"].sweep_spec()["sweep"]
    assert len(sweep) == len(section["candidate_sweep"]) * (1 + len(section["aggregations"]))


def test_plain_snakemake_loads_the_default_profile():
    """Snakemake 9 looks for profiles/default beside the Snakefile or in the working folder, never in
    workflow/profiles/ when the Snakefile is at the top: `profiles` links there, so a plain `snakemake`
    resumes incomplete files and shows a failed job's log (workflow/profiles/default)."""
    result = subprocess.run([sys.executable, "-m", "snakemake", "-n", "--quiet", "rules"], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "Using workflow specific profile profiles/default" in result.stdout + result.stderr
    profile = yaml.safe_load((REPO / "profiles" / "default" / "config.yaml").read_text())
    assert profile["rerun-incomplete"] and profile["show-failed-logs"]


def test_a_two_core_job_outranks_any_two_one_core_jobs():
    """Snakemake starts the ready set with the largest summed priority that fits the free cores (its ILP;
    its greedy fallback takes the single highest first). On 2 cores a two-core index, retrieval or
    training must win over two one-core trainings, or it waits until both cores come free at once."""
    most_two_one_core = 2 * job_priority(1, TRAIN_PRIORITY)
    assert job_priority(2) > most_two_one_core
    assert job_priority(2, TRAIN_PRIORITY) > most_two_one_core
    assert job_priority(1) == 0 and job_priority(1, TRAIN_PRIORITY) == TRAIN_PRIORITY


def test_a_long_training_starts_before_short_ones_but_not_before_a_two_core_job():
    """A long one-core training (start_early) with a short one beside it outranks two short ones, so that the
    run does not end on it alone, and stays below any two-core job (which would otherwise wait for both cores);
    Birch's score jobs with a training beside them stay below two trainings."""
    early, short = TRAIN_PRIORITY + EARLY_PRIORITY, TRAIN_PRIORITY
    assert 2 * short < early + short < job_priority(2)
    assert SCORE_PRIORITY + short < 2 * short and SCORE_PRIORITY > job_priority(1)
    experiment = Experiment(load_config())
    assert experiment.train_priority("scifact-bi") == early
    assert experiment.train_priority("scifact-soft-80") == job_priority(2, TRAIN_PRIORITY)
    assert experiment.train_priority("radboud-baseline-g1-f1") == short


def test_every_radboud_and_ntnu_checkpoint_has_a_loss_curve_figure():
    """A figure per Radboud variant (its folds) and pre-training, and per NTNU model no table's figure draws;
    their captions say what each trained on and for how long."""
    experiment = Experiment(load_config())
    radboud, ntnu = experiment.plugins["radboud"], experiment.plugins["ntnu"]
    curves = radboud.curves()
    section = experiment.config["radboud"]
    assert set(curves) == ({f"radboud_{v}_loss" for v in section["variants"]}
                           | {f"radboud_pretrain_{p}_loss" for p in section["pretraining"]})
    assert [c for _, c in curves["radboud_baseline_loss"]] == [f"radboud-baseline-g1-f{f}" for f in section["folds"]]
    assert "BERT baseline: 5 checkpoints like `radboud-baseline-g1-f1`" in radboud.curve_caption("radboud_baseline_loss")
    assert "1 epoch, batch 16, lr 3e-05, the best held-out step kept" in radboud.curve_caption("radboud_baseline_loss")
    drawn = {"epochs-1", "epochs-2", *(f"head-seed-{k}" for k in range(1, 5))}  # tables 5.3 and 5.4 draw these
    assert set(ntnu.curves()) == {f"ntnu_{m}_loss" for m in experiment.config["ntnu"]["models"] if m not in drawn}
    every = set(radboud.outputs()) | set(ntnu.outputs())
    assert {experiment.layout.path("figure", figure=f) for f in [*curves, *ntnu.curves()]} <= every
    assert ntnu.curve_args("ntnu_layers-1_loss").endswith("checkpoints/ntnu-layers-1' --what validation")


def test_the_thesis_run_is_copied_in_reranked_by_the_baselines_checkpoints_and_split(tmp_path, birch_data):
    """In the quick DAG: the thesis' run checked and copied in, its top 5 segmented, scored by fold 1's baseline
    checkpoint, reranked, evaluated, and Table 2.1's numbers split; each by the command its counterpart on our BM25 uses."""
    commands, resolved = dry_run("quick", tmp_path)
    run_dir = resolved.parent
    runs, k = run_dir / "work" / "runs" / "cranfield", load_config(profile_files("quick"))["radboud"]["candidates"]

    def made(stage: str, out: Path) -> list[str]:
        found = [argv for argv in commands if " ".join(argv[argv.index("reranker") + 1:]).startswith(stage)
                 and "--out" in argv and argv[argv.index("--out") + 1] == str(out)]
        assert len(found) == 1, (stage, out)
        return found[0]

    provided = made("retrieve provided", runs / "thesis-bm25.run")
    assert provided[provided.index("--run") + 1] == str(birch_data / "radboud-thesis" / "bm25.top100.run.gz")
    assert {"--docs", "--topics", "--qrels"} <= set(provided)
    segments = run_dir / "work" / "segments" / "cranfield" / f"thesis-bm25.k{k}.documents.jsonl"
    segment = made("segment", segments)
    ours = made("segment", run_dir / "work" / "segments" / "cranfield" / f"bm25.k{k}.documents.jsonl")
    assert [a for a in segment if not a.startswith(str(run_dir))] == [a for a in ours if not a.startswith(str(run_dir))]
    scores = run_dir / "work" / "scores" / "cranfield" / "radboud-baseline-g1-f1" / f"thesis-bm25.k{k}.documents.relevant.tsv"
    score = made("score", scores)
    assert score[score.index("--segments") + 1] == str(segments) and score[score.index("--run") + 1] == str(runs / "thesis-bm25.run")
    reranked = runs / "radboud.baseline.g1.relevant.on-thesis-bm25.run"
    aggregate = made("fuse aggregate", reranked)
    assert aggregate[aggregate.index("--run") + 1] == str(runs / "thesis-bm25.run")
    for run in ("thesis-bm25", "radboud.baseline.g1.relevant.on-thesis-bm25"):
        made("evaluate", run_dir / "work" / "eval" / "cranfield" / f"{run}.json")
    split = made("tables split", run_dir / "numbers" / "radboud_split.json")
    assert split[split.index("--numbers") + 1] == str(run_dir / "numbers" / "radboud_2_1.json")
    assert split[split.index("--on-theirs") + 1] == "BERT baseline on the thesis' candidates"
    assert split[split.index("--measures") + 1: split.index("--out")] == ["RadboudNDCG@20", "nDCG@20"]


def test_every_ntnu_row_carries_its_checkpoint_record():
    """Each NTNU table names the checkpoint record of every row it trains, so that the numbers' provenance holds its
    held-out losses and a claim on a row that ended at its label prior reads "not trained" (reranker.reproduction);
    a later group's rows (Table 5.6's students) under `grouped_label`."""
    ntnu = Experiment(load_config()).plugins["ntnu"]
    specs = ntnu.table_specs()
    for table in ntnu.section["tables"]:
        spec = specs[table]
        first, stage = spec["eval"][0]["group"], spec["eval"][0]["row"]
        rows = [e["row"] for e in spec["eval"] if e["group"] == first and e["row"] != stage]
        later = [grouped_label(e["row"], e["group"]) for e in spec["eval"] if e["group"] != first and e["row"] != stage]
        assert [c["label"] for c in spec["checkpoints"]] == rows + later, table
        assert all(c["path"].endswith("/reranker.json") and "/checkpoints/ntnu-" in c["path"] for c in spec["checkpoints"])
