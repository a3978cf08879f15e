"""The run's README: every table of the three source works, our files, the command, every claim's verdict
(`python -m reranker tables index`; the claims: reranker.reproduction.seeds, their verdicts: reranker.reproduction.claims), and our runs
against the originals' own (numbers/reproduction/: reranker.reproduction.run_level)."""

from __future__ import annotations

import argparse
from collections.abc import Mapping
from pathlib import Path

from reranker.formats.atomic import write_text
from reranker.formats.layout import Layout
from reranker.reproduction import run_level as run_reproduction
from reranker.reproduction import verdicts as v
from reranker.reproduction.claims import judge_all
from reranker.reproduction.seeds import ClaimError, load_seeds


def files_of(entry: Mapping, run_dir: Path) -> str:
    """Our files for a seed table: the table's formats that exist in the run, then the listed extras."""
    names = []
    if entry.get("table"):
        formats = sorted(p.suffix.lstrip(".") for p in (run_dir / "tables").glob(f"{entry['table']}.*"))
        names.append(f"`tables/{entry['table']}.{{{','.join(formats)}}}`" if formats else f"`tables/{entry['table']}` (not in this run)")
    names += [f"`{name}`" for name in entry.get("files") or []]
    return ", ".join(names)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def index(seeds: Mapping, run_dir: Path, command: str = "") -> str:
    """The run's README: an index from every seed table to our files, its command and every claim's verdict."""
    if not (run_dir / "numbers").is_dir():  # else every verdict would read "not run", written without a word
        raise ClaimError(f"{run_dir}: no numbers/ folder; name a run folder the workflow has written tables into")
    judged, judge = judge_all(seeds, run_dir)
    counts: dict[str, int] = {}
    for work in judged:
        for entry in work:
            for verdict in entry:
                for word in verdict.words:
                    counts[word] = counts.get(word, 0) + 1
    lines = [seeds.get("heading", "# What is stored here, table by table"), ""]
    if seeds.get("intro"):
        lines += [seeds["intro"].strip(), ""]
    lines += [v.RULE, ""]
    lines += [f"This index: {len(judge.family)} tests corrected together; verdicts: "
              + ", ".join(f"{word} {counts[word]}" for word in sorted(counts, key=lambda w: (v.WORDS + (w,)).index(w))) + ".", ""]
    if command:
        lines += [f"Made by `{command}` from this folder's `numbers/*.json`; the verdicts are checked by "
                  "`python -m reranker tables index` against the claims in `workflow/config/seed_tables.yaml`.", ""]
    for work, verdicts_of_work in zip(seeds["works"], judged):
        lines += [f"## {work['title']}", ""]
        if work.get("details"):
            lines += [work["details"].strip(), ""]
        lines += ["| source table | ours | effect in the source | verdicts |", "|---|---|---|---|"]
        untested = list(work.get("untested") or [])
        for entry, entry_verdicts in zip(work["tables"], verdicts_of_work):
            held = "<br>".join(verdict.render() for verdict in entry_verdicts) or "no claim"
            if entry.get("context"):
                held += f"<br>({entry['context'].strip()})"
            cells = [entry["source"], files_of(entry, run_dir), entry["effect"], held]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
            untested += [{**item, "table": entry["source"]} for item in entry.get("untested") or []]
        lines.append("")
        if untested:
            lines += ["Statements of the source about these tables that no claim tests here:", "",
                      "| statement | where | why not tested |", "|---|---|---|"]
            lines += ["| " + " | ".join(_cell(c) for c in (item["says"].strip(), item["cite"].strip(), item["why"].strip())) + " |"
                      for item in untested]
            lines.append("")
        if work.get("note"):
            lines += [work["note"].strip(), ""]
    lines += run_reproduction.section(run_reproduction.records_in(Path(Layout(str(run_dir)).pattern("run_reproduction")).parent))
    if seeds.get("outro"):
        lines += [seeds["outro"].strip(), ""]
    return "\n".join(lines)


def add_parser(sub: argparse._SubParsersAction) -> None:
    """`tables index`, running `write_index` (`args.handler`)."""
    parser = sub.add_parser("index", help="the run's README: every seed table, our files, every claim's verdict",
                            description=write_index.__doc__)
    parser.set_defaults(handler=write_index)
    parser.add_argument("--run-dir", required=True, help="the run folder: its numbers/, tables/ and figures/ are read")
    parser.add_argument("--seeds", required=True, help="the seed tables and their claims (workflow/config/seed_tables.yaml)")
    parser.add_argument("--out", required=True, help="the README to write (e.g. <run-dir>/README.md)")
    parser.add_argument("--command", default="", help="the command that made the run, named in the README")
    parser.add_argument("--sources", help="the sources' numbers (default: source_numbers.yaml beside --seeds)")
    parser.add_argument("--catalog", help="the tables, rows and columns some configuration makes, which every claim's names "
                                          "must be among (reranker.formats.catalog; default: table_catalog.json beside --seeds, "
                                          "where there is one)")


def write_index(args: argparse.Namespace) -> int:
    """The run's README: every seed table of the three works, our file, its command, and every claim's verdict."""
    # a ClaimError is an input error: `tables` reports it in one line (its main's exits_on_input_error)
    text = index(load_seeds(args.seeds, args.sources, args.catalog), Path(args.run_dir), args.command)
    write_text(args.out, text)
    print(args.out)
    return 0


