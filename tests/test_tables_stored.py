"""`python -m reranker tables` remakes stored tables byte for byte from what their numbers documents hold.

results/quick/ keeps a quick run's tables and numbers. Each numbers document holds what its table was made from:
every cell's per-query values, the layout and the notes. Saved evaluations rebuilt from them and handed to
`tables results` and `tables stats` as the rules hand theirs, and every stored numbers document handed to
`tables rerender`, give the stored files again, byte for byte: the writers, the subcommands and the Table's
formats together change no output. (The per-query p-values are of values rounded to 6 places, as stored; the
tables' marks are at 0.05 and come out the same.)
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from reranker.formats import captions
from reranker.formats.table_spec import write_spec
from reranker.stages import tables

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "results" / "quick"
SOURCES = str(ROOT / "workflow" / "config" / "source_numbers.yaml")


def stored(table: str) -> dict:
    return json.loads((QUICK / "numbers" / f"{table}.json").read_text(encoding="utf-8"))


def same_files(table: str, out: Path, formats: list[str]) -> None:
    for fmt in formats:
        assert out.with_suffix(f".{fmt}").read_bytes() == (QUICK / "tables" / f"{table}.{fmt}").read_bytes(), (table, fmt)


def evaluations(document: dict, folder: Path) -> list[dict]:
    """The table's cells as `eval` records of saved evaluations rebuilt from its per-query values."""
    records = []
    for group in document["layout"]["groups"]:
        for row in document["layout"]["rows"]:
            per_query = document["per_query"].get(group, {}).get(row)
            if per_query:
                path = folder / f"{len(records)}.json"
                path.write_text(json.dumps({"measures": list(per_query), "queries": len(next(iter(per_query.values()))),
                                            "aggregate": {m: document["numbers"][group][row][m] for m in per_query},
                                            "per_query": per_query}))
                records.append({"group": group, "row": row, "path": str(path)})
    return records


def test_the_baselines_and_main_tables_are_remade_from_their_evaluations(tmp_path):
    """baselines as tables.smk makes it (a note, no marks); birch_main as birch.smk does (†, the per-query figure;
    its checkpoint notes, whose reranker.json files are not stored, given as --note, which comes where they go)."""
    figure = tmp_path / "birch_main_per_query_ap.png"
    for table, formats, options in (("baselines", ["md", "csv", "html"], ["--row-header", "Collection", "--no-bold"]),
                                    ("birch_main", ["md", "csv", "tex", "html"], ["--baseline-row", "BM25+RM3", "--figure", str(figure)])):
        document = stored(table)
        layout = document["layout"]
        spec = tmp_path / f"{table}.spec.json"
        write_spec(spec, {"eval": evaluations(document, tmp_path)})
        notes = [n for n in layout["notes"] if not n.startswith(("† p <", "Per-query AP differences"))]
        out = tmp_path / table
        assert tables.main(["results", "--spec", str(spec), "--measures", *layout["measures"], "--caption", document["caption"],
                            *options, *[arg for note in notes for arg in ("--note", note)], "--sources", SOURCES,
                            "--formats", *formats, "--out", str(out), "--numbers", str(tmp_path / f"{table}.json")]) == 0
        same_files(table, out, formats)
        again = json.loads((tmp_path / f"{table}.json").read_text(encoding="utf-8"))
        for key in ("caption", "layout", "numbers", "per_query"):
            assert again[key] == document[key], (table, key)
        assert (again.get("significance") or {}).get("marks") == (document.get("significance") or {}).get("marks")
    assert figure.read_bytes() == (QUICK / "figures" / figure.name).read_bytes()


def test_the_dataset_statistics_are_remade_from_their_stats_files(tmp_path):
    document = stored("dataset_stats")
    records = []
    for i, collection in enumerate(document["layout"]["rows"]):  # the stored numbers are sorted; names hold slashes
        path = tmp_path / f"{i}.json"
        path.write_text(json.dumps(document["numbers"]["statistics"][collection]))
        records.append({"group": collection, "path": str(path)})
    write_spec(tmp_path / "stats.spec.json", {"stats": records})
    out = tmp_path / "dataset_stats"
    assert tables.main(["stats", "--spec", str(tmp_path / "stats.spec.json"), "--caption", document["caption"],
                        "--note", document["layout"]["notes"][0], "--formats", "md", "csv", "html", "--out", str(out)]) == 0
    same_files("dataset_stats", out, ["md", "csv", "html"])


@pytest.mark.parametrize("table", sorted(p.stem for p in (QUICK / "numbers").glob("*.json")
                                         if "layout" in json.loads(p.read_text(encoding="utf-8"))
                                         and p.stem not in ("dataset_stats", "resources")))  # their number formats are code's
def test_every_stored_table_is_rerendered_from_its_numbers(tmp_path, table):
    numbers = tmp_path / f"{table}.json"
    shutil.copy(QUICK / "numbers" / f"{table}.json", numbers)
    formats = [fmt for fmt in ("md", "csv", "tex", "html") if (QUICK / "tables" / f"{table}.{fmt}").exists()]
    assert tables.main(["rerender", "--numbers", str(numbers), "--out", str(tmp_path / table), "--formats", *formats,
                        "--sources", SOURCES]) == 0
    same_files(table, tmp_path / table, formats)
    assert json.loads(numbers.read_text(encoding="utf-8")) == stored(table)  # the layout it adds is the one it has


def test_no_option_of_any_subcommand_takes_the_name_of_its_handler():
    """Each subcommand sets `handler` (a parent's reaches its own subcommands, as `figure`'s); an option whose dest
    were `handler` would put its value there (`figure ranks --run` took `run`)."""
    def leaves(parser, handler=None):
        handler = parser.get_default("handler") or handler
        children = [child for action in parser._actions if isinstance(action, argparse._SubParsersAction)
                    for child in action.choices.values()]
        if not children:
            yield parser, handler
        for child in children:
            yield from leaves(child, handler)

    found = list(leaves(tables.parser()))
    assert len(found) == 11  # results, stats, pretraining, figure ranks|curves|sweep, rerender, split, wallclock, resources, index
    assert all(handler for _, handler in found)
    assert all(action.dest != "handler" for parser, _ in found for action in parser._actions)


@pytest.mark.parametrize("folder", [ROOT / "results", QUICK], ids=["default", "quick"])
def test_every_stored_figure_has_its_caption(folder):
    """The report is not kept: each stored figure's caption is, in figures/captions.json."""
    stored_captions = captions.read(folder / "figures" / "captions.json")
    missing = sorted(p.name for p in (folder / "figures").glob("*.png") if p.name not in stored_captions)
    assert not missing, missing
    assert not (folder / "report.html").exists()


def test_every_stored_caption_has_its_figure_or_waits_on_a_part():
    """A caption with no figure beside it is a figure the stored default does not show: allowed only where a part
    that makes it (`parts:` in the configuration, its outputs) has not been remade yet (no results/parts/<name>/)."""
    import fnmatch

    from reranker.experiments import load_config

    folder = ROOT / "results" / "figures"
    parts = load_config()["parts"]
    waiting = {name: [o for o in spec["outputs"] if o.startswith("figures/")] for name, spec in parts.items()
               if not (ROOT / "results" / "parts" / name / "run.json").exists()}
    orphans = {name: [part for part, globs in waiting.items() if any(fnmatch.fnmatch(f"figures/{name}", g) for g in globs)]
               for name in captions.read(folder / "captions.json") if not (folder / name).exists()}
    assert {name: by for name, by in orphans.items() if not by} == {}
