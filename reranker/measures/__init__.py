"""Named measures: a source's own measure under a name, defined on ir_measures (one module each).

`evaluate` and the tables accept a registered name wherever an ir_measures name goes (AP@1000,
nDCG@20, ...); the name resolves to the ir_measures expression its module registers, so the value is
ir_measures' (trec_eval's, through pytrec_eval), never a hand-written formula.
"""

from __future__ import annotations

from reranker.measures import radboud  # noqa: F401 (registers its measure)
from reranker.measures.base import MEASURES, NamedMeasure, register  # noqa: F401 (the package's names)


def expression(name: str) -> str:
    """The ir_measures expression of `name`: a registered measure's, else the name itself."""
    return MEASURES[name].expression if name in MEASURES else name


def label(name: str) -> str | None:
    return MEASURES[name].label if name in MEASURES else None


def is_measure(name: str) -> bool:
    """Whether `name` is a measure: registered here, or an expression ir_measures parses (AP@1000, nDCG@20, RR@10)."""
    if name in MEASURES:
        return True
    import ir_measures  # here: only a check of a name needs it

    try:
        ir_measures.parse_measure(name)
    except (ValueError, NameError, SyntaxError, TypeError, AttributeError):
        return False
    return True
