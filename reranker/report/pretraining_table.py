"""The pre-training table (`tables pretraining`): per pre-trained checkpoint, its held-out token accuracy (mlm)
or MRR (nsp) before and after pre-training, and its held-out loss (`write_pretraining`)."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from reranker.formats.table_spec import PRETRAINING_TABLE, Spec
from reranker.report.outputs import Outputs, add_notes_and_source, write_outputs
from reranker.report.results_table import checkpoints_record
from reranker.report.table import Table


def pretraining_table(checkpoints: Sequence[tuple[str, Mapping]], caption: str) -> Table:
    """Rows: pre-trained checkpoints (label and the checkpoint's reranker.json, read); cells: held-out token
    accuracy (mlm) or loss, before and after."""
    group, (before, after, loss) = PRETRAINING_TABLE
    table = Table(caption, [group], [before, after, loss], row_header="Pre-training", bold_best=False)
    for label, meta in checkpoints:
        v = meta.get("validation") or {}
        metric = "accuracy" if "accuracy" in v else "mrr"
        table.add(label, group, before, v.get(f"untrained_{metric}", math.nan))
        table.add(label, group, after, v.get(metric, math.nan))
        table.add(label, group, loss, v.get("loss", math.nan))
    return table


def write_pretraining(cells: Spec, outputs: Outputs, caption: str = "") -> list[Path]:
    """`tables pretraining`: the table of the spec's `checkpoints` records (label, reranker.json) and `note`s; the
    checkpoints' fingerprints in the numbers' provenance, as for fine-tuned ones (no notes); the paths written."""
    pretrained = [(record["label"], json.loads(Path(record["path"]).read_text())) for record in cells["checkpoints"]]
    table = pretraining_table(pretrained, caption)
    inputs = [record["path"] for record in cells["checkpoints"]]
    add_notes_and_source(table, outputs, cells.get("note", []), inputs)
    trained: dict[str, list[Mapping]] = {}
    for label, meta in pretrained:
        trained.setdefault(label, []).append(meta)
    return write_outputs(table, outputs, inputs, lambda: {"checkpoints": checkpoints_record(trained)} if trained else {})
