"""A sentence splitter's time kept linear on very long texts: the text is cut into windows of at most
`bound` characters, each split on its own, and the windows are stitched at the splitter's own sentence
boundaries.

pysbd is quadratic in a text's length (its abbreviation pass rewrites the whole text once per
abbreviation it meets: 20k words take ~6 s, a 1M-word document hours). Each window is split, and
only its sentences that end at least `bound // 10` characters before the window's end are kept (never
the last one, which the window may have cut): every kept boundary was decided with at least that much
text after it, as in the whole text. The next window starts where the kept sentences end. A window
with a single sentence (no boundary in `bound` characters) is kept whole: it is cut at its last
space, or inside a word with none. A text of at most `bound` characters is split in one go, so
documents under the bound are split exactly as before.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, NamedTuple


class Cut(NamedTuple):
    start: int
    end: int


Spans = Callable[[str], list[Any]]  # text -> spans with .start and .end offsets into it (pysbd's TextSpan)


def stitched(spans: Spans, text: str, bound: int, progress: Callable[[int], object] | None = None) -> Iterator[str]:
    """The pieces of `text` (each a sentence with its trailing space, as pysbd gives them), split window
    by window; `progress` gets the characters each window consumed."""
    if bound < 10:
        raise ValueError(f"bound must be at least 10 characters, not {bound}")
    margin, start = bound // 10, 0
    while len(text) - start > bound:
        end = text.rfind(" ", start + 1, start + bound + 1)
        if end < 0:
            end = start + bound
        found = spans(text[start:end])
        kept = found[:1] if len(found) > 1 else []
        for span in found[1:-1]:
            if span.end > end - start - margin:
                break
            kept.append(span)
        if not (kept and kept[-1].end > 0):
            kept = [Cut(0, end - start)]
        stop = start + kept[-1].end
        while stop < len(text) and text[stop].isspace():  # the next window starts at a word
            stop += 1
        yield from (text[start + s.start:start + s.end] for s in kept[:-1])
        yield text[start + kept[-1].start:stop]
        if progress is not None:
            progress(stop - start)
        start = stop
    if start < len(text):
        yield from (text[start + s.start:start + s.end] for s in spans(text[start:]))
        if progress is not None:
            progress(len(text) - start)
