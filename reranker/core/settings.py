"""What each stage reads from a resolved configuration: one function per stage.

A stage calls its function to get its settings, and its rule lists the same function's result as a
param, so Snakemake reruns a job when one of its own settings changes, and only then: the two can
not drift apart. Light (no torch, no Java): stages, rules and tests import it; it imports no stage
and no experiment.

A `section` is an experiment's configuration section whose `candidates`, `max_length`,
`precision` and `passages` override the suite's `segment:` and `score:` (radboud:, ntnu:), or whose `fusion`
a fuse step reads; no paper is named here: the rules name the section.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from reranker.core.config import CHECKPOINT_SETTINGS, checkpoint_config, collection_config, training_config
from reranker.formats.errors import InputError


def hub_model(config: Mapping, name: str) -> str:
    """The Hugging Face id (or directory) at the root of a checkpoint's lineage."""
    entry = checkpoint_config(config, name)
    return entry["model"] if entry["source"] == "hf" else hub_model(config, entry["base"])


def _section(config: Mapping, section: str | None) -> Mapping:
    if section is None:
        return {}
    if not isinstance(config.get(section), Mapping):
        raise InputError(f"--section {section}: the configuration has no such section to take stage settings from")
    return config[section]


def replaced(config: Mapping, section: str | None, key: str, suite: str) -> str:
    """The schema path of a setting that a section may replace (K, max length): `<section>.<key>` where the section
    has its own, else the suite's `<suite>.<key>`; a flag that overrides it is checked there."""
    return f"{section}.{key}" if key in _section(config, section) else f"{suite}.{key}"


def collection_ids(config: Mapping) -> list[str]:
    """The collections the configuration names (`collections list`)."""
    return list(config["collections"])


def measures(config: Mapping, collection_id: str | None = None) -> list[str]:
    """The suite's measures plus the ones a collection's entry adds (e.g. RR@10); an unknown id lists the known."""
    extra = collection_config(config, collection_id)["measures"] if collection_id else []
    return list(dict.fromkeys(config["measures"] + extra))


# Keys that only tell a rule which file to hand a stage (the run a provided run is, the run negatives come
# from, the runs that come with a collection): the file is the input, so they are no setting of the stage and
# a change reruns through the file.
RULE_ONLY = ("run_model", "negatives_from", "runs")


def _without_rule_only(settings: Mapping) -> dict:
    return {key: value for key, value in settings.items() if key not in RULE_ONLY}


def collections(config: Mapping, collection: str) -> dict:
    return {"collection": _without_rule_only(config["collections"][collection]), "folds": config["seeded_folds"]}


def index(config: Mapping) -> dict:
    return {"java_heap": config["java_heap"]}


def retrieve(config: Mapping, collection: str | None, model: str) -> dict:
    """A first stage's parameters, a collection's overrides of them (None without a collection), depth and heap."""
    retrieval = config["retrieval"]
    if model not in retrieval["models"]:
        raise InputError(f"no parameters for first stage {model!r} in retrieval.models (known: {', '.join(retrieval['models'])})")
    return {"depth": retrieval["depth"], "model": retrieval["models"].get(model),
            "overrides": retrieval["overrides"].get(collection, {}).get(model), "java_heap": config["java_heap"]}


def evaluate(config: Mapping, collection: str) -> dict:
    return {"measures": measures(config, collection)}


def segment(config: Mapping, section: str | None = None, candidates: int | None = None) -> dict:
    """Candidates K, the token budget, the tokenizer that counts it and passage windows; a section's own where it
    has them (a section's tokenizer left null: the suite's `segment.tokenizer`)."""
    own = _section(config, section)
    settings = {**config["segment"]}  # its tokenizer last (the schema's order)
    settings.update({key: own[key] for key in ("candidates", "passages") if key in own})
    if own.get("tokenizer") is not None:
        settings["tokenizer"] = own["tokenizer"]
    if candidates is not None:  # a depth the experiment works out (NTNU: the deepest R of its sweep)
        settings["candidates"] = candidates
    return settings


# A checkpoint's keys that only order jobs: no output depends on them, so they are not a job's settings (a
# change reruns nothing). Threads are kept: they change the floating-point sums.
SCHEDULING_ONLY = ("start_early",)


def _entry(config: Mapping, checkpoint: str) -> dict:
    return {k: v for k, v in checkpoint_config(config, checkpoint).items() if k not in SCHEDULING_ONLY}


def train(config: Mapping, checkpoint: str) -> dict:
    """The training, the checkpoint's entry and its base's, the relevant grade of each collection it trains on, and
    (`named`, where its training names any) the entries of the checkpoints its training names: a teacher, a positive
    filter, a head's source, whose declared head or model the stage reads."""
    entry = _entry(config, checkpoint)
    training = _without_rule_only(training_config(config, checkpoint))
    settings = {"training": training, "checkpoint": entry, "base": _entry(config, entry["base"]),
                "grades": {c: collection_config(config, c)["relevant_min_grade"] for c in entry["train_on"]}}
    named = {setting: _entry(config, training[setting]) for setting in CHECKPOINT_SETTINGS if training.get(setting)}
    if named:  # absent where none is named, so that a checkpoint that names none keeps its settings
        settings["named"] = named
    return settings


def score(config: Mapping, checkpoint: str, section: str | None = None) -> dict:
    """score:, the suite's candidates K and the checkpoint's entry; a section's K, length and precision."""
    own = _section(config, section)
    settings = {**config["score"], "candidates": config["segment"]["candidates"], "max_length": config["score"].get("max_length"),
                "checkpoint": _entry(config, checkpoint)}
    settings.update({key: own[key] for key in ("candidates", "max_length", "precision") if key in own})
    return settings


def fuse(config: Mapping, collection: str, section: str) -> dict:
    """The fusion settings of a section (`fuse birch --section S`: S.fusion) and the collection's relevant grade (none
    without a collection: the stage then takes the entry's default)."""
    grade = {"relevant_min_grade": config["collections"][collection]["relevant_min_grade"]} if collection else {}
    fusion = _section(config, section).get("fusion")
    if not isinstance(fusion, Mapping):
        raise InputError(f"--section {section}: the configuration's {section} section has no fusion: settings")
    return {**fusion, **grade}


def compare(config: Mapping) -> dict:
    """Its tolerances, the reference, and the part the run made (None: the whole run, every stored number read)."""
    return {**config["compare"], "reference": config["reference"], "part": config.get("part")}


def promote(config: Mapping) -> dict:
    """The papers' folders a promote copies beside the suite's (their plugins' `published`); the reference is
    compare's."""
    return {"folders": list(config.get("published") or [])}


def reproduction(config: Mapping, pair: str) -> dict:
    """A run-level reproduction pair (`reproduction:`), its measures filled (the collection's where it names none);
    the runs it names are the rule's inputs, no setting."""
    pairs = config.get("reproduction") or {}
    if pair not in pairs:
        raise InputError(f"--pair {pair}: no such pair in the configuration's reproduction: section "
                         f"(pairs: {', '.join(pairs) or 'none'})")
    entry = pairs[pair]
    return {**{k: v for k, v in entry.items() if k not in ("original", "run")},
            "measures": list(entry.get("measures") or measures(config, entry["collection"]))}


STAGES: dict[str, Callable[..., dict]] = {
    "collections": collections, "index": index, "retrieve": retrieve, "evaluate": evaluate, "segment": segment,
    "train": train, "score": score, "fuse": fuse, "compare": compare, "reproduction": reproduction,
}


def of(stage: str, config: Mapping, **keys) -> dict:
    """A stage's settings by name, as its rule lists them."""
    if stage not in STAGES:
        raise ValueError(f"unknown stage {stage!r}; known: {', '.join(STAGES)}")
    return STAGES[stage](config, **{key: value for key, value in keys.items() if value is not None})
