"""A table's inputs as structured records: the file a rule hands `tables results|stats|pretraining --spec`
and `tables figure sweep --spec`, so that no label or path is ever quoted into, or split out of, a string
(a colon in either is fine).

One JSON object; every key is optional and holds a list of records, in the table's order:

    {"eval":         [{"group": "robust04", "row": "BM25", "path": ".../bm25.json"}],  # optional: "aggregation": "maxp"
     "checkpoints":  [{"label": "BERT (MS MARCO)", "path": ".../reranker.json"}],
     "value":        [{"row": "BERT", "column": "Eval loss", "path": ".../reranker.json", "key": "validation.loss"}],
     "value_format": [{"column": "Queries/min", "format": ",.0f"}],
     "summary_row":  [{"label": "Mean ± sd", "rows": ["seed 1", "seed 2"]}],
     "stats":        [{"group": "Robust04", "path": ".../stats.json"}],
     "sweep":        [{"x": 100, "label": "BM25", "path": ".../bm25.json"}],
     "note":         [{"text": "a line under the table, as --note gives it"}]}

Snakemake writes it (workflow/rules/tables.smk, from the plugins' `table_specs`); the table stage reads it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from reranker.formats.atomic import write_json
from reranker.formats.errors import FormatError

# kind -> {field: type}: "text" a non-empty string, "texts" a non-empty list of them, "number" an int or float.
KINDS: dict[str, dict[str, str]] = {
    "eval": {"group": "text", "row": "text", "path": "text"},
    "checkpoints": {"label": "text", "path": "text"},
    "value": {"row": "text", "column": "text", "path": "text", "key": "text"},
    "value_format": {"column": "text", "format": "text"},
    "summary_row": {"label": "text", "rows": "texts"},
    "stats": {"group": "text", "path": "text"},
    "sweep": {"x": "number", "label": "text", "path": "text"},
    "note": {"text": "text"},
}

# Fields a record may leave out: an evaluation's passage aggregation (a document scored from its passages' scores),
# which the catalog lists so that a source's cell is mapped only to a row aggregated as the source's row is.
OPTIONAL: dict[str, dict[str, str]] = {"eval": {"aggregation": "text"}}

Spec = dict[str, list[dict]]
# The one group and the columns of a table made of `stats` records (a row per collection) and of one made of
# `checkpoints` records (pre-training: a row per checkpoint): fixed by the table stage, listed by the catalog.
STATS_TABLE = ("statistics", ("docs", "queries", "judged_queries", "qrels", "mean_relevant_per_query", "mean_doc_length_words"))
PRETRAINING_TABLE = ("held-out", ("before", "after", "loss"))


def _field_problem(value: object, kind: str) -> str | None:
    if kind == "text":
        return None if isinstance(value, str) and value else "expected a non-empty string"
    if kind == "texts":
        ok = isinstance(value, list) and value and all(isinstance(v, str) and v for v in value)
        return None if ok else "expected a non-empty list of non-empty strings"
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return None if ok else "expected a number"


def checked_spec(spec: object, path: str | os.PathLike) -> Spec:
    """`spec` with every kind present (empty where absent); FormatError naming `path` and the bad entry."""
    if not isinstance(spec, Mapping):
        raise FormatError(path, None, f"expected a JSON object of {', '.join(KINDS)}, found {type(spec).__name__}")
    unknown = sorted(set(spec) - set(KINDS))
    if unknown:
        raise FormatError(path, None, f"unknown keys {', '.join(map(str, unknown))} (allowed: {', '.join(KINDS)})")
    checked: Spec = {}
    for kind, fields in KINDS.items():
        entries = spec.get(kind, [])
        if not isinstance(entries, list | tuple):
            raise FormatError(path, None, f"{kind}: expected a list of records, found {type(entries).__name__}")
        records = []
        for i, entry in enumerate(entries):
            where = f"{kind}[{i}]"
            if not isinstance(entry, Mapping):
                raise FormatError(path, None, f"{where}: expected a record with {', '.join(fields)}, found {entry!r}")
            optional = OPTIONAL.get(kind, {})
            unknown, missing = sorted(set(entry) - set(fields) - set(optional)), [f for f in fields if f not in entry]
            if unknown or missing:
                said = "; ".join(part for part in (f"missing {', '.join(missing)}" if missing else "",
                                                   f"unknown {', '.join(map(str, unknown))}" if unknown else "") if part)
                raise FormatError(path, None, f"{where}: {said} (a {kind} record has {', '.join(fields)})")
            present = {**fields, **{f: k for f, k in optional.items() if f in entry}}
            for field, field_kind in present.items():
                problem = _field_problem(entry[field], field_kind)
                if problem:
                    raise FormatError(path, None, f"{where}.{field}: {problem}, found {entry[field]!r}")
            records.append({field: list(entry[field]) if present[field] == "texts" else entry[field] for field in present})
        checked[kind] = records
    return checked


def write_spec(path: str | os.PathLike, spec: Mapping) -> None:
    """Check `spec`, then write it atomically (UTF-8 JSON, labels as they are)."""
    checked = checked_spec(spec, path)
    write_json(path, {kind: records for kind, records in checked.items() if records}, indent=1, ensure_ascii=False)


def read_spec(path: str | os.PathLike) -> Spec:
    """A spec file's records, every kind present; FormatError (one line, naming the file and entry) if malformed."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    try:
        spec = json.loads(text)
    except json.JSONDecodeError as err:
        raise FormatError(path, err.lineno, f"not JSON ({err.msg}, column {err.colno})") from None
    return checked_spec(spec, path)
