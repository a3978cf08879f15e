"""`python -m reranker.workflow.catalog`: the tables and figures every configuration of the suite makes, with
their groups, rows and columns, from the plugins' table specs (reranker.formats.catalog: the file and who reads it).

The configurations: the default experiment, and each profile's (the `configfile` layers of
workflow/profiles/*/config.yaml: quick, paper). A name that only a user's own configuration makes is added by
naming that configuration too (`--config`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

import yaml

from reranker.core.config import REPO_ROOT
from reranker.experiments import load_config  # with the papers' plugins: their checkpoints and dropped rows
from reranker.formats.atomic import write_json
from reranker.formats.catalog import DEFAULT_CATALOG, FIELDS
from reranker.formats.layout import PATTERNS
from reranker.formats.table_spec import PRETRAINING_TABLE, STATS_TABLE

PROFILES = REPO_ROOT / "workflow" / "profiles"


def configurations() -> list[tuple[str, ...]]:
    """The layers over the default experiment of each configuration the suite runs: () for the default, then each
    profile's `configfile` list (relative to the repository), each once."""
    found: dict[tuple[str, ...], None] = {(): None}
    for profile in sorted(PROFILES.glob("*/config.yaml")):
        found[tuple((yaml.safe_load(profile.read_text(encoding="utf-8")) or {}).get("configfile") or ())] = None
    return list(found)


def table_entry(spec: dict[str, list[dict]]) -> dict[str, set[str]]:
    """A table's groups, rows and columns as its spec's records make them (reranker.report.results_table builds the same)."""
    entry: dict[str, set[str]] = {field: set() for field in FIELDS}
    for record in spec.get("eval", []):
        entry["groups"].add(record["group"])
        entry["rows"].add(record["row"])
        if "aggregation" in record:  # {row: aggregation} of rows scored from passages (a set, so two configurations can disagree)
            entry.setdefault("aggregations", {}).setdefault(record["row"], set()).add(record["aggregation"])
    for record in spec.get("value", []):
        entry["rows"].add(record["row"])
        entry["columns"].add(record["column"])
    entry["rows"] |= {record["label"] for record in spec.get("summary_row", [])}
    for kind, (group, columns), row_field in (("stats", STATS_TABLE, "group"), ("checkpoints", PRETRAINING_TABLE, "label")):
        if spec.get(kind) and not spec.get("eval"):  # beside evaluations, checkpoints are notes (tables results)
            entry["groups"].add(group)
            entry["columns"] |= set(columns)
            entry["rows"] |= {record[row_field] for record in spec[kind]}
    return entry


def catalog(layers: Iterable[Sequence[str]]) -> dict:
    """The catalog document over the configurations `layers` (each a list of files over the default experiment)."""
    from reranker import experiments
    from reranker.workflow.experiment import Experiment  # imports this package: the DAG's side

    experiments.load()
    tables: dict[str, dict[str, set[str]]] = {}
    figures: dict[str, set[str]] = {}
    names = []
    for files in layers:
        names.append(", ".join(files) or "workflow/config/config.yaml")
        for name, spec in Experiment(load_config([REPO_ROOT / f for f in files])).specs.items():
            if spec.get("sweep"):  # a figure's points: its JSON beside the PNG, read by a claim's `figure`
                figure = PATTERNS["figure"].format(figure=name).removesuffix(".png") + ".json"
                figures.setdefault(figure, set()).update(record["label"] for record in spec["sweep"])
                continue
            for field, values in table_entry(spec).items():
                known = tables.setdefault(name, {f: set() for f in FIELDS})
                if field == "aggregations":
                    for row, aggregations in values.items():
                        known.setdefault(field, {}).setdefault(row, set()).update(aggregations)
                else:
                    known[field] |= values
    return {"configurations": names,
            "tables": {name: {field: ({row: sorted(a) for row, a in sorted(values.items())} if field == "aggregations"
                                      else sorted(values)) for field, values in entry.items()}
                       for name, entry in sorted(tables.items())},
            "figures": {name: {"labels": sorted(labels)} for name, labels in sorted(figures.items())}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m reranker.workflow.catalog", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(DEFAULT_CATALOG), help="where to write it (default: %(default)s)")
    parser.add_argument("--config", action="append", default=[], metavar="FILE",
                        help="one more configuration (its files over the default experiment, comma-separated)")
    args = parser.parse_args(argv)
    layers = configurations() + [tuple(str(Path(f).resolve()) for f in spec.split(",")) for spec in args.config]
    write_json(args.out, catalog(layers), indent=1, ensure_ascii=False)
    print(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
