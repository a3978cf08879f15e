"""loss.png: a checkpoint's training and held-out loss against the label prior."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np


def plot_loss(log: Sequence[Mapping[str, Any]], path: Path, title: str = "",
              validation: Sequence[Mapping[str, Any]] = ()) -> None:
    """Training loss per step (raw and moving average), held-out loss, and the label-prior line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array([entry["step"] for entry in log])
    loss = np.array([entry["loss"] for entry in log])
    window = max(1, min(50, len(loss) // 10))
    average = np.convolve(loss, np.ones(window) / window, mode="valid")
    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, loss, lw=0.8, alpha=0.3, label="training loss")
    ax.plot(steps[window - 1:], average, lw=1.8, label=f"training, moving average ({window} steps)")
    if validation:
        ax.plot([e["step"] for e in validation], [e["validation_loss"] for e in validation], "o-", lw=1.8,
                label="held-out loss")
        ax.axhline(validation[0]["prior_loss"], color="grey", ls="--", lw=1.2, label="label prior")
        best = min(validation, key=lambda e: e["validation_loss"])
        ax.annotate(f"best {best['validation_loss']:.3f} @ {best['step']}", (best["step"], best["validation_loss"]),
                    textcoords="offset points", xytext=(0, -14), ha="center", fontsize=8)
    ax.set_xlabel("step")
    ax.set_ylabel("cross-entropy")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
