"""Whether each source work's effect held: claims as data, checked against a run's stored numbers.

A seed file (workflow/config/seed_tables.yaml) lists, per work, each of its tables: our table, the
files that hold it, the effect the source reports and one or more claims. `index` checks every claim
against the run folder's `numbers/*.json` (values, and the significance marks the tables stored) and
writes the run's README: table by table, the file, the command and whether the effect held
(`main_index`, reached as `python -m reranker tables index`).

Claim kinds:
- `compare`: the best row matching `rows` (globs) against the row `than`, on `measure`, per group (a
  collection or a grid point); with `than_table`, against the best of `than`'s matches in that table.
  `expect: above|below` is the source's direction; `significant: true` also asks for the table's
  mark against `than`. Held in every group: yes; in some: partly; in none: no. `expect: none` (the
  source states no effect) reports what was observed.
- `observe`: the values of the rows matching `rows` (a summary row as mean ± sd).
- `value`: one number against the source's (`equals`, within `tolerance`).
- `monotone`: rows matching `rows`, ordered by the column `by`, against `measure` (`expect:
  increasing|decreasing`).
- `best`: per label matching `label`, the x with the best `measure` in a figure's numbers (`figure`,
  a JSON of {label: {measure: {x: value}}}).

Every claim names where the source states it (`cite`, required) and may quote it (`says`); the index
shows both beside the verdict. A compare claim may name the source's own cells (`source: {rows, than,
column, at, group}`, source_row labels of its table in workflow/config/source_numbers.yaml, next to
the seed file; `than` also in its `than_table`'s): the index then shows the reproduction measures ER
and ΔRI of our effect against the source's, per group (reranker.reproduction).

A claim that takes the best of several rows is judged with Holm's correction across those rows (per
group): with `significant: true`, from the raw p-values the numbers store (`significance.pvalues`),
never from the table's marks. Numbers stored without p-values leave its significance not judged: the
verdict is "not judged" unless the direction alone decides it (no where it failed in every group).
"""

from __future__ import annotations

import argparse
import dataclasses
import fnmatch
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from reranker.formats.atomic import write_text
from reranker.formats.errors import InputError, keys_checked
from reranker.reproduction import SourceNumbersError, check_ref, describe, load_source_numbers, source_pair
from reranker.significance import CORRECTIONS
from reranker.tolerance import within

DEFAULT_SEEDS = Path(__file__).resolve().parent.parent / "workflow" / "config" / "seed_tables.yaml"
KINDS = ("compare", "observe", "value", "monotone", "best")
EXPECT = {"compare": ("above", "below", "none"), "monotone": ("increasing", "decreasing")}
WORK_KEYS = {"title", "details", "tables", "note"}
TABLE_KEYS = {"source", "table", "files", "effect", "claims", "context"}
CLAIM_KEYS = {"kind", "measure", "rows", "than", "than_table", "expect", "significant", "groups", "group", "row",
              "equals", "tolerance", "by", "figure", "label", "cite", "says", "source"}
SOURCE_NUMBERS = "source_numbers.yaml"  # beside the seed file
ALPHA = 0.05  # the tables' default, where the numbers store none


class ClaimError(InputError):
    """A seed file or a run folder that cannot be checked: the message names the file and the entry."""


@dataclass(frozen=True)
class Verdict:
    word: str  # yes | partly | no | observed | not run | not judged | pending
    text: str
    reproduction: str = ""  # ER and ΔRI against the source's numbers, where the claim names them
    cite: str = ""  # where the source states the claim
    says: str = ""  # what it says there

    def render(self) -> str:
        bold = self.word in ("yes", "partly", "no")
        out = (f"**{self.word}**" if bold else self.word) + (f": {self.text}" if self.text else "")
        if self.reproduction:
            out += f"; {self.reproduction}"
        if self.cite:
            out += f" [{self.cite}" + (f": “{self.says.strip()}”" if self.says else "") + "]"
        return out


def load_seeds(path: str | Path, source_numbers: str | Path | None = None) -> dict:
    """The seed file, checked: every work, table and claim has the keys its kind needs, and no other, and every
    cell a claim's `source` names is in the source numbers (`source_numbers`, by default source_numbers.yaml
    beside the seed file). Where that file exists it is loaded (reranker.reproduction.load_source_numbers) and
    returned under the key `source_numbers`, for `index`."""
    path = Path(path)
    numbers_path = Path(source_numbers) if source_numbers is not None else path.parent / SOURCE_NUMBERS
    numbers = load_source_numbers(numbers_path) if source_numbers is not None or numbers_path.exists() else None
    try:
        seeds = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as err:
        raise ClaimError(f"{path}: {err}") from None
    if not isinstance(seeds, dict) or not isinstance(seeds.get("works"), list):
        raise ClaimError(f"{path}: expected a mapping with a list `works`")
    _keys(seeds, {"heading", "intro", "works", "outro"}, {"works"}, str(path))
    for i, work in enumerate(seeds["works"]):
        where = f"{path}: works[{i}]"
        _keys(work, WORK_KEYS, {"title", "tables"}, where)
        for j, entry in enumerate(work["tables"]):
            here = f"{where}.tables[{j}]"
            _keys(entry, TABLE_KEYS, {"source", "effect"}, here)
            for k, claim in enumerate(entry.get("claims") or []):
                _check_claim(claim, f"{here}.claims[{k}]", has_table="table" in entry)
                if "source" in claim:
                    _check_source(claim, entry, numbers, numbers_path, f"{here}.claims[{k}].source")
    if numbers is not None:
        seeds["source_numbers"] = numbers
    return seeds


def _source_tables(claim: Mapping, entry: Mapping) -> list[str]:
    """Where a claim's source cells are looked up: its table's, then (for `than`) its `than_table`'s."""
    return [entry["table"]] + ([claim["than_table"]] if claim.get("than_table") else [])


def _check_source(claim: Mapping, entry: Mapping, numbers: Mapping | None, numbers_path: Path, where: str) -> None:
    if numbers is None:
        raise ClaimError(f"{where}: names source cells, but {numbers_path} does not exist")
    try:
        check_ref(claim["source"], numbers, _source_tables(claim, entry))
    except SourceNumbersError as err:
        raise ClaimError(f"{where}: {str(err).removeprefix('source: ').removeprefix('source.')} (in {numbers_path})") from None


def _keys(entry: Any, allowed: set[str], required: set[str], where: str) -> None:
    keys_checked(entry, allowed, required, where, ClaimError)


def _check_claim(claim: Any, where: str, has_table: bool) -> None:
    needs = {"compare": {"measure", "rows", "than", "expect"}, "observe": {"rows", "measure"},
             "value": {"group", "row", "measure", "equals"},
             "monotone": {"rows", "by", "measure", "expect"}, "best": {"figure", "label", "measure"}}
    kind = claim.get("kind") if isinstance(claim, dict) else None
    if kind not in KINDS:
        raise ClaimError(f"{where}: kind {kind!r} is not one of {', '.join(KINDS)}")
    _keys(claim, CLAIM_KEYS, needs[kind] | {"kind", "cite"}, where)
    for key in ("cite", "says"):
        if key in claim and (not isinstance(claim[key], str) or not claim[key].strip()):
            raise ClaimError(f"{where}: {key} must be a non-empty string (where the source states the claim)")
    if "source" in claim and kind != "compare":
        raise ClaimError(f"{where}: `source` (the source's cells) is for compare claims only")
    if kind in EXPECT and claim["expect"] not in EXPECT[kind]:
        raise ClaimError(f"{where}: expect {claim['expect']!r} is not one of {', '.join(EXPECT[kind])}")
    if kind != "best" and not has_table:
        raise ClaimError(f"{where}: a {kind} claim needs the entry's `table`")


def read_numbers(run_dir: Path, table: str) -> dict | None:
    path = run_dir / "numbers" / f"{table}.json"
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise ClaimError(f"{path}: not JSON ({err})") from None


def _fmt(value: float) -> str:
    return f"{value:,.1f}" if abs(value) >= 100 else f"{value:.4f}"


def _match(names: Sequence[str], patterns: Sequence[str] | str) -> list[str]:
    patterns = [patterns] if isinstance(patterns, str) else list(patterns)
    return [n for n in names if any(fnmatch.fnmatchcase(n, p) for p in patterns)]


def _number(value: Any) -> float | None:
    if isinstance(value, dict):  # a summary row: its mean
        value = value.get("mean")
    return float(value) if isinstance(value, (int, float)) and not math.isnan(float(value)) else None


def _pvalue(pvalues: Mapping, group: str, row: str, measure: str, symbol: str) -> float | None:
    p = (((pvalues.get(group) or {}).get(row) or {}).get(measure) or {}).get(symbol)
    return float(p) if isinstance(p, (int, float)) and math.isfinite(p) else None


def _holm(pvalues: Mapping, group: str, rows: Sequence[str], measure: str, symbol: str) -> dict[str, float]:
    """Holm-adjusted p-values of `rows` against the reference `symbol` marks, over those of them that were tested."""
    raw = {row: p for row in rows if (p := _pvalue(pvalues, group, row, measure, symbol)) is not None}
    return dict(zip(raw, CORRECTIONS["holm"].adjust(list(raw.values()))))


def check_compare(claim: Mapping, document: Mapping, other: Mapping | None = None,
                  source: tuple[float, float] | None = None) -> Verdict:
    """The best row of `rows` against `than` (the best of `than`'s matches in `other`, where the claim names a
    `than_table`), per group. Where `rows` matches several rows, their significance is Holm-corrected over them
    (from the stored raw p-values). With `source` (the source's baseline and advanced values), the verdict
    carries ER and ΔRI of each group's effect against the source's."""
    numbers, significance = document["numbers"], document.get("significance") or {}
    references = significance.get("references") or {}
    pvalues, alpha = significance.get("pvalues"), significance.get("alpha", ALPHA)
    symbol = next((s for s, row in references.items() if row == claim["than"]), None) if other is None else None
    if claim.get("significant") and symbol is None:
        raise ClaimError(f"claim asks for significance against {claim['than']!r}, but the table tests against "
                         f"{', '.join(references.values()) or 'no row'}" + (" (and none across tables)" if other else ""))
    groups = claim.get("groups") or list(numbers)
    held, unjudged, parts, checked, ours = 0, 0, [], 0, {}
    for group in groups:
        rows = numbers.get(group, {})
        base_rows = (other or {}).get("numbers", {}).get(group, {}) if other is not None else rows
        bases = [(v, r) for r in _match(list(base_rows), claim["than"])
                 if (v := _number(base_rows[r].get(claim["measure"]))) is not None]
        candidates = [(v, r) for r in _match([r for r in rows if r != claim["than"]], claim["rows"])
                      if (v := _number(rows[r].get(claim["measure"]))) is not None]
        if not bases or not candidates:
            continue  # rows this run does not have (a smaller profile)
        checked += 1
        base, base_row = max(bases)
        ours[group] = (base, max(candidates)[0])
        where = f" on {group}" if len(groups) > 1 else ""
        # several rows: Holm over them, from the raw p-values; one row: the table's own mark
        several = len(candidates) > 1 and symbol is not None
        adjusted = _holm(pvalues, group, [r for _, r in candidates], claim["measure"], symbol) if several and pvalues is not None else None
        # a claimed effect: the best row; none claimed: every row, as observed
        shown = [max(candidates)] if claim["expect"] != "none" else candidates
        for value, row in shown:
            direction = value > base if claim["expect"] != "below" else value < base
            if adjusted is not None:
                tested = row in adjusted
                significant = tested and adjusted[row] < alpha
                sign = f" ({'significant' if significant else 'n.s.'}, Holm over {len(adjusted)} rows)" if tested else ""
            elif several and claim.get("significant"):  # stored before p-values were: the marks are uncorrected
                significant, sign = None, ", significance not judged (no p-values stored)"
            else:
                cell = significance.get("marks", {}).get(group, {}).get(row, {})
                tested = symbol is not None and claim["measure"] in cell
                significant = tested and symbol in (cell.get(claim["measure"]) or "")
                sign = f" ({'significant' if significant else 'n.s.'})" if tested else ""
            if significant is None:
                unjudged += direction  # held or not, as its significance would say
            else:
                held += direction and (significant or not claim.get("significant"))
            parts.append(f"{row} {_fmt(value)} vs {base_row} {_fmt(base)}{where}{sign}")
    if not checked:
        return Verdict("not run", f"no rows {claim['rows']} and {claim['than']} with {claim['measure']} in this run")
    if claim["expect"] == "none":
        word = "observed"
    else:
        # a group whose significance was not judged could go either way: a word only where both ways give it
        low, high = (("yes" if n == checked else "no" if n == 0 else "partly") for n in (held, held + unjudged))
        word = low if low == high else "not judged"
    reproduction = describe(source, ours, _fmt) if source is not None else ""
    return Verdict(word, f"{claim['measure']}: " + "; ".join(parts), reproduction)


def check_observe(claim: Mapping, document: Mapping) -> Verdict:
    parts = []
    groups = claim.get("groups") or list(document["numbers"])
    for group in groups:
        rows = document["numbers"].get(group, {})
        for row in _match(list(rows), claim["rows"]):
            value = rows[row].get(claim["measure"])
            if isinstance(value, dict) and value.get("sd") is not None:
                text = f"{_fmt(value['mean'])} ± {_fmt(value['sd'])}"
            elif (number := _number(value)) is not None:
                text = _fmt(number)
            else:
                continue
            parts.append(f"{row} {text}" + (f" ({group})" if len(groups) > 1 else ""))
    if not parts:
        return Verdict("not run", f"no rows {claim['rows']} with {claim['measure']} in this run")
    return Verdict("observed", f"{claim['measure']}: " + "; ".join(parts))


def check_value(claim: Mapping, document: Mapping) -> Verdict:
    value = _number(document["numbers"].get(claim["group"], {}).get(claim["row"], {}).get(claim["measure"]))
    if value is None:
        raise ClaimError(f"no {claim['measure']} for {claim['group']} / {claim['row']}")
    tolerance = claim.get("tolerance", 0.0005)
    word = "yes" if within(value, claim["equals"], tolerance) else "no"
    return Verdict(word, f"{claim['row']} {claim['measure']} {_fmt(value)} (published {claim['equals']})")


def check_monotone(claim: Mapping, document: Mapping) -> Verdict:
    word_parts, order_all = [], True
    for group, rows in document["numbers"].items():
        chosen = [(_number(rows[r].get(claim["by"])), _number(rows[r].get(claim["measure"])), r)
                  for r in _match(list(rows), claim["rows"])]
        chosen = sorted((b, v, r) for b, v, r in chosen if b is not None and v is not None)
        if len(chosen) < 2:
            raise ClaimError(f"group {group!r}: fewer than two rows {claim['rows']} with {claim['by']} and {claim['measure']}")
        values = [v for _, v, _ in chosen]
        steps = list(zip(values, values[1:]))
        ordered = all(b > a for a, b in steps) if claim["expect"] == "increasing" else all(b < a for a, b in steps)
        order_all &= ordered
        word_parts.append(", ".join(f"{_fmt(v)}" for v in values))
    word = "yes" if order_all else "no"
    return Verdict(word, f"{claim['measure']} by {claim['by']} ascending: " + "; ".join(word_parts))


def check_best(claim: Mapping, run_dir: Path) -> Verdict:
    path = run_dir / claim["figure"]
    if not path.exists():
        return Verdict("not run", f"{claim['figure']} is not in this run")
    numbers = json.loads(path.read_text(encoding="utf-8"))["numbers"]
    parts = []
    for label in _match(list(numbers), claim["label"]):
        series = numbers[label].get(claim["measure"]) or {}
        if series:
            x, value = max(series.items(), key=lambda item: item[1])
            parts.append(f"{label} best at {x} ({_fmt(value)})")
    if not parts:
        raise ClaimError(f"{path}: no {claim['measure']} for {claim['label']!r} (labels: {', '.join(numbers)})")
    xs = next(iter(numbers.values()))[claim["measure"]]
    return Verdict("observed", f"{claim['measure']} over {claim.get('by', 'x')} = {', '.join(xs)}: " + "; ".join(parts))


def check(claim: Mapping, entry: Mapping, run_dir: Path, source_numbers: Mapping | None = None) -> Verdict:
    """The claim's verdict on the run, with where the source states it; with `source_numbers` (the loaded
    source_numbers.yaml), a compare claim naming the source's cells also gets ER and ΔRI."""
    verdict = _check(claim, entry, run_dir, source_numbers)
    return dataclasses.replace(verdict, cite=claim.get("cite", ""), says=claim.get("says", ""))


def _check(claim: Mapping, entry: Mapping, run_dir: Path, source_numbers: Mapping | None) -> Verdict:
    if claim["kind"] == "best":
        return check_best(claim, run_dir)
    document = read_numbers(run_dir, entry["table"])
    if document is None:
        return Verdict("not run", f"numbers/{entry['table']}.json is not in this run")
    others = [read_numbers(run_dir, claim["than_table"])] if claim.get("than_table") else []
    pending = [cell for doc in [document, *others] if doc for cell in (doc.get("layout") or {}).get("pending", [])
               if cell[2] == claim.get("measure")]
    if pending:  # stored before a fix: not evidence either way
        why = next(doc["layout"].get("pending_why", "") for doc in [document, *others] if doc and doc.get("layout", {}).get("pending"))
        return Verdict("pending", f"{claim['measure']} of {len(pending)} cells is pending ({why})")
    source = None
    if claim.get("source") is not None:
        if source_numbers is None:
            raise ClaimError(f"the claim names source cells ({claim['source']}), but no source numbers were loaded")
        try:
            source = source_pair(claim["source"], source_numbers, _source_tables(claim, entry))
        except SourceNumbersError as err:
            raise ClaimError(f"source numbers: {err}") from None
    try:
        if claim["kind"] == "compare":
            other = others[0] if others else None
            if claim.get("than_table") and other is None:
                return Verdict("not run", f"numbers/{claim['than_table']}.json is not in this run")
            return check_compare(claim, document, other, source)
        return {"value": check_value, "monotone": check_monotone, "observe": check_observe}[claim["kind"]](claim, document)
    except ClaimError as err:
        raise ClaimError(f"numbers/{entry['table']}.json: {err}") from None


def files_of(entry: Mapping, run_dir: Path) -> str:
    """Our files for a seed table: the table's formats that exist in the run, then the listed extras."""
    names = []
    if entry.get("table"):
        formats = sorted(p.suffix.lstrip(".") for p in (run_dir / "tables").glob(f"{entry['table']}.*"))
        names.append(f"`tables/{entry['table']}.{{{','.join(formats)}}}`" if formats else f"`tables/{entry['table']}` (not in this run)")
    names += [f"`{name}`" for name in entry.get("files") or []]
    return ", ".join(names)


def index(seeds: Mapping, run_dir: Path, command: str = "") -> str:
    """The run's README: an index from every seed table to our files, its command and whether the effect held."""
    if not (run_dir / "numbers").is_dir():  # else every verdict would read "not run", written without a word
        raise ClaimError(f"{run_dir}: no numbers/ folder; name a run folder the workflow has written tables into")
    lines = [seeds.get("heading", "# What is stored here, table by table"), ""]
    if seeds.get("intro"):
        lines += [seeds["intro"].strip(), ""]
    if command:
        lines += [f"Made by `{command}` from this folder's `numbers/*.json`; the verdicts are checked by "
                  "`python -m reranker tables index` against the claims in `workflow/config/seed_tables.yaml`.", ""]
    for work in seeds["works"]:
        lines += [f"## {work['title']}", ""]
        if work.get("details"):
            lines += [work["details"].strip(), ""]
        lines += ["| source table | ours | effect in the source | held here? |", "|---|---|---|---|"]
        for entry in work["tables"]:
            verdicts = [check(claim, entry, run_dir, seeds.get("source_numbers")).render() for claim in entry.get("claims") or []]
            held = "<br>".join(verdicts) or "not checked"
            if entry.get("context"):
                held += f"<br>({entry['context'].strip()})"
            cells = [entry["source"], files_of(entry, run_dir), entry["effect"], held]
            lines.append("| " + " | ".join(c.replace("|", "\\|").replace("\n", " ") for c in cells) + " |")
        lines.append("")
        if work.get("note"):
            lines += [work["note"].strip(), ""]
    if seeds.get("outro"):
        lines += [seeds["outro"].strip(), ""]
    return "\n".join(lines)


def main_index(argv: list[str]) -> int:
    """The run's README: every seed table of the three works, our file, its command, and whether the effect held."""
    parser = argparse.ArgumentParser(prog="python -m reranker tables index", description=main_index.__doc__)
    parser.add_argument("--run-dir", required=True, help="the run folder: its numbers/, tables/ and figures/ are read")
    parser.add_argument("--seeds", required=True, help="the seed tables and their claims (workflow/config/seed_tables.yaml)")
    parser.add_argument("--out", required=True, help="the README to write (e.g. <run-dir>/README.md)")
    parser.add_argument("--command", default="", help="the command that made the run, named in the README")
    parser.add_argument("--sources", help="the sources' numbers (default: source_numbers.yaml beside --seeds)")
    args = parser.parse_args(argv)
    # a ClaimError is an input error: `tables` reports it in one line (its main's exits_on_input_error)
    text = index(load_seeds(args.seeds, args.sources), Path(args.run_dir), args.command)
    write_text(args.out, text)
    print(args.out)
    return 0
