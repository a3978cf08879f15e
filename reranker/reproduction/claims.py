"""Whether each source work's effect held: the claims of the seed file (reranker.reproduction.seeds), judged on a run's
stored numbers. `Judge` reads the run folder's `numbers/*.json` (values and per-query values) and figures'
JSON, judges each claim into lines, and corrects every test of the index together (`judge_all`); how a
verdict is decided (tests, intervals, the one correction) is `reranker.reproduction.verdicts`; the README made of the
verdicts is `reranker.report.seed_index` (`python -m reranker tables index`).

Claim kinds, each able to come out against the source:
- `compare`: our row(s) `rows` (a glob or a list: one line per row and group) against the row `than`
  (`{row}` in it stands for the compared row's label), on `measure`, in each group (or `groups`); `than`
  read from `than_table` and/or `than_group` where given (a teacher in another table, a twin in another
  column group). `expect`: above | below | near | no_better (the last two with `margin`).
- `monotone`: the rows matching `rows` ordered by the column `by` (or a figure's x: `figure`, `label`),
  `expect: increasing | decreasing`: reproduced where the last is significantly beyond the first in that
  direction and no adjacent step is significantly the other way; contradicted where a step or the whole
  is significantly the other way.
- `equal`: every pair of the rows matching `rows`, `expect: equal` (each pair near within `margin`) or
  `differ` (some pair significantly more than `margin` apart).
- `flat_after`: a figure's label from x = `after` on: every later x near the value at `after` (`margin`).
- `best_at`: a figure's label is best at x = `at`: every other x significantly below it.
- `value`: one number against the source's (`equals`, within `tolerance`): reproduced or contradicted.

A claim on a quantity with no per-query values (a loss, a speed, a token accuracy) names what its verdict
rests on (`rests_on`, with `margin`): it is judged on the two values alone. `stated_at` is the setting where the
source states the claim, as data (reranker.reproduction.grid): a grid point's values, judged at exactly the groups
that are that point ({epochs: 2} is each learning rate at 2 epochs), or {select: best}, each row at its own best
grid point. A table without that setting gives "not at the source's setting" (its test shown, uncorrected), and
where the source's own cells are at our setting, the direction they show is judged on our rows as a line of its own.
A line on a row whose checkpoints did not learn (the table's provenance: held-out loss not clearly below the label
prior, or the untrained start kept) reads "not trained", with its losses, and joins no corrected family. A line
that compares rows of two tables (`than_table`) made from different shared starts (reranker.reproduction.grid.apart:
their common baseline is other models, as where two parts of a default ran on other machines) reads "not
comparable", with its test shown, and joins no corrected family either.

Every claim names where the source states it (`cite`, required) and may quote it (`says`). A compare
claim may name the source's cells (`source: {rows, than, column, at, group}`; source_row labels in
workflow/config/source_numbers.yaml beside the seed file, `at` defaulting to the table's, i.e. our
setting): each line then shows ER and ΔRI (reranker.reproduction.effects) between the source cells mapped to that
line's two rows (the cells' `row`), never best against best; a source row whose cell maps to no row the
claim compares is an error. `replicability: true` in `source` says the source's cells are on another
collection (Birch's Robust04): ER and ΔRI between mapped rows, no per-query pairing across them.
A work's `spread: {table, rows}` names seed reruns: an effect smaller than their range on the same
measure is never called reproduced or contradicted.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from reranker.formats import numbers as stored
from reranker.reproduction import verdicts as v
from reranker.reproduction.effects import Reproduction
from reranker.reproduction.grid import BEST, apart, at_setting, group_setting, setting_text, untrained_rows
from reranker.reproduction.lines import Line, Verdict, deciding_pair, every, fmt, matching, no_values, setting_words, single
from reranker.reproduction.seeds import ClaimError, patterns, ref_cells, ref_of
from reranker.reproduction.tolerance import within


class Judge:
    """Judges the claims of one run folder; every test joins one family, corrected once (`finish`)."""

    def __init__(self, run_dir: Path, source_numbers: Mapping | None = None):
        self.run_dir = Path(run_dir)
        self.source_numbers = source_numbers
        self.family = v.Family()
        self.outside: list[v.Test] = []  # tests shown beside a claim not at the source's setting, never corrected
        self._documents: dict[str, dict | None] = {}

    def document(self, name: str) -> dict | None:
        if name not in self._documents:
            self._documents[name] = stored.read_numbers(self.run_dir, name)
        return self._documents[name]

    def finish(self) -> None:
        self.family.correct()

    def test(self, name: str, ours: stored.Side, than: stored.Side, expect: str, margin: float | None,
             judged: bool = True) -> v.Test | None:
        """The paired test of ours against than; None where either has no per-query values. A test that judges no
        claim (`judged` false: a claim not at the source's setting) stays out of the corrected family."""
        if ours.per_query is None or than.per_query is None:
            return None
        d = v.paired(ours.per_query, than.per_query)
        if len(d) < 2:
            raise ClaimError(f"{name}: {ours.row} and {than.row} share {len(d)} queries; a paired test needs 2 or more")
        unique, i = name, 2
        while any(t.name == unique for t in self.family.tests + self.outside):
            unique, i = f"{name} #{i}", i + 1
        test = v.difference_test(unique, d, expect, margin)
        if set(ours.per_query) != set(than.per_query):  # judged on the queries both have; said, as the rows' means are not
            test.unpaired = (f"{ours.row} over {len(ours.per_query)} queries, {than.row} over {len(than.per_query)}: "
                             f"judged on the {len(d)} both have")
        if not judged:
            test.p_adjusted, test.corrected = test.p_raw, False
            self.outside.append(test)
            return test
        return self.family.add(test)

    # -- claim kinds ------------------------------------------------------------------------------------

    def check(self, claim: Mapping, entry: Mapping, spread: Mapping | None = None) -> Verdict:
        verdict = self._check(claim, entry, spread)
        verdict.cite, verdict.says, verdict.note = claim.get("cite", ""), claim.get("says", ""), claim.get("note", "")
        return verdict

    def _check(self, claim: Mapping, entry: Mapping, spread: Mapping | None) -> Verdict:
        kind = claim["kind"]
        if "figure" in claim:
            figure = self.document(claim["figure"])
            if figure is None:
                return Verdict(word="not run", text=f"{claim['figure']} is not in this run")
            if figure.get("pending_why"):  # its jobs changed since it was stored (tools/stale.py)
                return Verdict(word=v.PENDING, text=f"{claim['figure']} is pending ({figure['pending_why']})")
            return {"monotone": self.monotone_figure, "flat_after": self.flat_after, "best_at": self.best_at}[kind](claim, figure)
        document = self.document(entry["table"])
        if document is None:
            return Verdict(word="not run", text=f"numbers/{entry['table']}.json is not in this run")
        other = self.document(claim["than_table"]) if claim.get("than_table") else None
        if claim.get("than_table") and other is None:
            return Verdict(word="not run", text=f"numbers/{claim['than_table']}.json is not in this run")
        pending = [cell for doc in (document, other) if doc for cell in (doc.get("layout") or {}).get("pending", [])
                   if cell[2] == claim.get("measure")]
        if pending:  # stored before a fix: not evidence either way
            why = next(doc["layout"].get("pending_why", "") for doc in (document, other) if doc and doc.get("layout", {}).get("pending"))
            return Verdict(word="pending", text=f"{claim['measure']} of {len(pending)} cells is pending ({why})")
        try:
            if kind == "compare":
                return self.compare(claim, entry, document, other, spread)
            if kind == "monotone":
                return self.monotone_table(claim, document)
            if kind == "equal":
                return self.equal(claim, document)
            return self.value(claim, document)
        except ClaimError as err:
            raise ClaimError(f"numbers/{entry['table']}.json: {err}") from None

    def compare(self, claim: Mapping, entry: Mapping, document: Mapping, other: Mapping | None, spread: Mapping | None) -> Verdict:
        than_doc = other if other is not None else document
        apart_why = apart(document, other, (entry["table"], claim["than_table"])) if other is not None else None
        groups = [g for g in (claim.get("groups") or stored.groups(document)) if g != claim.get("than_group")]
        stated = claim.get("stated_at")
        best = stated is not None and stated.get("select") == BEST
        grid = [g for g in groups if group_setting(g)]
        if best and len(grid) >= 2:
            return self.compare_best(claim, entry, document, than_doc, grid, spread, apart_why)
        # one grid point has no best of a grid: not the source's setting, like a grid point we do not run
        at = [] if best else [g for g in groups if stated is None or at_setting(g, stated)]
        not_at = setting_text(stated) if stated is not None and not at else None
        lines = []
        for group in at or groups:
            for ours, than, named in self._pairs(claim, document, than_doc, group, len(groups) > 1):
                lines.append(self._compare_line(claim, entry, ours, than, named, spread, not_at,
                                                untrained_rows([(document, ours), (than_doc, than)]), apart_why))
                if not_at is not None:
                    lines += self._source_direction(claim, entry, ours, than, named, lines[-1].untrained, apart_why)
        if not lines:
            return Verdict(word="not run", text=f"no rows {claim['rows']} and {claim['than']} with {claim['measure']} in this run")
        return Verdict(lines)

    def _pairs(self, claim: Mapping, document: Mapping, than_doc: Mapping, group: str,
               several: bool) -> list[tuple[stored.Side, stored.Side, bool]]:
        """(ours, than, whether to name the groups) for each of the claim's rows in the group that has its `than`."""
        out = []
        for row in matching(stored.rows(document, group), claim["rows"]):
            than_group = claim.get("than_group", group)
            than_row = self._than(claim["than"].replace("{row}", row), than_doc, than_group)
            if than_row is None or (than_row == row and than_group == group):
                continue
            ours = stored.side(document, group, row, claim["measure"])
            than = stored.side(than_doc, than_group, than_row, claim["measure"])
            if ours is not None and than is not None:
                out.append((ours, than, several or than_group != group))
        return out

    def compare_best(self, claim: Mapping, entry: Mapping, document: Mapping, than_doc: Mapping, grid: list[str],
                     spread: Mapping | None, apart_why: str | None = None) -> Verdict:
        """Each row at its own best of the `grid` points against `than` at its own: the source's selection, made on
        the same queries for both sides (optimistic alike)."""
        def best(doc: Mapping, row: str) -> stored.Side | None:
            sides = [s for g in grid if (s := stored.side(doc, g, row, claim["measure"])) is not None]
            return max(sides, key=lambda s: s.value) if sides else None
        lines = []
        for row in dict.fromkeys(r for g in grid for r in matching(stored.rows(document, g), claim["rows"])):
            than_row = self._than(claim["than"].replace("{row}", row), than_doc, grid[0])
            ours, than = best(document, row), best(than_doc, than_row) if than_row else None
            if ours is None or than is None or than_row == row and than_doc is document:
                continue
            line = self._compare_line(claim, entry, ours, than, True, spread, None, None, apart_why)
            line.notes.insert(0, f"each row at its best of {len(grid)} grid points on these queries (the source's "
                                 "selection, optimistic for both rows alike)")
            lines.append(line)
        if not lines:
            return Verdict(word="not run", text=f"no rows {claim['rows']} and {claim['than']} with {claim['measure']} in this run")
        return Verdict(lines)

    def _source_direction(self, claim: Mapping, entry: Mapping, ours: stored.Side, than: stored.Side, named: bool,
                          untrained_why: str | None, apart_why: str | None = None) -> list[Line]:
        """Where the source is not run at our setting but its own cells are (its table's `at`, ours): the direction those
        cells show, judged on our rows as a line of its own. Nothing where the cells are not at our setting, or
        disagree in direction."""
        if claim.get("source") is None or self.source_numbers is None or "rests_on" in claim:
            return []
        ref, _, tables = ref_of(claim, entry)
        at = ref.get("at") or self.source_numbers["tables"][tables[0]].get("at")
        if at is None or setting_words(at) != setting_words(ours.group) or setting_words(at) != setting_words(than.group):
            return []
        adv = [c for r in patterns(ref["rows"]) for c in ref_cells(ref, self.source_numbers, tables[:1], r)]
        base = [c for r in patterns(ref["than"]) for c in ref_cells(ref, self.source_numbers, tables, r)]
        adv = [c for c in adv if c.get("row") == ours.row] or [c for c in adv if c.get("row") is None]
        base = [c for c in base if c.get("row") == than.row] or [c for c in base if c.get("row") is None]
        signs = {math.copysign(1, float(a["value"]) - float(b["value"])) for a in adv for b in base
                 if float(a["value"]) != float(b["value"])}
        if len(signs) != 1:
            return []
        expect = "above" if signs.pop() > 0 else "below"
        shown = "; ".join(f"{a['source_row']} {fmt(float(a['value']))} {expect} {b['source_row']} {fmt(float(b['value']))}"
                          for a in adv for b in base)
        direction = {**claim, "expect": expect, "source": None, "stated_at": None}
        line = self._compare_line(direction, entry, ours, than, named, None, None, untrained_why, apart_why)
        line.text = f"the source's own direction at our setting ({at}: {shown}): " + line.text
        return [line]

    @staticmethod
    def _than(pattern: str, document: Mapping, group: str) -> str | None:
        """The one row `pattern` names in the group (a glob, where a profile's labels differ: "Bi-encoder * 1S"); None
        where it names none; several is an error (a claim compares with one row)."""
        if not any(c in pattern for c in "*?["):
            return pattern
        found = matching(stored.rows(document, group), pattern)
        if len(found) > 1:
            raise ClaimError(f"than {pattern!r} matches {len(found)} rows in {group} ({', '.join(found)}); it must name one")
        return found[0] if found else None

    def _compare_line(self, claim: Mapping, entry: Mapping, ours: stored.Side, than: stored.Side, named: bool, spread: Mapping | None,
                      not_at: str | None, untrained_why: str | None, apart_why: str | None = None) -> Line:
        measure, expect = claim["measure"], claim["expect"]
        text = f"{measure}: {ours.label(named)} {fmt(ours.value)} vs {than.label(named)} {fmt(than.value)}"
        line = Line(text, not_at=not_at, rows=f"{ours.label(named)} vs {than.label(named)}", untrained=untrained_why,
                    apart=apart_why)
        if "rests_on" in claim:
            line.word = v.point_word(ours.value, than.value, expect, float(claim["margin"]))
            line.notes.append(f"difference {ours.value - than.value:+.4f}, margin {claim['margin']:g}; rests on {claim['rests_on']}")
        else:
            name = f"{entry.get('table')}: {ours.row} ({ours.group}) vs {than.row} ({than.group}), {measure}, {expect}"
            test = self.test(name, ours, than, expect, claim.get("margin"),
                             judged=not_at is None and untrained_why is None and apart_why is None)
            if test is None:
                no_values(line)
            else:
                line.tests, line.decide = [test], lambda tests: single(tests[0])
        if spread is not None and expect in ("above", "below", "no_better"):
            width = spread.get(measure)
            if width is not None:
                line.floor = width
                line.notes.append(f"seeds' range {width:.4f}")
        if claim.get("source") is not None:
            line.reproduction = self._reproduction(claim, entry, ours, than)
        if not_at is not None:
            line.notes.insert(0, f"the source states it at {not_at}; ours is {ours.group}")
        return line

    def _reproduction(self, claim: Mapping, entry: Mapping, ours: stored.Side, than: stored.Side) -> str:
        """ER and ΔRI between the source cells mapped to this line's two rows, with the source's own direction."""
        if self.source_numbers is None:
            raise ClaimError(f"the claim names source cells ({claim['source']}), but no source numbers were loaded")
        ref, replicability, tables = ref_of(claim, entry)

        def cells(side: str, where: Sequence[str]) -> list[Mapping]:
            return [c for source_row in patterns(ref[side]) for c in ref_cells(ref, self.source_numbers, where, source_row)]

        adv_cells, base_cells = cells("rows", tables[:1]), cells("than", tables)
        adv = next((c for c in adv_cells if c.get("row") == ours.row), None)
        base = next((c for c in base_cells if c.get("row") == than.row), None)
        setting = ref.get("at") or self.source_numbers["tables"][tables[0]].get("at")
        where = f"the source{', ' + setting if setting else ''}"

        def direction(a: Mapping, b: Mapping) -> str:
            word = "above" if a["value"] > b["value"] else "below" if a["value"] < b["value"] else "equal to"
            return f"{a['source_row']} {fmt(float(a['value']))} {word} {b['source_row']} {fmt(float(b['value']))}"

        if adv is None or base is None:  # no cell maps to this line's rows: the source's own direction, never an ER
            shown = [direction(a, b) for a in adv_cells for b in base_cells if (adv is None or a is adv) and (base is None or b is base)]
            missing = ours.row if adv is None else than.row
            return f"{where}: {'; '.join(shown)}; no source row maps to {missing!r}, so no ER"
        pair = Reproduction(float(base["value"]), float(adv["value"]), than.value, ours.value)
        reading = "; replicability on another collection: means only, no per-query pairing" if replicability else ""
        return f"{pair.text()} ({where}: {direction(adv, base)}{reading})"

    def _ordered(self, sides: list[tuple[float, stored.Side]], claim: Mapping, name: str, document: Mapping | None = None) -> Line:
        """A trend over sides ordered by x: reproduced where last vs first is significant in the claim's direction and
        no adjacent step is significantly the other way; contradicted where any of those is significantly the other way."""
        expect = "above" if claim["expect"] == "increasing" else "below"
        sides = sorted(sides, key=lambda item: item[0])
        text = f"{claim['measure']} by {claim.get('by', 'x')}: " + ", ".join(f"{s.row} {fmt(s.value)}" for _, s in sides)
        line = Line(text, rows=", ".join(s.row for _, s in sides),
                    untrained=untrained_rows((document, s) for _, s in sides) if document is not None else None)
        judged = line.untrained is None
        if "rests_on" in claim:
            margin = float(claim["margin"])
            words = [v.point_word(b.value, a.value, expect, margin) for (_, a), (_, b) in zip(sides, sides[1:])]
            line.word = v.combine(words)
            line.notes.append(f"each step against margin {margin:g}; rests on {claim['rests_on']}")
            return line
        if any(s.per_query is None for _, s in sides):
            no_values(line)
            return line
        steps = [self.test(f"{name}: {b.row} vs {a.row}", b, a, expect, None, judged=judged)  # two rows: the whole is the step
                 for (_, a), (_, b) in zip(sides, sides[1:])] if len(sides) > 2 else []
        whole = self.test(f"{name}: {sides[-1][1].row} vs {sides[0][1].row}", sides[-1][1], sides[0][1], expect, None, judged=judged)
        line.tests = [whole] + steps
        if len(sides) > 2:
            line.notes.insert(0, "the first test is last against first, then each step")

        def decide(all_tests: list[v.Test]) -> str:
            if any(t.significant and t.supports == v.CONTRADICTED for t in all_tests):
                return v.CONTRADICTED
            return v.REPRODUCED if all_tests[0].significant and all_tests[0].supports == v.REPRODUCED else v.INCONCLUSIVE
        line.decide = decide
        return line

    def monotone_table(self, claim: Mapping, document: Mapping) -> Verdict:
        lines = []
        numbers = document.get("numbers") or {}
        for group in claim.get("groups") or stored.groups(document):
            rows = numbers.get(group, {})
            sides = []
            for row in matching(stored.rows(document, group), claim["rows"]):
                by, side = stored.number(rows[row].get(claim["by"])), stored.side(document, group, row, claim["measure"])
                if by is not None and side is not None:
                    sides.append((by, side))
            if len(sides) < 2:
                raise ClaimError(f"group {group!r}: fewer than two rows {claim['rows']} with {claim['by']} and {claim['measure']}")
            line = self._ordered(sides, claim, f"monotone {claim['measure']} by {claim['by']} in {group}", document)
            if len(claim.get("groups") or numbers) > 1:
                line.text = f"{group}: " + line.text
            lines.append(line)
        return Verdict(lines)

    def _figure_sides(self, claim: Mapping, figure: Mapping) -> dict[str, list[tuple[float, stored.Side]]]:
        numbers, per_query = figure.get("numbers") or {}, figure.get("per_query") or {}
        out = {}
        for label in matching(list(numbers), claim["label"]):
            series = (numbers[label] or {}).get(claim["measure"]) or {}
            by_x = (per_query.get(label) or {}).get(claim["measure"]) or {}
            out[label] = [(float(x), stored.Side(f"{x}", label, float(value), by_x.get(x))) for x, value in series.items()]
        if not any(out.values()):
            raise ClaimError(f"{claim['figure']}: no {claim['measure']} for {claim['label']!r} (labels: {', '.join(numbers)})")
        return out

    def monotone_figure(self, claim: Mapping, figure: Mapping) -> Verdict:
        lines = []
        for label, sides in self._figure_sides(claim, figure).items():
            line = self._ordered(sides, claim, f"{claim['figure']}: {label} {claim['measure']} monotone")
            line.text = f"{label}, " + line.text.replace(f" by {claim.get('by', 'x')}: ", f" by {claim.get('by', 'x')} = ")
            lines.append(line)
        return Verdict(lines)

    def flat_after(self, claim: Mapping, figure: Mapping) -> Verdict:
        lines, after = [], float(claim["after"])
        for label, sides in self._figure_sides(claim, figure).items():
            start = next((s for x, s in sides if x == after), None)
            later = sorted((x, s) for x, s in sides if x > after)
            if start is None or not later:  # a smaller profile's sweep: not this claim's range
                continue
            values = ", ".join(f"{s.row} {fmt(s.value)}" for _, s in [(after, start)] + later)
            line = Line(f"{label}, {claim['measure']} from x = {start.row}: {values}")
            tests = [self.test(f"{claim['figure']}: {label} {claim['measure']} at {s.row} vs {start.row}, flat", s, start, "near",
                               float(claim["margin"])) for _, s in later]
            if any(t is None for t in tests):
                no_values(line)
            else:
                line.tests, line.decide = tests, every
                line.notes.insert(0, "each later x against x = " + start.row)
            lines.append(line)
        if not lines:
            return Verdict(word="not run", text=f"{claim['figure']} has no x = {claim['after']} with x after it in this run")
        return Verdict(lines)

    def best_at(self, claim: Mapping, figure: Mapping) -> Verdict:
        lines = []
        for label, sides in self._figure_sides(claim, figure).items():
            best = next((s for x, s in sides if x == float(claim["at"])), None)
            if best is None:  # a smaller profile's sweep
                continue
            others = sorted((x, s) for x, s in sides if s is not best)
            line = Line(f"{label}, {claim['measure']}: best claimed at x = {best.row} ({fmt(best.value)}); "
                        + ", ".join(f"{s.row} {fmt(s.value)}" for _, s in others))
            tests = [self.test(f"{claim['figure']}: {label} {claim['measure']} at {s.row} vs {best.row}, best", s, best, "below", None)
                     for _, s in others]
            if any(t is None for t in tests):
                no_values(line)
            else:
                line.tests, line.decide = tests, every
                line.notes.insert(0, f"each other x against x = {best.row}")
            lines.append(line)
        if not lines:
            return Verdict(word="not run", text=f"{claim['figure']} has no x = {claim['at']} in this run")
        return Verdict(lines)

    def equal(self, claim: Mapping, document: Mapping) -> Verdict:
        lines = []
        numbers = document.get("numbers") or {}
        margin = float(claim["margin"])
        for group in claim.get("groups") or stored.groups(document):
            sides = [s for row in matching(stored.rows(document, group), claim["rows"])
                     if (s := stored.side(document, group, row, claim["measure"])) is not None]
            if len(sides) < 2:
                continue
            line = Line(f"{claim['measure']}" + (f" ({group})" if len(numbers) > 1 else "") + ": "
                        + ", ".join(f"{s.row} {fmt(s.value)}" for s in sides), rows=", ".join(s.row for s in sides),
                        untrained=untrained_rows((document, s) for s in sides))
            if "rests_on" in claim:
                spread = max(s.value for s in sides) - min(s.value for s in sides)
                within_margin = spread <= margin
                line.word = (v.REPRODUCED if within_margin else v.CONTRADICTED) if claim["expect"] == "equal" else (
                    v.CONTRADICTED if within_margin else v.REPRODUCED)
                line.notes.append(f"range {spread:.4f}, margin {margin:g}; rests on {claim['rests_on']}")
                lines.append(line)
                continue
            tests = []
            for i, a in enumerate(sides):
                for b in sides[i + 1:]:
                    test = self.test(f"{claim['measure']} in {group}: {a.row} vs {b.row}, {claim['expect']}", a, b, "near", margin,
                                     judged=line.untrained is None)
                    if test is None:
                        break
                    tests.append(test)
            if len(tests) < len(sides) * (len(sides) - 1) // 2:
                no_values(line)
                lines.append(line)
                continue
            line.tests = tests
            line.notes.insert(0, f"every pair, TOST margin ±{margin:g}" + ("" if claim["expect"] == "equal" else
                                                                           " (some pair significantly beyond it: they differ)"))

            def decide(all_tests: list[v.Test], expect: str = claim["expect"]) -> str:
                word = v.combine([t.word for t in all_tests])
                if expect == "equal":
                    return word
                beyond = deciding_pair(all_tests).word == v.CONTRADICTED  # some pair beyond the margin: they differ
                return v.REPRODUCED if beyond else v.CONTRADICTED if word == v.REPRODUCED else v.INCONCLUSIVE
            line.decide, line.pairwise = decide, True
            lines.append(line)
        if not lines:
            return Verdict(word="not run", text=f"fewer than two rows {claim['rows']} with {claim['measure']} in this run")
        return Verdict(lines)

    def value(self, claim: Mapping, document: Mapping) -> Verdict:
        value = stored.number(((document.get("numbers") or {}).get(claim["group"]) or {}).get(claim["row"], {}).get(claim["measure"]))
        if value is None:
            raise ClaimError(f"no {claim['measure']} for {claim['group']} / {claim['row']}")
        tolerance = claim.get("tolerance", 0.0005)
        line = Line(f"{claim['row']} {claim['measure']} {fmt(value)} (published {claim['equals']}, tolerance {tolerance:g})")
        line.word = v.REPRODUCED if within(value, claim["equals"], tolerance) else v.CONTRADICTED
        line.notes.append("rests on one deterministic value (no model)")
        return Verdict([line])


def spread_of(judge: Judge, spread: Mapping | None) -> dict[str, float] | None:
    """The seed reruns' range per measure (max - min over the rows matching `spread.rows` in its table's first group)."""
    if spread is None:
        return None
    document = judge.document(spread["table"])
    if document is None:
        return None
    numbers = document.get("numbers") or {}
    group = next(iter(numbers), None)
    rows = matching(list(numbers.get(group, {})), spread["rows"]) if group else []
    out = {}
    for measure in (document.get("layout") or {}).get("measures", []):
        values = [x for row in rows if (x := stored.number(numbers[group][row].get(measure))) is not None]
        if len(values) >= 2:
            out[measure] = max(values) - min(values)
    return out


def check(claim: Mapping, entry: Mapping, run_dir: Path, source_numbers: Mapping | None = None) -> Verdict:
    """One claim judged alone (its tests corrected among themselves only): for tests and a quick look."""
    judge = Judge(run_dir, source_numbers)
    verdict = judge.check(claim, entry)
    judge.finish()
    return verdict


def judge_all(seeds: Mapping, run_dir: Path) -> tuple[list[list[list[Verdict]]], Judge]:
    """Every claim's verdict, per work and table, with one correction over all their tests."""
    judge = Judge(run_dir, seeds.get("source_numbers"))
    out = []
    for work in seeds["works"]:
        spread = spread_of(judge, work.get("spread"))
        out.append([[judge.check(claim, entry, spread) for claim in entry.get("claims") or []] for entry in work["tables"]])
    judge.finish()
    return out, judge
