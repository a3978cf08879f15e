"""The captions of a run's figures: `figures/captions.json`, one JSON object from a figure's file name
(beside it in `figures/`) to its caption, sorted by name:

    {"ntnu_5_1.png": "Figure 5.1 (Steensland 2021): ...", "radboud_baseline_loss.png": "..."}

The report (`snakemake --report`, made by `make run` and not kept in git) shows each figure with the caption
of the rule that draws it; this file keeps those captions beside the stored figures, promoted with them.
Snakemake writes it from the rules' `figure_caption` params (workflow/rules/tables.smk), so a changed caption
rewrites it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping

from reranker.formats.atomic import write_json
from reranker.formats.errors import FormatError


def check(path: str | os.PathLike, captions: object) -> dict[str, str]:
    """`captions` if it maps figure file names (`*.png`, no folder) to non-empty captions, else a FormatError."""
    if not isinstance(captions, Mapping):
        raise FormatError(path, None, "expected one JSON object from figure file name to caption")
    for name, caption in captions.items():
        if not (isinstance(name, str) and name.endswith(".png") and os.path.basename(name) == name):
            raise FormatError(path, None, f"{name!r}: expected a figure's file name (NAME.png, no folder)")
        if not (isinstance(caption, str) and caption.strip()):
            raise FormatError(path, None, f"{name}: expected a non-empty caption")
    return dict(captions)


def write(path: str | os.PathLike, captions: Mapping[str, str]) -> None:
    write_json(path, check(path, captions), indent=1, sort_keys=True, ensure_ascii=False)


def read(path: str | os.PathLike) -> dict[str, str]:
    try:
        with open(path, encoding="utf-8") as f:
            return check(path, json.load(f))
    except json.JSONDecodeError as err:
        raise FormatError(path, err.lineno, f"not JSON: {err.msg}") from None
