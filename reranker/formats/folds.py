"""Cross-validation folds: the suite's `{fold: [test qids]}` JSON, and the external formats it reads."""

from __future__ import annotations

import json
import os
import random
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

from reranker.formats.atomic import atomic_write
from reranker.formats.errors import ConfigError, FormatError, InputError
from reranker.formats.ids import check_id, qid_order
from reranker.formats.text import open_text

Folds = dict[str, list[str]]  # fold name -> test qids


def fold_queries(folds: Mapping[str, Iterable[str]]) -> set[str]:
    """Every query that some fold tests."""
    return {qid for qids in folds.values() for qid in qids}


def check_folds(folds: Mapping[str, list[str]], source: str | os.PathLike) -> None:
    """At least two folds, none empty, no query in two, every id as formats.ids has them."""
    if len(folds) < 2:
        raise FormatError(source, None, f"cross-validation needs at least 2 folds, found {len(folds)}")
    owner: dict[str, str] = {}
    for name, qids in folds.items():
        if not qids:
            raise FormatError(source, None, f"fold {name} has no test queries")
        for qid in qids:
            check_id(qid, source, None, f"fold {name}: query id")
            if qid in owner:
                raise FormatError(source, None, f"query {qid} is a test query of folds {owner[qid]} and {name}")
            owner[qid] = name


def _read_json(path: Path):
    with open_text(path, encoding="utf-8-sig") as f:  # a byte-order mark at the start is dropped (formats.ids)
        try:
            return json.load(f)
        except json.JSONDecodeError as error:
            raise FormatError(path, error.lineno, f"not JSON: {error.msg}") from None


def write_folds(folds: Mapping[str, list[str]], path: str | os.PathLike) -> None:
    """Write `{fold: [test qids]}` as JSON, atomically."""
    path = Path(path)
    check_folds(folds, path)
    with atomic_write(path) as f:
        json.dump({name: list(qids) for name, qids in folds.items()}, f, indent=1)
        f.write("\n")


def read_folds(path: str | os.PathLike) -> Folds:
    """Read folds written by `write_folds`, checking that test sets are disjoint."""
    path = Path(path)
    data = _read_json(path)
    if not isinstance(data, dict) or not all(
            isinstance(qids, list) and all(isinstance(q, str) for q in qids) for qids in data.values()):
        raise FormatError(path, None, "folds are a JSON object {fold name: [test qids as strings]}")
    check_folds(data, path)
    return data


def fold_test_queries(path: str | os.PathLike, fold: str) -> tuple[Folds, frozenset[str]]:
    """All folds of a folds file and `fold`'s test queries; an unknown fold names the file."""
    folds = read_folds(path)
    if fold not in folds:
        raise FormatError(path, None, f"no fold {fold!r} (folds: {', '.join(folds)})")
    return folds, frozenset(folds[fold])


def load_folds(spec: Mapping[str, str]) -> Folds:
    """Folds from a `folds:` entry `{file, format}`, renamed "1".."k".

    Formats: `test_qids` ({"fold1": {"test_qids": [...], "train_qids": [...]}}, Cranfield),
    `birch` ({"s1": {"train_qids": [...], "predict": {"dev": [...], "test": [...]}}}, Birch's
    Robust04 folds), `anserini` ([[test qids of fold 1], ...]).
    """
    path, form = Path(spec["file"]), spec["format"]
    data = _read_json(path)
    expected = list if form == "anserini" else dict
    if not isinstance(data, expected):
        raise FormatError(path, None, f"the {form} folds format is a JSON {'array' if expected is list else 'object'}")
    try:
        if form == "anserini":
            folds = {str(i): list(test) for i, test in enumerate(data, start=1)}
            train = {}
        elif form in {"test_qids", "birch"}:
            names = sorted(data, key=lambda key: int(re.sub(r"\D", "", key) or 0))
            folds, train = {}, {}
            for i, key in enumerate(names, start=1):
                fold = data[key]
                if form == "birch":
                    folds[str(i)] = list(fold["predict"]["test"])
                    train[str(i)] = list(fold["train_qids"]) + list(fold["predict"].get("dev", []))
                else:
                    folds[str(i)] = list(fold["test_qids"])
                    train[str(i)] = list(fold.get("train_qids", []))
        else:
            raise ConfigError(f"{path}: unknown folds format {form!r}; known: test_qids, birch, anserini")
    except (KeyError, TypeError, AttributeError) as error:
        raise FormatError(path, None, f"does not follow the {form} folds format ({type(error).__name__}: {error})") from None
    folds = {name: [str(qid) for qid in qids] for name, qids in folds.items()}
    check_folds(folds, path)
    for name, train_qids in train.items():
        overlap = set(folds[name]) & set(map(str, train_qids))
        if overlap:
            raise FormatError(path, None, f"fold {name} trains on its test queries {', '.join(qid_order(overlap)[:10])}")
    return folds


def seeded_folds(qids: Iterable[str], k: int = 5, seed: int = 42) -> Folds:
    """Split `qids` into k disjoint folds of near-equal size, the same for the same set and seed."""
    ordered = qid_order(set(qids))
    if not 2 <= k <= len(ordered):
        raise InputError(f"k must be between 2 and the number of queries ({len(ordered)}), not {k}")
    random.Random(seed).shuffle(ordered)
    return {str(i + 1): qid_order(ordered[i::k]) for i in range(k)}
