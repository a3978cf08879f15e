"""Identifiers (query and document ids): the one rule every reader applies, and their order.

The rule: an id is a non-empty run of visible, non-whitespace characters, taken as written and compared
exactly: `001` and `1`, `Q1` and `q1` are different ids, and no reader rewrites one. Whitespace (any Unicode
space) separates the fields of a line and is never part of an id.

* A UTF-8 byte-order mark at the very start of a file (what Windows editors and "CSV UTF-8" exports
  write) is the file's encoding mark, not text: every reader drops it, as the `utf-8-sig` codec does.
* Anywhere else, a byte-order mark or another invisible format character (zero-width space, joiner,
  direction marks: Unicode's Cf) inside an id is refused, naming the file and line (`check_id`): two
  files joined with `cat` put a mark at the start of the second one's first line.
* Where two files must share ids (a run and its qrels), an id of one that matches an id of the other only
  after normalising (`id_key`: whitespace and invisible characters removed, Unicode normalised (NFKC), case folded,
  leading zeros of numbers dropped) is refused with both spellings (`refuse_near_misses`): it is one query written two
  ways, and taking it for two would drop it from the evaluation without a word.
"""

from __future__ import annotations

import os
import re
import unicodedata
from collections.abc import Collection, Iterable

from reranker.formats.errors import FormatError

BOM = "\ufeff"
_DIGITS = re.compile(r"\d+")
_ASCII_UNSEEN = re.compile(r"[\x00-\x20\x7f]")


def qid_key(qid: str) -> tuple[int, int | str]:
    """Numeric qids in numeric order, others after them in string order."""
    return (0, int(qid)) if qid.isdigit() else (1, qid)


def qid_order(qids: Iterable[str]) -> list[str]:
    return sorted(qids, key=qid_key)


def _unseen(ch: str) -> bool:
    return ch.isspace() or unicodedata.category(ch) in {"Cf", "Cc"}


def invisible(value: str) -> str | None:
    """The first whitespace, control or invisible format character in `value`, or None."""
    if value.isascii():  # the common case, at C speed: a reader checks every line's ids
        found = _ASCII_UNSEEN.search(value)
        return found.group() if found else None
    return next((ch for ch in value if _unseen(ch)), None)


def check_id(value: str, path: str | os.PathLike, line_no: int | None, what: str = "query id") -> str:
    """`value` when it follows the rule; a FormatError naming the file, line and character otherwise."""
    if not value:
        raise FormatError(path, line_no, f"empty {what}")
    ch = invisible(value)
    if ch is not None:
        name = "a byte-order mark (files joined?)" if ch == BOM else unicodedata.name(ch, f"U+{ord(ch):04X}").lower()
        kind = "whitespace" if ch.isspace() else "an invisible character"
        raise FormatError(path, line_no, f"{what} {value!r} holds {kind}, {name}: remove it")
    return value


def id_key(value: str) -> str:
    """What two spellings of one id share: no whitespace or invisible characters, one Unicode form (NFKC), case
    folded, numbers without leading zeros. Only for finding near misses: ids are always compared exactly."""
    if value.isascii():
        kept = _ASCII_UNSEEN.sub("", value).lower()
    else:  # composed or decomposed accents (NFC/NFD), compatibility forms: one key
        kept = unicodedata.normalize("NFKC", "".join(ch for ch in value if not _unseen(ch))).casefold()
    return _DIGITS.sub(lambda m: m.group().lstrip("0") or "0", kept)


def near_misses(ours: Iterable[str], theirs: Collection[str]) -> list[tuple[str, str]]:
    """(our id, their id) for each id of ours that is not among theirs but matches one of theirs after `id_key`."""
    ours = set(ours)
    by_key = {id_key(t): t for t in theirs if t not in ours}
    pairs = [(q, by_key[id_key(q)]) for q in ours if q not in theirs and id_key(q) in by_key]
    return sorted(pairs, key=lambda pair: qid_key(pair[0]))


def refuse_near_misses(ours: Iterable[str], theirs: Collection[str], our_path: str | os.PathLike,
                       their_path: str | os.PathLike, what: str = "query id") -> None:
    """A FormatError when ids of `our_path` match ids of `their_path` only after normalising (see the rule)."""
    pairs = near_misses(ours, theirs)
    if pairs:
        ours_id, theirs_id = pairs[0]
        raise FormatError(our_path, None, f"{len(pairs)} {what}s match those of {their_path} only when written alike "
                                          f"(e.g. {ours_id!r} here, {theirs_id!r} there): leading zeros, case, spaces "
                                          f"or invisible characters differ; write them the same way in both files")
