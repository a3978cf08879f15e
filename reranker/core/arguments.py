"""Arguments the stages' command lines share: the files they exchange and the configuration.

Settings never travel as flags (docs/configuration.md, "One route"): `--config` names the resolved file a run
wrote, or YAML layered over the default; the flags here name files and ids.
"""

from __future__ import annotations

import argparse

FILES = {
    "docs": "docs.jsonl ({id, title, text} per line)",
    "run": "first-stage TREC run (.gz ok)",
    "topics": "topics.tsv (qid<TAB>text)",
    "qrels": "TREC qrels (.gz ok)",
    "segments": "segments JSONL from `python -m reranker segment`",
    "scores": "unit scores TSV: qid, doc_id, unit, score",
    "folds": "JSON {fold: [test qids]}",
}


def add_files(parser: argparse.ArgumentParser, *required: str, optional: tuple[str, ...] = (), **helps: str) -> None:
    """`--NAME` for each exchanged file; `helps` overrides the standard description."""
    for name in required + optional:
        parser.add_argument(f"--{name.replace('_', '-')}", required=name in required, help=helps.get(name, FILES.get(name)))


def add_config(parser: argparse.ArgumentParser, reads: str) -> None:
    """`--config`; `reads` names the settings the stage takes from it."""
    parser.add_argument("--config", help=f"a run's resolved config.yaml, or YAML layered over the default (reads: {reads})")
