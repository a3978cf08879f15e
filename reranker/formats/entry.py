"""How every stage's `main` runs: its outputs under one discipline before it reads anything (formats.outputs), and
an input error as one line and exit 2 (formats.errors.report), from Python as from `python -m reranker`."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable

from reranker.formats import outputs
from reranker.formats.errors import report


def exits_on_input_error(stage: str) -> Callable[[Callable[..., int]], Callable[..., int]]:
    """Decorate a stage's `main`: an input error prints one line and returns 2 (`report`), from Python as
    from `python -m reranker`; a bug keeps its traceback."""
    def decorate(main: Callable[..., int]) -> Callable[..., int]:
        @functools.wraps(main)
        def guarded(*args, **kwargs) -> int:
            argv = args[0] if args else kwargs.get("argv")
            try:
                # every stage's outputs under one discipline, before it reads anything (formats.outputs)
                with outputs.held(stage, list(sys.argv[1:] if argv is None else argv)):
                    return main(*args, **kwargs)
            except Exception as err:
                return report(stage, err)
        return guarded
    return decorate
