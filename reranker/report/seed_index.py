"""The run's README: every table of the three source works, our files, the command, every claim's verdict
(`python -m reranker tables index`; the claims: reranker.reproduction.seeds, their verdicts: reranker.reproduction.claims), and our runs
against the originals' own (numbers/reproduction/: reranker.reproduction.run_level)."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from pathlib import Path

from reranker.formats.atomic import write_text
from reranker.formats.layout import Layout
from reranker.report.forest import FIGURE, Labelled, forest_figure, labelled, points, rows_of, short, table_name
from reranker.report.parts import section as made_in_parts
from reranker.reproduction import run_level as run_reproduction
from reranker.reproduction import verdicts as v
from reranker.reproduction.claims import Line, judge_all
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


LIMIT = 600  # no line of the README is longer, so a reader can scan it: a longer prose line is wrapped at WIDTH
WIDTH = 100
# A word that would open a Markdown block (a list item, a heading, a quote) if a wrapped line began with it
_OPENS_BLOCK = re.compile(r"^([-+*>]|#{1,6}|\d{1,9}[.)])$")


def wrap(line: str, width: int = WIDTH) -> list[str]:
    """A prose line (a paragraph's, or a list item's: its continuation lines indented under its text) on lines of
    at most about `width` characters; never starting a line with a word that would open a new block."""
    m = re.match(r"^(\s*)((?:[-+*]|\d{1,9}[.)])\s+)?", line)
    indent = m.group(1) + " " * len(m.group(2) or "")
    words = line[m.end():].split()
    out, current = [], line[: m.end()]
    for word in words:
        fits = len(current) + 1 + len(word) <= width or current.strip() == "" or current == line[: m.end()]
        if fits or _OPENS_BLOCK.match(word):
            current += ("" if current.endswith(" ") or current == "" else " ") + word
        else:
            out.append(current)
            current = indent + word
    return out + [current]


def fold(lines: list[str], limit: int = LIMIT) -> list[str]:
    """Every line over `limit` characters wrapped (table rows and code blocks are left as they are)."""
    out, code = [], False
    for text in "\n".join(lines).split("\n"):
        if text.lstrip().startswith("```"):
            code = not code
        if len(text) <= limit or code or text.lstrip().startswith("|"):
            out.append(text)
        else:
            out += wrap(text)
    return out


def _p_text(p: float) -> str:
    return "n/a" if math.isnan(p) else "< 0.0001" if p < 0.0001 else f"{p:.4f}" if p < 0.01 else f"{p:.3f}"


def _signed(value: float) -> str:
    return "nan" if math.isnan(value) else f"{value:+.4f}"


def effect_cell(line: Line) -> str:
    """The deciding test's effect with its 95% interval (and margin), the number of further tests; where the line has
    no test, what its verdict rests on (its first note's first clause)."""
    if not line.tests:
        return short(line.notes[0].split(";")[0], 90) if line.notes else "–"
    test = line.lead()
    text = f"{_signed(test.effect)} [95% CI {_signed(test.ci[0])}, {_signed(test.ci[1])}]"
    if test.margin is not None:
        text += f", margin {'±' if test.expect == 'near' else ''}{test.margin:g}"
    more = len(line.tests) - 1
    return text + (f"; +{more} test{'s' if more > 1 else ''}" if more else "")


def p_cell(line: Line) -> str:
    if not line.tests:
        return "–"
    test = line.lead()
    return _p_text(test.p_adjusted) + ("" if test.corrected else " (uncorrected)")


def er_cell(line: Line) -> str:
    """ER and ΔRI (the source's cells, in the list below the table), "no ER" where no source cell maps to the line."""
    if not line.reproduction:
        return "–"
    return line.reproduction.split(" (")[0] if line.reproduction.startswith("ER ") else "no ER"


def verdict_table(items: list[Labelled]) -> list[str]:
    """One row per line of every claim (and per claim with no line: not run, pending)."""
    lines = ["| claim | our rows | effect [95% CI] | p (corrected) | verdict | ER / ΔRI |", "|---|---|---|---|---|---|"]
    for item in items:
        if item.line is None:
            cells = [item.claim, short(item.verdict.text, 160) or "–", "–", "–", f"**{item.word}**", "–"]
        else:
            line = item.line
            cells = [item.claim, rows_of(line), effect_cell(line), p_cell(line), f"**{item.word}**", er_cell(line)]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines


def claim_list(entries: list[Mapping], items: list[Labelled]) -> list[str]:
    """Per seed table, its context; per claim, where the source states it (its quote), then each line: what it
    compared, with values, its tests, notes, why a row is not trained, ER and ΔRI with the source's cells. One piece
    a line, each but the last ending in ";"."""
    out: list[str] = []
    for entry in entries:
        if entry.get("context"):
            out.append(f"- **{table_name(entry)}**: {' '.join(entry['context'].split())}")
        out += _claim_items([item for item in items if item.entry is entry])
    return out


def _claim_items(items: list[Labelled]) -> list[str]:
    out: list[str] = []
    for item in items:
        entry, verdict = item.entry, item.verdict
        if item.line is None or item.line is verdict.lines[0]:
            said = f": “{' '.join(verdict.says.split())}”" if verdict.says else ""
            out.append(f"- **{table_name(entry)} · {item.number}** ({verdict.cite.strip() or 'no citation'}){said}")
            if verdict.note:
                out.append(f"  - how to read it here: {' '.join(verdict.note.split())}")
        if item.line is None:
            out.append(f"  - {verdict.word}" + (f": {verdict.text}" if verdict.text else ""))
            continue
        line = item.line
        name = item.claim.rsplit(" · ", 1)[-1]
        pieces = [f"**{name}**, {item.word}: {line.text}", *(t.text() for t in line.tests), *line.notes,
                  line.apart or "", line.untrained or "", line.reproduction]
        pieces = [" ".join(p.split()) for p in pieces if p and p.strip()]
        out += [("  - " if i == 0 else "    ") + piece + (";" if i < len(pieces) - 1 else "") for i, piece in enumerate(pieces)]
    return out


def untested_table(untested: list[Mapping]) -> list[str]:
    """The source's statements no claim tests: a table, each row within LIMIT; a statement (or a reason) too long for
    its row is cut there and given in full below the table, by where the source says it."""
    lines, full = ["| statement | where | why not tested |", "|---|---|---|"], []
    for item in untested:
        says, cite, why = (" ".join(item[key].split()) for key in ("says", "cite", "why"))
        cells = [says, cite, why]
        room = LIMIT - len("| " + " | ".join(_cell(c) for c in cells) + " |")
        if room < 0:
            marker = " (in full below)"
            for i in (0, 2):  # the statement first, then the reason
                if room < 0:
                    keep = max(80, len(_cell(cells[i])) + room - len(marker) - 8)
                    cells[i] = short(cells[i], keep) + marker
                    room = LIMIT - len("| " + " | ".join(_cell(c) for c in cells) + " |")
            full.append(f"- {cite}: “{says}”; not tested: {why}")
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return lines + ([""] + fold(full) if full else [])


def index(seeds: Mapping, run_dir: Path, command: str = "", figure: str | Path | None = None, preface: str = "") -> str:
    """The run's README: an index from every seed table to our files, its command and every claim's verdict, one
    table row per judged line; with `figure`, the forest plot of every test is drawn there too (before the README,
    which names it where it is the run folder's own figures/verdicts_forest.png). `preface` opens it: what the
    configuration's rows can and cannot show (the configuration's `index_preface`)."""
    if not (run_dir / "numbers").is_dir():  # else every verdict would read "not run", written without a word
        raise ClaimError(f"{run_dir}: no numbers/ folder; name a run folder the workflow has written tables into")
    judged, judge = judge_all(seeds, run_dir)
    if figure is not None:
        forest_figure(points(seeds["works"], judged), figure)
    counts: dict[str, int] = {}
    for work in judged:
        for entry in work:
            for verdict in entry:
                for word in verdict.words:
                    counts[word] = counts.get(word, 0) + 1
    lines = [seeds.get("heading", "# What is stored here, table by table"), ""]
    if preface.strip():
        lines += [" ".join(preface.split()), ""]
    if seeds.get("intro"):
        lines += [seeds["intro"].strip(), ""]
    lines += [v.RULE, ""]
    lines += [f"This index: {len(judge.family)} tests corrected together; verdicts: "
              + ", ".join(f"{word} {counts[word]}" for word in sorted(counts, key=lambda w: (v.WORDS + (w,)).index(w))) + ".", ""]
    forest = Path(Layout(str(run_dir)).path("figure", figure=FIGURE))
    if forest.is_file():
        lines += [f"`figures/{forest.name}` draws every test of this index: its effect with the 95% interval, the "
                  "claim's margin shaded, coloured by the line's verdict, by work and claim.", ""]
    if command:
        lines += [f"Made by `{command}` from this folder's `numbers/*.json`; the verdicts are checked by "
                  "`python -m reranker tables index` against the claims in `workflow/config/seed_tables.yaml`.", ""]
    lines += made_in_parts(run_dir)
    for w, (work, verdicts_of_work) in enumerate(zip(seeds["works"], judged)):
        lines += [f"## {work['title']}", ""]
        if work.get("details"):
            lines += [work["details"].strip(), ""]
        lines += ["| source table | ours | effect in the source | claims |", "|---|---|---|---|"]
        untested = list(work.get("untested") or [])
        for entry, entry_verdicts in zip(work["tables"], verdicts_of_work):
            claims = f"{len(entry_verdicts)} claim{'s' if len(entry_verdicts) > 1 else ''}" if entry_verdicts else "no claim"
            cells = [entry["source"], files_of(entry, run_dir), entry["effect"], claims]
            lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
            untested += [{**item, "table": entry["source"]} for item in entry.get("untested") or []]
        lines.append("")
        items = list(labelled(w, work["tables"], verdicts_of_work))
        if items:
            lines += ["Every judged line, one row each: the claims are numbered within their source table, the lines of a",
                      "claim lettered; p is Holm-corrected over the whole index. Below the table, per claim: where the",
                      "source states it, and what each line compared, with its notes.", ""]
            lines += verdict_table(items) + [""]
        below = claim_list(work["tables"], items)
        if below:
            lines += below + [""]
        if untested:
            lines += ["Statements of the source about these tables that no claim tests here:", ""] + untested_table(untested) + [""]
        if work.get("note"):
            lines += [work["note"].strip(), ""]
    lines += run_reproduction.section(run_reproduction.records_in(Path(Layout(str(run_dir)).pattern("run_reproduction")).parent))
    if seeds.get("outro"):
        lines += [seeds["outro"].strip(), ""]
    return "\n".join(fold(lines))


def write_index(run_dir: str, seeds: str, out: str, *, command: str = "", preface: str = "", figure: str | None = None,
                sources: str | None = None, catalog: str | None = None) -> list[str]:
    """The run's README at `out`: every seed table of the three works, our file, its command, and every claim's
    verdict (`index`; with `figure`, its forest plot drawn there); the paths written, as given."""
    # a ClaimError is an input error: `tables` reports it in one line (its main's exits_on_input_error)
    text = index(load_seeds(seeds, sources, catalog), Path(run_dir), command, figure, preface)
    write_text(out, text)
    return [out] + ([figure] if figure else [])
