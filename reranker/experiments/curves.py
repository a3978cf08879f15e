"""Loss-curve figures of a paper's fine-tuned checkpoints, for the papers that draw them (Radboud, NTNU): each curve a
checkpoint's held-out loss against its label prior (`tables figure curves`). A mixin beside Plugin: the figures its
`curves` names are among its `figure_jobs`, which the suite's figure rule (workflow/rules/tables.smk) draws."""

from __future__ import annotations

import shlex

from reranker.core.config import training_config
from reranker.experiments.base import FigureJob


class LossCurves:
    """For a Plugin subclass (it reads the plugin's `exp`, `config` and `layout`): `class NTNU(LossCurves, Plugin, ...)`."""

    def curves(self) -> dict[str, list[tuple[str, str]]]:
        """Loss-curve figures of its fine-tuned checkpoints not drawn elsewhere: figure name -> [(curve label,
        checkpoint)], each curve the checkpoint's held-out loss against its label prior (`tables figure curves`)."""
        return {}

    def figure_jobs(self) -> dict[str, FigureJob]:
        return {figure: FigureJob(f"figure_{figure}", [self.layout.path("checkpoint_meta", checkpoint=c) for _, c in curves],
                                  self.curve_args(figure), self.curve_caption(figure))
                for figure, curves in self.curves().items()}

    def curve_args(self, figure: str) -> str:
        """`tables figure curves` arguments of one of its curve figures."""
        checkpoints = [f"{label}:{self.layout.path('checkpoint_dir', checkpoint=name)}" for label, name in self.curves()[figure]]
        return " ".join(["curves"] + [f"--checkpoint {shlex.quote(c)}" for c in checkpoints] + ["--what", "validation"])

    def curve_caption(self, figure: str) -> str:
        """What a curve figure shows and what each of its checkpoints trained on, and for how long."""
        curves = self.curves()[figure]
        labels = "; ".join(dict.fromkeys(label for label, _ in curves)) if len(curves) < 3 else f"{len(curves)} checkpoints"
        trained = []
        for name in dict.fromkeys(self.exp.checkpoint(c)["label"] for _, c in curves):
            first = next(c for _, c in curves if self.exp.checkpoint(c)["label"] == name)
            t = training_config(self.config, first)
            cap = "every pair" if t["max_pairs"] is None else f"at most {t['max_pairs']} pairs"
            epochs = f"{t['epochs']:g} epoch{'s' if t['epochs'] != 1 else ''}"
            count = sum(1 for _, c in curves if self.exp.checkpoint(c)["label"] == name)
            like = f"{count} checkpoints like " if count > 1 else ""
            trained.append(f"{name}: {like}{self.exp.lineage(first)}, {cap} per source, {epochs}, batch {t['batch_size']},"
                           f" lr {t['learning_rate']:g}, the {'best held-out' if t['select'] == 'best' else 'last'} step kept")
        return (f"Held-out loss against training step ({labels}), each against its label prior (dashed). "
                + "; ".join(trained) + ".")
