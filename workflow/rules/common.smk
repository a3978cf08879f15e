# Shared names and helpers. Rules stay thin: each calls one `python -m reranker <stage>`.
import shlex
import sys
from pathlib import Path

import yaml

from reranker.config import expand_vars, slug

PY = sys.executable  # the interpreter running Snakemake (the suite's venv, or the container's)
CFG = expand_vars(config)
WORK = CFG["workdir"]
RESULTS = CFG["results"]
RUN_COMMAND = CFG.get("run_command", "snakemake --cores all")
THREADS = CFG.get("threads", 2)
JAVA_HEAP = CFG.get("java_heap", "4g")
MEASURES = CFG["measures"]
SLUG_TO_ID = {slug(cid): cid for cid in CFG["collections"]}
BASE_RUNS = ("bm25", "bm25_rm3")
RUN_LABELS = {"bm25": "BM25", "bm25_rm3": "BM25+RM3", "provided": "BM25+RM3 (provided run)"}

wildcard_constraints:
    collection="|".join(sorted(SLUG_TO_ID)),
    model="bm25|bm25_rm3",


def collection_entry(collection_slug):
    return CFG["collections"][SLUG_TO_ID[collection_slug]]


def measures_for(collection_slug):
    """The suite's measures plus the ones a collection's config asks for (e.g. RR@10)."""
    return list(dict.fromkeys(MEASURES + collection_entry(collection_slug).get("measures", [])))


def write_resolved_config():
    """The merged configuration, for stages that read the registries; rewritten only when it changes."""
    path = Path(WORK) / "config.resolved.yaml"
    text = yaml.safe_dump(CFG, sort_keys=True)
    if not path.exists() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return str(path)


RESOLVED_CONFIG = write_resolved_config()


def fail_fast_on_missing_files(collection_ids):
    """Name every missing file and where it goes before any job starts."""
    from reranker.collections import load_collection

    for cid in collection_ids:
        load_collection(cid, CFG).check_files()
