"""Query id order: numeric qids numerically, then the others as strings."""

from __future__ import annotations

from collections.abc import Iterable


def qid_key(qid: str) -> tuple[int, int | str]:
    """Numeric qids in numeric order, others after them in string order."""
    return (0, int(qid)) if qid.isdigit() else (1, qid)


def qid_order(qids: Iterable[str]) -> list[str]:
    return sorted(qids, key=qid_key)
