"""Notes on fine-tuned checkpoints for the lines under a results table (`tables results --checkpoints`).

A checkpoint's meta (reranker.stages.train) holds its held-out loss and the label prior's; a note says how far
below the prior it got, and calls it learning only past a margin (`learned`), so that noise is not read
as an effect. The stored default's test (tests/test_claims.py) asks the same of every checkpoint.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from reranker.formats.learning import LEARNED_MARGIN, learned  # the one rule, shared with the verdicts

__all__ = ["LEARNED_MARGIN", "learned", "checkpoint_note", "folds_note"]


def checkpoint_note(label: str, meta: Mapping) -> str:
    """How far a fine-tuned checkpoint got below the label prior on its held-out queries."""
    v = meta.get("validation")
    sources = " + ".join(source["name"] for source in meta.get("sources", []))
    if not v:
        return f"{label}: trained on {sources}, {meta.get('steps')} steps, no held-out validation."
    gap = (v["prior_loss"] - v["loss"]) / v["prior_loss"]
    if learned(v):
        against = f"{gap:.0%} below it"
    elif gap > 0:
        against = f"{gap:.0%} below it, within the {LEARNED_MARGIN:.0%} margin: it did not learn"
    else:
        against = f"{-gap:.0%} above it: it did not learn"
    return (f"{label}: held-out loss {v['loss']:.3f} at step {v['selected_step']} of {meta.get('steps')} "
            f"({v['select']} on validation), label prior {v['prior_loss']:.3f} "
            f"({against}), "
            f"untrained head {v['untrained_loss']:.3f}; held-out MRR "
            f"{v.get('untrained_mrr', math.nan):.3f} -> {v.get('mrr', math.nan):.3f}; {v['pairs']} held-out pairs of {sources}'s training "
            f"queries; {meta.get('pairs')} training pairs, {meta.get('dtype', 'float32')}.")


def folds_note(label: str, metas: Sequence[Mapping]) -> str:
    """Checkpoints trained per fold: their mean held-out loss against the mean label prior."""
    checked = [m["validation"] for m in metas if m.get("validation")]
    steps = sorted({m.get("steps") for m in metas})
    if not checked:
        return f"{label}: {len(metas)} folds, {'/'.join(map(str, steps))} steps, no held-out validation."
    loss = sum(v["loss"] for v in checked) / len(checked)
    prior = sum(v["prior_loss"] for v in checked) / len(checked)
    below = sum(map(learned, checked))
    return (f"{label}: {len(metas)} folds, {'/'.join(map(str, steps))} steps; held-out loss {loss:.3f} (mean), "
            f"label prior {prior:.3f}; more than {LEARNED_MARGIN:.0%} below the prior (learned) on {below} of "
            f"{len(checked)} folds.")
