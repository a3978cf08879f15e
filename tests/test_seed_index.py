"""The run's README as an index a reader can scan: one table row per judged line, no line over
600 characters, and the forest plot of every test it judges (reranker.report.seed_index, reranker.report.forest)."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from reranker.report import forest, seed_index
from reranker.reproduction import verdicts as v
from reranker.reproduction.claims import judge_all
from reranker.reproduction.seeds import load_seeds
from reranker.stages import tables

ROOT = Path(__file__).resolve().parent.parent
QUICK = ROOT / "results" / "quick"
SEEDS = ROOT / "workflow" / "config" / "seed_tables.yaml"
ROW = re.compile(r"^\| ([^|]+ · \d+[a-z]*) \| (.*) \| \*\*([^*]+)\*\* \| [^|]* \|$")  # a verdict table's row


@pytest.fixture(scope="module")
def quick():
    """The quick run's index, and its verdicts judged apart from it."""
    seeds = load_seeds(SEEDS)
    judged, judge = judge_all(seeds, QUICK)
    return seeds, seed_index.index(seeds, QUICK), judged, judge


def test_no_line_of_the_quick_runs_index_is_over_600_characters(quick):
    _, text, _, _ = quick
    longest = max(text.splitlines(), key=len)
    assert len(longest) <= 600, f"{len(longest)} characters: {longest[:200]}"
    assert "<br>" not in text


@pytest.mark.parametrize("run_dir", [ROOT / "results", QUICK], ids=["default", "quick"])
def test_no_line_of_a_stored_index_is_over_600_characters(run_dir):
    """The stored indexes as a reader opens them (test_prose requires each to be what the index makes of its
    numbers), the default's too, whose pending lines carry the reason a number is pending."""
    text = (run_dir / "README.md").read_text(encoding="utf-8")
    longest = max(text.splitlines(), key=len)
    assert len(longest) <= 600, f"{len(longest)} characters: {longest[:200]}"
    assert "<br>" not in text


def test_the_quick_runs_index_has_one_table_row_per_verdict_line_in_order(quick):
    seeds, text, judged, _ = quick
    rows = [m.group(1, 3) for line in text.splitlines() if (m := ROW.match(line))]
    expected = []
    for work in judged:
        for entry in work:
            for verdict in entry:
                expected += [line.verdict() for line in verdict.lines] or [verdict.word]
    assert len(rows) == len(expected) > 50
    assert [word for _, word in rows] == expected
    labels = [label for label, _ in rows]
    assert len(set(labels)) == len(labels), "each line has its own label"
    assert any(re.search(r" · \d+a$", label) for label in labels)  # a claim of several lines, lettered
    assert any(re.search(r" · \d+$", label) for label in labels)  # a claim of one line


def test_every_claim_of_the_quick_run_is_quoted_below_its_table_with_where_the_source_says_it(quick):
    seeds, text, judged, _ = quick
    for work, judged_work in zip(seeds["works"], judged):
        for entry, verdicts in zip(work["tables"], judged_work):
            for number, (claim, verdict) in enumerate(zip(entry.get("claims") or [], verdicts), 1):
                head = f"- **{forest.table_name(entry)} · {number}** ({' '.join(claim['cite'].split())})"
                assert head in text, head
                for line in verdict.lines:  # each line's notes, somewhere below its table
                    for note in line.notes:
                        assert " ".join(note.split()) in text, note


def test_a_seed_tables_context_is_listed_below_its_work_even_where_it_has_no_claim():
    entries = [{"source": "Table 9: the last one", "context": "Why it  matters\nhere."}, {"source": "Table 10"}]
    assert seed_index.claim_list(entries, []) == ["- **Table 9**: Why it matters here."]


def test_a_long_line_is_wrapped_and_a_list_item_stays_one_item():
    item = "- " + " ".join(["word"] * 150) + " - 1. # > + last"
    wrapped = seed_index.fold(["intro", item, "| a table row " + "x" * 700 + " |"])
    assert wrapped[0] == "intro" and wrapped[-1].startswith("| a table row") and len(wrapped[-1]) > 700
    body = wrapped[1:-1]
    assert len(body) > 5 and body[0].startswith("- word") and all(line.startswith("  word") or line.startswith("  ")
                                                                  for line in body[1:])
    assert all(len(line) <= seed_index.WIDTH + 12 for line in body)  # a word that would open a block stays on its line
    assert not any(re.match(r"^\s*([-+*>#]|\d+\.)\s", line) for line in body[1:]), body  # nothing opens a new block
    assert " ".join(" ".join(body).split()) == " ".join(item.split())  # every word kept, in order
    assert seed_index.fold(["x" * 600]) == ["x" * 600]


def test_an_untested_statement_too_long_for_its_row_is_cut_there_and_given_in_full_below():
    says = "The source says " + "a great deal " * 60 + "and ends here."
    lines = seed_index.untested_table([{"says": says, "cite": "p. 7", "why": "no table of ours has it"},
                                       {"says": "short", "cite": "p. 8", "why": "none"}])
    assert all(len(line) <= seed_index.LIMIT for line in lines)
    assert lines[2].endswith("(in full below) | p. 7 | no table of ours has it |")
    assert lines[3] == "| short | p. 8 | none |"
    below = lines[lines.index("") + 1:]
    assert len(below) > 1 and below[0].startswith("- p. 7: “The source says")  # wrapped, one list item
    assert " ".join(" ".join(below).split()) == f"- p. 7: “{' '.join(says.split())}”; not tested: no table of ours has it"


def test_the_forest_has_one_point_per_test_of_the_index_each_with_a_colour(quick):
    seeds, _, judged, judge = quick
    found = forest.points(seeds["works"], judged)
    tests = [t for work in judged for entry in work for verdict in entry for line in verdict.lines for t in line.tests]
    assert len(found) == len(tests) > 40
    assert {id(t) for t in tests} <= {id(t) for t in judge.family.tests + judge.outside}  # each one the index judged
    assert [(p.effect, p.low, p.high) for p in found] == [(t.effect, *t.ci) for t in tests]
    assert {p.work for p in found} == {"Birch", "Radboud", "NTNU"}
    assert {p.corrected for p in found} == {True, False}  # tests beside a claim not judged are drawn too
    assert any(p.margin is not None for p in found) and any(p.margin is None for p in found)
    assert set(v.WORDS) <= set(forest.COLOURS) and forest.COLOURS[v.NOT_TRAINED] != forest.COLOURS[v.INCONCLUSIVE]
    assert {p.word for p in found} <= set(forest.COLOURS)
    labels = [f"{p.claim} {p.label}" for p in found]
    assert any(label.startswith("Table 5.5 · 1 ") for label in labels)


def test_the_index_command_draws_the_forest_and_the_readme_names_it_where_it_is_the_run_folders(tmp_path):
    run = tmp_path / "run"
    for folder in ("numbers", "tables", "figures"):
        shutil.copytree(QUICK / folder, run / folder)
    (run / "figures" / "verdicts_forest.png").unlink(missing_ok=True)
    elsewhere = tmp_path / "forest.png"
    assert tables.main(["index", "--run-dir", str(run), "--seeds", str(SEEDS), "--out", str(tmp_path / "a.md"),
                        "--figure", str(elsewhere)]) == 0
    assert elsewhere.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "verdicts_forest.png" not in (tmp_path / "a.md").read_text()  # not the run folder's: not named
    figure = run / "figures" / "verdicts_forest.png"
    assert tables.main(["index", "--run-dir", str(run), "--seeds", str(SEEDS), "--out", str(run / "README.md"),
                        "--figure", str(figure)]) == 0
    assert figure.stat().st_size > 10_000
    assert "`figures/verdicts_forest.png` draws every test of this index" in (run / "README.md").read_text()


def test_the_forest_of_an_index_with_no_test_is_drawn_and_says_so(tmp_path):
    path = tmp_path / "empty.png"
    forest.forest_figure([], path)
    assert path.read_bytes()[:4] == b"\x89PNG"
