"""No number typed by hand can drift: every measured number in the README and the hand-written result
notes must be one the stored results hold (or one the sources print, transcribed once), and every
stored file they cite must exist.

Scanned: README.md, the hand-written results/*.md and results/ablation/*.md. The run READMEs
(results/README.md, results/quick/README.md) are generated from the stored numbers by `tables index`;
the last test makes them again and requires them unchanged.

Where a number may come from. The shared store is every number in results/**/*.json but
results/ablation/, and every cell of workflow/config/source_numbers.yaml. A measurement made outside a
stored run (a scratch run of an ablation, a past default a note compares with) is stored as
results/ablation/<note>.json with its command and commit; those numbers count for their own note
(results/ablation/<note>.md) and for any document that cites that JSON file by its path, nowhere
else, so that a past default's number cannot pass for today's.

What counts as a number, and how it is found: a number is found when a stored value of its kind
rounds to it at its printed precision (within half a unit of its last printed digit, a tie either way).
- a decimal as the tables print them: 0.dddd, and 0.ddd for losses and MRRs the notes round
  (p-values written so count too); any stored value may match;
- "N queries/min": any stored value;
- a job count, "N jobs" or "N Radboud|NTNU|Birch jobs": a stored value under a key that starts with
  "jobs" (`jobs`, `jobs_by_rule`);
- a duration in seconds, "N s", "N,NNN s" or "N.N s": a stored value under a key that names seconds
  (`seconds`, `wall_clock_seconds`, `time (s)`, `gpu_wall_s`, ...; not a rate such as `steps_per_second`);
- a duration in minutes with a decimal, "N.N min": a stored number of seconds divided by 60, or a
  value under a key that names minutes;
- a rate, "N pairs/s" or "N steps/s": a value under a key that names that rate (`pairs/s`,
  `pairs_per_second`, `steps_per_second`).
Not checked, on purpose: integers without one of those units (years, seeds, steps, pair counts,
line numbers of a source, settings such as "150 steps" or "lr 3e-5"), whole minutes ("a 40-minute
budget", "about 20 min": budgets and estimates), ranges ("170-230 s") and approximations ("about
10 s", "~200 steps"), ratios ("1.05x") and percentages.

Every cited stored file, `results/...json` (globs and brace lists allowed) or a run folder's
`numbers/<x>.json` (found in results/ or results/quick/), must exist in the checkout.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GENERATED = [ROOT / "results", ROOT / "results" / "quick"]  # run folders whose README.md `tables index` writes
ABLATION = ROOT / "results" / "ablation"
DOCUMENTS = [
    ROOT / "README.md",
    *sorted(p for p in (ROOT / "results").glob("*.md") if p.name != "README.md"),
    *sorted(ABLATION.glob("*.md")),
]

NUMBER = r"\d[\d,]*(?:\.\d+)?"
NOT_AFTER = r"(?<![\w.,\-–~])"  # not inside a longer number, a range (170-230) or an approximation (~200)
DECIMAL = re.compile(r"(?<![\w.])(0\.\d{3,4})(?![\d])")
SPEED = re.compile(r"(?<![\w.,])(\d[\d,]*)(?=\)? queries/min)")
UNITS = {  # kind -> pattern whose group 1 is the number
    "jobs": re.compile(NOT_AFTER + r"(\d[\d,]*) (?:(?:Radboud|NTNU|Birch) )?jobs\b"),
    "s": re.compile(NOT_AFTER + rf"({NUMBER}) s\b"),
    "min": re.compile(NOT_AFTER + r"(\d[\d,]*\.\d+) min\b"),
    "pairs/s": re.compile(NOT_AFTER + rf"({NUMBER}) pairs/s\b"),
    "steps/s": re.compile(NOT_AFTER + rf"({NUMBER}) steps/s\b"),
}
APPROXIMATE = re.compile(r"(?:about|around|nearly|almost|≈|~)\s*$")
KEYS = {  # kind -> a key on the value's path that makes it that kind (and one that rules it out)
    "jobs": (re.compile(r"^jobs"), None),
    "s": (re.compile(r"seconds|\(s\)$|(?:^|_)s(?:_|$)"), re.compile(r"per_second|seconds_per|per_s(?:_|$)")),
    "min": (re.compile(r"minutes"), None),
    "pairs/s": (re.compile(r"pairs/s|pairs_per_second"), None),
    "steps/s": (re.compile(r"steps/s|steps_per_second"), None),
}
CITED = re.compile(r"(?<![\w./-])(results/[\w./*{},-]*\.json|numbers/[\w.*{},-]+\.json)")
CITED_RECORD = re.compile(r"(?<![\w./-])results/ablation/([\w.-]+)\.json")


@dataclass
class Stored:
    """Stored numbers: all of them (`values`), and by kind, those under a key that says what they are."""

    values: set[float] = field(default_factory=set)
    kinds: dict[str, set[float]] = field(default_factory=lambda: {kind: set() for kind in UNITS})
    _rounded: dict = field(default_factory=dict, repr=False)

    def add(self, path: tuple[str, ...], value: float) -> None:
        self.values.add(value)
        for kind, (key, excluded) in KEYS.items():
            if any(key.search(part) for part in path) and not (excluded and any(excluded.search(part) for part in path)):
                self.kinds[kind].add(value)
                if kind == "s":
                    self.kinds["min"].add(value / 60)

    def holds(self, kind: str | None, number: str) -> bool:
        """Whether a stored value of `kind` (None: any) rounds to `number`, a tie rounding either way."""
        number = number.replace(",", "")
        places = len(number.split(".")[1]) if "." in number else 0
        key = (kind, places)
        if key not in self._rounded:
            values = self.values if kind is None else self.kinds[kind]
            self._rounded[key] = {round(v, places) for v in values} | {round(v + abs(v) * 1e-12 + 1e-12, places) for v in values}
        return round(float(number), places) in self._rounded[key]

    def merged(self, other: Stored) -> Stored:
        both = Stored(self.values | other.values)
        both.kinds = {kind: self.kinds[kind] | other.kinds[kind] for kind in UNITS}
        return both


def _leaves(value, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], float]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, (*path, str(key)))
    elif isinstance(value, list):
        for item in value:
            yield from _leaves(item, path)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield path, float(value)


def load(paths: Iterable[Path]) -> Stored:
    """Every number of the files but their per-query values: thousands of 0/1s and fractions that would let almost
    any decimal pass, and that no prose quotes."""
    stored = Stored()
    for path in paths:
        document = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(document, dict):
            document = {k: val for k, val in document.items() if k != "per_query"}
        for key, value in _leaves(document):
            stored.add(key, value)
    return stored


def stored_values() -> Stored:
    """The shared store: results/**/*.json but the ablation records, and the sources' cells."""
    stored = load(p for p in (ROOT / "results").rglob("*.json") if ABLATION not in p.parents)
    sources = yaml.safe_load((ROOT / "workflow" / "config" / "source_numbers.yaml").read_text(encoding="utf-8"))
    for table in sources["tables"].values():
        for cell in table["cells"]:
            stored.add(("source",), float(cell["value"]))
    return stored


def records_for(document: Path, text: str) -> list[Path]:
    """The ablation records whose numbers count for `document`: its own, and every one it cites by path."""
    records = {ABLATION / f"{name}.json" for name in CITED_RECORD.findall(text)}
    if document.parent == ABLATION:
        records.add(document.with_suffix(".json"))
    return sorted(p for p in records if p.exists())


def _line(text: str, position: int) -> int:
    return text.count("\n", 0, position) + 1


def unmatched(text: str, stored: Stored) -> list[tuple[str, int]]:
    """(number, line) of every checked number in `text` that no stored value of its kind rounds to."""
    missing = []
    for match in DECIMAL.finditer(text):
        if not stored.holds(None, match.group(1)):
            missing.append((match.group(1), _line(text, match.start())))
    for match in SPEED.finditer(text):
        if not stored.holds(None, match.group(1)):
            missing.append((match.group(1) + " queries/min", _line(text, match.start())))
    for kind, pattern in UNITS.items():
        for match in pattern.finditer(text):
            if APPROXIMATE.search(text[max(0, match.start() - 12) : match.start()]):
                continue
            if not stored.holds(kind, match.group(1)):
                missing.append((match.group(0), _line(text, match.start())))
    return sorted(missing, key=lambda item: item[1])


def _expand(pattern: str) -> list[str]:
    brace = re.search(r"\{([^{}]*)\}", pattern)
    if not brace:
        return [pattern]
    return [p for option in brace.group(1).split(",") for p in _expand(pattern[: brace.start()] + option + pattern[brace.end() :])]


def _exists(path: str) -> bool:
    if "*" in path:
        return any(ROOT.glob(path))
    return (ROOT / path).is_file()


def missing_files(text: str) -> list[tuple[str, int]]:
    """(path, line) of every stored file `text` cites that the checkout does not hold."""
    missing = []
    for match in CITED.finditer(text):
        for path in _expand(match.group(1)):
            candidates = [path] if path.startswith("results/") else [f"results/{path}", f"results/quick/{path}"]
            if not any(_exists(candidate) for candidate in candidates):
                missing.append((path, _line(text, match.start())))
    return missing


@pytest.fixture(scope="module")
def shared() -> Stored:
    return stored_values()


def _problems(text: str, document: Path, shared: Stored) -> list[str]:
    stored = shared.merged(load(records_for(document, text)))
    return [f"{number} (line {line})" for number, line in unmatched(text, stored)] + [
        f"{path} (line {line}): no such file" for path, line in missing_files(text)
    ]


@pytest.mark.parametrize("document", DOCUMENTS, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_number_in_the_prose_is_a_stored_one(document, shared):
    problems = _problems(document.read_text(encoding="utf-8"), document, shared)
    assert not problems, f"{document.relative_to(ROOT)}: numbers no stored result holds, or files that are not there: " + ", ".join(
        problems
    )


def test_the_check_fails_on_a_drifted_number(shared):
    """The README once said the titles checkpoint's 1S row scored 0.3252 on Cranfield where the table held 0.3217.
    That number is now held by another stored value, so the drifted number is one that none rounds to."""
    stored = {round(v, 4) for v in shared.values}
    drifted = next(f"0.{n:04d}" for n in range(3252, 10000) if round(n / 10000, 4) not in stored)
    assert unmatched(f"Cranfield {drifted}, in 98,765 queries/min", shared) == [(drifted, 1), ("98,765 queries/min", 1)]
    assert unmatched("BM25+RM3 AP 0.3131", shared) == []


# Sentences of the notes as they stood at 01d17e6 (issue 58): each quotes a number that had drifted.
STALE = {
    "README.md": "The Radboud part's 279 jobs took 22,547 s of job time in the default's `make run`",
    "results/radboud.md": "`score · cranfield` (109 jobs, 105 of them Radboud's) took 6,434 s,\n  at 107.0 pairs/s.",
    "results/ablation/ntnu_ceiling.md": (
        "the stored default's\n  rerankers reach 0.6381 (MaxP) and 0.6259 (MeanP) (`results/tables/ntnu_5_1.md`), below BM25."
    ),
    "results/ablation/shared_start.md": "about 20 min in the clean Birch run\n(`results/numbers/birch_time.json`)",
}


def test_the_check_fails_on_the_stale_numbers_of_issue_58(shared):
    problems = {name: _problems(text, ROOT / name, shared) for name, text in STALE.items()}
    assert problems == {
        "README.md": ["279 jobs (line 1)", "22,547 s (line 1)"],
        "results/radboud.md": ["6,434 s (line 1)", "107.0 pairs/s (line 2)"],
        "results/ablation/ntnu_ceiling.md": ["0.6381 (line 2)", "0.6259 (line 2)"],
        "results/ablation/shared_start.md": ["results/numbers/birch_time.json (line 2): no such file"],
    }


def test_the_kinds_are_kept_apart(shared):
    """A job count is not found among seconds, nor a past default's number outside the note that records it."""
    assert unmatched("284 Radboud jobs, 22,449 s, 7,861 s, 325.3 min, 107.4 pairs/s", shared) == []
    assert unmatched("22,449 jobs", shared) == [("22,449 jobs", 1)]
    assert unmatched("MaxP 0.6381", shared) == [("0.6381", 1)]  # the default of 3b2929a, recorded beside ntnu_positives.md
    cited = "MaxP 0.6381 (`results/ablation/ntnu_positives.json`)"
    assert records_for(ROOT / "README.md", cited) == [ABLATION / "ntnu_positives.json"]
    assert unmatched(cited, shared.merged(load(records_for(ROOT / "README.md", cited)))) == []
    assert unmatched("about 10 s, 170-230 s, a 40-minute budget, 150 steps, line 279", shared) == []
    assert missing_files("`results/numbers/radboud_*.json`, `numbers/run.json`, `results/tables/x.{md,csv}`") == []
    assert missing_files("`results/numbers/{run,nothing}.json`") == [("results/numbers/nothing.json", 1)]


@pytest.mark.parametrize("run_dir", GENERATED, ids=lambda p: str(p.relative_to(ROOT)))
def test_the_run_readmes_are_what_the_index_makes_of_the_stored_numbers(run_dir, tmp_path):
    from reranker.seed_index import index
    from reranker.seeds import load_seeds

    stored = (run_dir / "README.md").read_text(encoding="utf-8")
    command = re.search(r"Made by `([^`]+)`", stored).group(1)
    made = index(load_seeds(ROOT / "workflow" / "config" / "seed_tables.yaml"), run_dir, command)
    assert made == stored, f"{run_dir.relative_to(ROOT)}/README.md is not what `tables index` makes of its numbers: rerun it"
