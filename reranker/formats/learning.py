"""Whether a fine-tuned checkpoint learned, read from its meta's held-out validation (reranker.stages.train).

One rule for the notes under a table (reranker.report.notes) and for the verdicts (reranker.reproduction.claims):
a checkpoint learned where its held-out loss ends more than `LEARNED_MARGIN` below the label prior's (less is
noise: 0.371 against 0.377 is not learning) and the step it kept is not its untrained start (step 0, which
best-step selection may keep: the row is then the start it was trained from, not the method).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

LEARNED_MARGIN = 0.05  # held-out loss this far below the label prior before a checkpoint counts as learned


def grouped_label(row: str, group: str) -> str:
    """The label of a checkpoint record for a row in a table's later group (Table 5.6's Distilled students share
    their rows' labels with the Train group's models): the row's label in the first group, this in the others."""
    return f"{row} ({group})"


def learned(validation: Mapping) -> bool:
    """Held-out loss more than LEARNED_MARGIN below the label prior."""
    return validation["loss"] < (1 - LEARNED_MARGIN) * validation["prior_loss"]


def not_trained(metas: Sequence[Mapping]) -> str | None:
    """Why checkpoints (one, or one per fold) are not a trained model, with their losses; None where every one learned
    and none kept step 0. A meta with no held-out validation says nothing either way."""
    checked = [m["validation"] for m in metas if m.get("validation")]
    start = [v for v in checked if v.get("selected_step") == 0]
    flat = [v for v in checked if not learned(v)]
    if not start and not flat:
        return None
    n = len(checked)

    def share(k: int) -> str:
        return f" on {k} of {n} folds" if n > 1 else ""
    loss = sum(v["loss"] for v in checked) / n
    prior = sum(v["prior_loss"] for v in checked) / n
    why = []
    if start:
        why.append("kept its untrained start (step 0)" + share(len(start)))
    above = [v for v in flat if v["loss"] >= v["prior_loss"]]  # worse than predicting the prior: said apart from near it
    if above:
        why.append("ended at or above its label prior" + share(len(above)))
    if len(flat) > len(above):
        why.append(f"ended less than {LEARNED_MARGIN:.0%} below its label prior" + share(len(flat) - len(above)))
    mean = " (means)" if n > 1 else ""
    return f"{' and '.join(why)}: held-out loss {loss:.3f}, label prior {prior:.3f}{mean}"
