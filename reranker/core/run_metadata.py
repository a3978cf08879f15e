"""The PRIMAD record a stage writes at the top of its run (reranker.formats.ir_metadata), from what it knows.

No second copy of provenance: the versions and commit are `reporting.provenance`'s, the CPU `hardware`'s, the
settings the stage's own (its configuration and flags), and what came before the stage is read from its inputs:
the run it reranks carries its own header (the first stage's method, data and research goal pass on down the
chain), a score file its meta sidecar (checkpoint, precision, device) and that the segments' (unit, splitter).
`research goal` names the experiments of the configuration that use the collection; it describes the run when it
was written (a later change of the goal alone reruns nothing).

`Tracker` is tirex-tracker (tirex-tracker.readthedocs.io) around the stage's work: time, CPU, memory and energy
in `platform: resources`; where it cannot measure energy (no RAPL counters in a VM) the record says so, and
where it is not installed or fails, why.
"""

from __future__ import annotations

import functools
import json
import os
import platform as host
import shlex
import struct
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranker.core.config import default
from reranker.core.hardware import CPU_BF16_FLAGS, cpu_info, cpu_threads
from reranker.core.provenance import PACKAGES, git, package_versions, portable_name, provenance
from reranker.formats.errors import InputError
from reranker.formats.ir_metadata import read_metadata
from reranker.formats.runs import read_run_lines
from reranker.formats.text import meta_path

TEAM = "birch-repro"
TIES = ("score descending, then document id descending, as trec_eval ranks (scores written with 9 significant "
        "digits, enough for the float32 values trec_eval ranks by)")
EXTRA_PACKAGES = ("numpy", "scipy", "ir-measures", "repro-eval", "tirex-tracker")


def command_line(stage: str, argv: Sequence[str] | None) -> str:
    """The stage's command as typed: `python -m reranker STAGE ARGS`."""
    return shlex.join(["python", "-m", "reranker", stage, *(sys.argv[1:] if argv is None else argv)])


@functools.lru_cache(maxsize=1)
def _platform() -> dict:
    info = cpu_info()
    release = {}
    try:
        for line in Path("/etc/os-release").read_text().splitlines():
            key, _, value = line.partition("=")
            release[key] = value.strip('"')
    except OSError:
        pass
    versions = package_versions(PACKAGES + EXTRA_PACKAGES)
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") if hasattr(os, "sysconf") else 0
    return {"hardware": {"cpu": {"model": info["model"], "architecture": host.machine(),
                                 "operation mode": f"{struct.calcsize('P') * 8}-bit", "number of cores": cpu_threads(),
                                 "bf16": any(flag in info["flags"] for flag in CPU_BF16_FLAGS)},
                         "ram": f"{memory / 2**30:.2f} GB"},
            "operating system": {"kernel": f"{host.system()} {host.release()}",
                                 "distribution": release.get("PRETTY_NAME", host.platform())},
            "software": {"libraries": {"python": [f"python=={host.python_version()}"]
                                       + [f"{name}=={version}" for name, version in versions.items()]},
                         "retrieval toolkit": [f"pyserini=={versions['pyserini']}"] if "pyserini" in versions else []}}


@functools.lru_cache(maxsize=8)
def _implementation(command: str) -> dict:
    record = provenance(command)
    remote = git("config", "--get", "remote.origin.url")
    return {"executable": {"cmd": command},
            "source": {"lang": ["python", "java"], "repository": remote or "unknown",
                       "commit": record["git_commit"], "uncommitted changes": record["git_dirty"]}}


def platform(gpu: str = "none", resources: Mapping | None = None) -> dict:
    """Hardware, operating system and libraries with versions; the GPU that computed the run's scores; what
    the stage used (`Tracker.record`)."""
    record = json.loads(json.dumps(_platform()))  # a copy: the cached one stays as it is
    record["hardware"]["gpu"] = gpu
    if resources is not None:
        record["resources"] = dict(resources)
    return record


def research_goal(config: Mapping, collection: str, baseline: Sequence[str] = ()) -> dict:
    """The experiments of `config` that use `collection` (with their tables and source works: the resolved
    `studies:`, which each paper's plugin fills), the measures and the significance test the tables use."""
    from reranker.core import settings
    from reranker.formats.source_numbers import DEFAULT_SOURCE_NUMBERS

    try:
        import yaml

        works = yaml.safe_load(DEFAULT_SOURCE_NUMBERS.read_text(encoding="utf-8"))["sources"]
    except (OSError, KeyError, TypeError, ValueError):
        works = {}  # outside a checkout: the experiments are still named
    studies = []
    if collection in config.get("baselines", {}).get("collections", []) + config.get("baselines", {}).get("provided_runs", []):
        studies.append({"name": "baselines", "tables": ["baselines"]})
    for study in config.get("studies") or []:
        if collection in study["collections"]:
            studies.append({"name": study["name"], "work": works.get(study["work"], {}).get("work", "unknown"),
                            "tables": list(study["tables"])})
    significance = config.get("significance", {})
    goal = {"studies": studies, "evaluation": {
        "reported measures": settings.measures(config, collection),
        "significance test": [{"name": "paired t-test, two-sided, against each table's baseline row",
                               "correction method": significance.get("correction", "none"),
                               "alpha": significance.get("alpha", default("significance.alpha"))}]}}
    if baseline:
        goal["evaluation"]["baseline"] = list(baseline)
    return goal


def files(inputs: Mapping[str, str | os.PathLike | None]) -> dict:
    """The files a stage read, by role, named as every machine reads them."""
    return {name: portable_name(path) for name, path in inputs.items() if path is not None}


def data(config: Mapping, collection: str, inputs: Mapping[str, str | os.PathLike | None],
         training: Sequence[str] = ()) -> dict:
    """The test collection (its ir_datasets id where it has one), the files the stage read, the training data."""
    from reranker.core.config import collection_config

    entry = collection_config(config, collection)
    test = {"name": collection, "source": entry.get("source", "unknown")}
    if entry.get("source") == "ir_datasets":
        test["ir_datasets"] = entry.get("dataset", collection)
    test.update({key: portable_name(entry[key]) for key in ("queries", "qrels", "run") if entry.get(key)})
    record: dict[str, Any] = {"test collection": test, "files": files(inputs)}
    if training:
        record["training data"] = [{"name": name, "source": collection_config(config, name).get("dataset", name)}
                                   if name in config.get("collections", {}) else {"name": name} for name in training]
    return record


def metadata(command: str, retrieval: Sequence[Mapping], data_record: Mapping, goal: Mapping,
             indexing: Mapping | None = None, gpu: str = "none", resources: Mapping | None = None) -> dict:
    """The PRIMAD record (the tag is added where the run is written)."""
    method: dict[str, Any] = {"automatic": True, "score ties": TIES}
    if indexing:
        method["indexing"] = dict(indexing)
    method["retrieval"] = [dict(entry) for entry in retrieval]
    return {"platform": platform(gpu, resources), "research goal": dict(goal), "implementation": _implementation(command),
            "method": method, "actor": {"team": TEAM, "role": "reproducer"}, "data": dict(data_record)}


def _json(path: str | os.PathLike) -> dict | None:
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def indexing(index_dir: str | os.PathLike) -> dict:
    """How the index was built, from its build record (reranker.stages.index writes build.json)."""
    build = _json(Path(index_dir) / "build.json") or {}
    settings, versions = build.get("settings", {}), build.get("versions", {})
    return {"tokenizer": f"Lucene {settings.get('analyzer', 'unknown')} (Anserini)", "stemmer": settings.get("stemmer", "unknown"),
            "stopwords": "Lucene's English stopwords (Anserini's default)",
            "toolkit": f"anserini {versions.get('anserini_jar', 'unknown')}, java {versions.get('java', 'unknown')}"}


def upstream(run_path: str | os.PathLike) -> dict:
    """The header of the run a stage reranks; one naming only its tag and file where it has none."""
    found = read_metadata(run_path)
    if found is not None:
        return found
    tag = next(iter(read_run_lines(run_path)), None)
    name = tag.tag if tag is not None else Path(run_path).stem
    return {"tag": name, "method": {"retrieval": [{"name": name, "method": "unknown: the run has no ir_metadata header",
                                                   "run": portable_name(run_path)}]}}


def scorer(scores_path: str | os.PathLike, reranks: str) -> tuple[dict, str, str | None]:
    """The method entry of the classifier behind a score file (from its meta sidecar and the segments'),
    the GPU that scored it ("none" on a CPU), and its checkpoint."""
    meta = _json(meta_path(scores_path))
    if meta is None or "checkpoint" not in meta:  # per-fold runs joined (the parts' sidecars name theirs), or recorded by hand
        why = "no meta sidecar beside the file" if meta is None else (
            f"joined from {len(meta['joined'])} runs, each with its own sidecar" if meta.get("joined") else
            "its sidecar records the file, not the model: made elsewhere")
        return ({"name": Path(scores_path).stem, "method": f"relevance classifier scores ({why})",
                 "scores": portable_name(scores_path), "reranks": reranks}, "none", None)
    segments = _json(meta_path(meta.get("inputs", {}).get("segments") or "")) or {}
    entry = {"name": f"{meta.get('checkpoint')}.{segments.get('unit', 'units')}",
             "method": f"BERT relevance classifier, {meta.get('kind', 'logit')} of the relevant class per (query, unit)",
             "checkpoint": meta.get("checkpoint"), "fingerprint": meta.get("fingerprint"),
             "precision": f"{meta.get('precision')} ({meta.get('dtype')})", "max_length": meta.get("max_length"),
             "candidates": meta.get("candidates"), "unit": segments.get("unit", "unknown"), "reranks": reranks}
    if segments.get("splitter"):
        entry["segmenter"] = segments["splitter"]
    if segments.get("passages"):
        entry["passages"] = segments["passages"]
    gpu = (meta.get("device_usage") or {}).get("gpu", "none")
    return {k: v for k, v in entry.items() if v is not None}, gpu, meta.get("checkpoint")


def reranked(command: str, run_path: str | os.PathLike, scores_path: str | os.PathLike, entry: Mapping,
             interpolates: bool, resources: Mapping | None, config: Mapping | None = None,
             collection: str | None = None, inputs: Mapping[str, str | os.PathLike | None] | None = None) -> dict:
    """The record of a run made from a first-stage run and unit scores: the first stage's steps (from its header),
    the classifier, then `entry` (the fusion or aggregation), which interpolates the two or reranks the first."""
    above = upstream(run_path)
    steps = list(above.get("method", {}).get("retrieval") or [])
    first = steps[-1]["name"] if steps else above.get("tag", "first stage")
    model, gpu, checkpoint = scorer(scores_path, first)
    last = dict(entry)
    last.update({"interpolates": [first, model["name"]]} if interpolates else {"reranks": first, "scores": model["name"]})
    read = {"run": run_path, "scores": scores_path, **(inputs or {})}
    if config is not None and collection is not None:
        from reranker.core.config import checkpoint_config

        try:
            training = checkpoint_config(config, checkpoint).get("train_on", []) if checkpoint else []
        except InputError:
            training = []
        data_record = data(config, collection, read, training)
        goal = research_goal(config, collection, [above.get("tag", first)])
    else:
        data_record = {**above.get("data", {}), "files": files(read)}
        goal = {**above.get("research goal", {})}
        goal["evaluation"] = {**goal.get("evaluation", {}), "baseline": [above.get("tag", first)]}
    return metadata(command, [*steps, model, last], data_record, goal, above.get("method", {}).get("indexing"), gpu, resources)


class Tracker:
    """tirex-tracker around a stage's work, started at once; `record()` stops it and says what it measured."""

    MEASURES = ("TIME_ELAPSED_WALL_CLOCK_MS", "TIME_ELAPSED_USER_MS", "TIME_ELAPSED_SYSTEM_MS", "RAM_USED_PROCESS_KB",
                "CPU_ENERGY_SYSTEM_JOULES", "RAM_ENERGY_SYSTEM_JOULES", "GPU_ENERGY_SYSTEM_JOULES")

    def __init__(self) -> None:
        self.handle, self.why = None, None
        try:
            import tirex_tracker

            self.version = tirex_tracker.__dict__.get("__version__") or _version("tirex-tracker")
            self.handle = tirex_tracker.TrackingHandle.start(
                measures=[tirex_tracker.Measure[name] for name in self.MEASURES], poll_intervall_ms=500)
        except ImportError:
            self.why = "tirex-tracker is not installed (pip install tirex-tracker): no resource record"
        except Exception as err:  # noqa: BLE001 - a native library's failure must not stop the run
            self.why = f"tirex-tracker did not start here ({type(err).__name__}: {err}): no resource record"

    def __del__(self) -> None:  # a stage that failed before its record: the tracking thread ends with it
        if self.handle is not None:
            try:
                self.handle.stop()
            except Exception:  # noqa: BLE001, S110 - nothing is left to tell
                pass

    def record(self) -> dict:
        if self.handle is None:
            return {"tracker": "none", "why": self.why}
        handle, self.handle = self.handle, None
        try:
            found = {measure.name: entry.value for measure, entry in handle.stop().items()}
        except Exception as err:  # noqa: BLE001
            return {"tracker": f"tirex-tracker {self.version}", "why": f"it failed on stopping ({type(err).__name__}: {err})"}
        values = {name: _value(found.get(name)) for name in self.MEASURES}
        record: dict[str, Any] = {"tracker": f"tirex-tracker {self.version}",
                                  "wall clock (ms)": values["TIME_ELAPSED_WALL_CLOCK_MS"],
                                  "user time (ms)": values["TIME_ELAPSED_USER_MS"],
                                  "system time (ms)": values["TIME_ELAPSED_SYSTEM_MS"]}
        memory = values["RAM_USED_PROCESS_KB"]
        record["peak memory (KB)"] = memory.get("max") if isinstance(memory, dict) else memory
        for part in ("CPU", "RAM", "GPU"):
            energy = values[f"{part}_ENERGY_SYSTEM_JOULES"]
            record[f"{part} energy (J)"] = energy if energy is not None else _no_energy(part)
        return record


def _version(package: str) -> str:
    return package_versions((package,)).get(package, "unknown")


def _value(raw: Any) -> Any:
    text = raw.decode() if isinstance(raw, bytes) else raw
    try:
        return json.loads(text) if isinstance(text, str) else text
    except ValueError:
        return text


def _no_energy(part: str) -> str:
    if part == "GPU":
        return "not measured: no GPU used or none with NVML energy counters"
    if not Path("/sys/class/powercap").exists():
        return "not measured: no RAPL energy counters here (/sys/class/powercap is absent, as in most VMs)"
    return "not measured: the RAPL counters in /sys/class/powercap are not readable by this user"
