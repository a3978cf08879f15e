"""Where a source states a claim, as data, against the grid points a run's tables hold; and whether a row's model
learned at all. A claim's `stated_at` is a grid point's values ({learning_rate: 2.0e-5, epochs: 1}; a key left out
is every value of it: {epochs: 2} is both learning rates) or {select: best}, each row at its own best grid point;
a table's groups name their grid point in words ("lr 3e-05, 1 epoch"), read here into the same keys.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping

from reranker.formats import numbers as stored
from reranker.formats.learning import grouped_label, not_trained

SETTING_KEYS = ("learning_rate", "epochs")
BEST = "best"


def group_setting(group: str) -> dict[str, float]:
    """The grid point a table's group names ("lr 3e-05, 1 epoch" -> learning_rate 3e-05, epochs 1); {} for a group
    that names none (a collection, "held-out")."""
    found: dict[str, float] = {}
    if m := re.search(r"\blr ([0-9.]+(?:e[-+]?\d+)?)\b", group):
        found["learning_rate"] = float(m.group(1))
    if m := re.search(r"\b(\d+) epochs?\b", group):
        found["epochs"] = int(m.group(1))
    return found


def at_setting(group: str, stated: Mapping) -> bool:
    """Whether the group is a grid point the claim's setting names (every key it gives, equal)."""
    have = group_setting(group)
    return all(key in have and math.isclose(have[key], float(stated[key]), rel_tol=1e-9)
               for key in SETTING_KEYS if key in stated)


def setting_text(stated: Mapping) -> str:
    if stated.get("select") == BEST:
        return "each row's best grid point"
    parts = [f"lr {float(stated['learning_rate']):g}"] if "learning_rate" in stated else []
    if "epochs" in stated:
        parts.append(f"{stated['epochs']} epoch{'s' if stated['epochs'] != 1 else ''}" + ("" if "learning_rate" in stated
                                                                                       else " (every learning rate)"))
    return ", ".join(parts)


def apart(document: Mapping, other: Mapping, names: tuple[str, str]) -> str | None:
    """Why rows of two tables' numbers are not one experiment, or None. Each part of a default retrains the shared
    start its rows begin from, and a start trained on another machine differs, so two tables made apart are
    compared only where the rows they both hold (the baseline every part trains again) are the same models, fold by
    fold (the provenance's checkpoint fingerprints). Tables that record no common row are not judged apart."""
    mine = (document.get("provenance") or {}).get("checkpoints") or {}
    theirs = (other.get("provenance") or {}).get("checkpoints") or {}

    def prints(recorded) -> list:
        return [meta.get("fingerprint") for meta in (recorded if isinstance(recorded, list) else [recorded])]

    for row in sorted(set(mine) & set(theirs)):
        a, b = prints(mine[row]), prints(theirs[row])
        if None not in a + b and a != b:
            return (f"{names[0]} and {names[1]} were made from different shared starts: their common row {row} is "
                    f"other models (fingerprints {a[0]}.. and {b[0]}..), so their rows differ in more than the claim")
    return None


def untrained(document: Mapping, side: stored.Side) -> str | None:
    """Why the row's checkpoints (the table's provenance: one, or one per fold) are not a trained model; None where
    they learned or the table records none. A later group's row has its own record where the table keeps one
    (`grouped_label`: Table 5.6's students); elsewhere the metas are the first grid point's, and other groups are
    not read. A machine-dependent measure (queries per minute) is the architecture's on this machine, the same
    whether the weights learned or not, so a row that did not learn is still judged on it."""
    if side.measure in document.get("machine_dependent", ()):
        return None
    records = (document.get("provenance") or {}).get("checkpoints") or {}
    groups = stored.groups(document)
    later = len(groups) > 1 and side.group != groups[0]
    recorded = records.get(grouped_label(side.row, side.group)) if later else records.get(side.row)
    if not recorded:
        return None
    why = not_trained(recorded if isinstance(recorded, list) else [recorded])
    return f"{side.label(later)} is not trained: it {why}" if why else None


def untrained_rows(rows: Iterable[tuple[Mapping, stored.Side]]) -> str | None:
    """Why any of the rows, each (its document, its side), did not learn ("; "-joined: every one that did not), or None:
    a line over several rows reads "not trained" if one did not."""
    return "; ".join(why for document, side in rows if (why := untrained(document, side))) or None
