"""Training objectives of a relevance classifier: what a pair's target is, its loss, and a ranking score.

A pair carries its judged grade (the collection's gain: `grades` in collections.yaml maps raw codes,
so Cranfield's complete answers are 4 and its -1 documents 0), as a grade level: unjudged documents
and any negative grade are level 0, so level = max(grade, 0). The objectives
(`registry.OBJECTIVES`):

* `binary`: two logits, cross-entropy on relevant (level >= the collection's relevant_min_grade) or not.
* `multi_label`: one logit per level, binary cross-entropy against the one-hot level (a sigmoid per
  level, optionally weighted per level: `class_weights`, as BCE's pos_weight).
* `multi_class_multi_label`: the same logits under two losses, softmax cross-entropy and the
  multi-label BCE, mixed by `loss_weights`.
* `regression`: one output, squared error against the level's value in `grade_values`.
* `distill`: a two-way head, squared error against a teacher's two logits per pair (Hinton et al.
  2015 on logits; Hofstaetter et al.'s Margin-MSE would need (positive, negative) pairs). The
  train stage puts the teacher's logits in as targets.

Only the train stage uses these; scores are read back by the score stage's rankings
(`registry.RANKINGS`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import torch

from reranker import registry
from reranker.formats.errors import InputError

OBJECTIVES = tuple(registry.OBJECTIVES)


def level(grade: int) -> int:
    """A grade's level: negative grades and unjudged documents are 0."""
    return max(int(grade), 0)


@dataclass(frozen=True)
class Objective:
    name: str
    levels: int  # grade levels 0..levels-1 (multi-level objectives)
    relevant_index: int  # the binary head's relevant logit
    class_weights: tuple[float, ...] | None = None
    loss_weights: tuple[float, float] = (0.5, 0.5)
    grade_values: tuple[float, ...] | None = None

    def __post_init__(self) -> None:
        if self.name not in OBJECTIVES:
            raise InputError(f"objective must be one of {', '.join(OBJECTIVES)}, not {self.name!r}")
        if self.name == "regression" and self.grade_values is None:
            raise InputError("the regression objective needs grade_values (one value per grade level)")
        if self.class_weights is not None and len(self.class_weights) != self.levels:
            raise InputError(f"class_weights has {len(self.class_weights)} values for {self.levels} grade levels")

    @property
    def outputs(self) -> int:
        return {"binary": 2, "distill": 2, "regression": 1}.get(self.name, self.levels)

    def targets(self, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        """The training target of each pair, from its grade level (binary: from its relevant label)."""
        if self.name == "binary":
            relevant = self.relevant_index
            return torch.tensor([relevant if label else 1 - relevant for label in labels], dtype=torch.long)
        if self.name == "distill":  # placeholders until the teacher's logits replace them
            return torch.zeros((len(labels), 2), dtype=torch.float32)
        if self.name == "regression":
            return torch.tensor([float(self.grade_values[lv]) for lv in levels], dtype=torch.float32)
        return torch.tensor(list(levels), dtype=torch.long)

    def _bce(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        one_hot = torch.nn.functional.one_hot(targets, self.levels).float()
        weight = None if self.class_weights is None else torch.tensor(self.class_weights, device=logits.device)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, one_hot, pos_weight=weight)

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        logits = logits.float()
        if self.name == "binary":
            return torch.nn.functional.cross_entropy(logits, targets)
        if self.name == "regression":
            return torch.nn.functional.mse_loss(logits[:, 0], targets)
        if self.name == "distill":
            return torch.nn.functional.mse_loss(logits, targets)
        if self.name == "multi_label":
            return self._bce(logits, targets)
        ce, bce = self.loss_weights
        return ce * torch.nn.functional.cross_entropy(logits, targets) + bce * self._bce(logits, targets)

    def prior_loss(self, train_targets: torch.Tensor, targets: torch.Tensor) -> float:
        """The loss on `targets` of the best constant prediction under this objective's own loss, fitted
        to the training targets (the label prior): a model must beat it to have learned anything."""
        if not len(targets):
            return math.nan
        row = self.prior_row(train_targets)
        with torch.no_grad():
            return float(self.loss(row.expand(len(targets), self.outputs), targets))

    def prior_row(self, train_targets: torch.Tensor) -> torch.Tensor:
        """The constant logits that minimise the loss on `train_targets`."""
        if self.name == "regression":
            return train_targets.float().mean().reshape(1)
        if self.name == "distill":  # the teacher's mean logits
            return train_targets.float().mean(dim=0)
        n = self.outputs
        prior = (torch.bincount(train_targets, minlength=n).double() / len(train_targets)).clamp(1e-6, 1 - 1e-6)
        if self.name == "binary":
            return prior.log().float()
        # a sigmoid per level: BCE with pos_weight w is least at sigmoid(z) = w p / (w p + 1 - p)
        weight = torch.ones(n, dtype=torch.double) if self.class_weights is None else torch.tensor(self.class_weights).double()
        row = torch.log(weight * prior / (1 - prior)).float()
        if self.name == "multi_label":
            return row
        # multi_class_multi_label mixes softmax CE and that BCE: no closed form, so descend from the BCE optimum
        row = row.clone().requires_grad_(True)
        optimiser = torch.optim.LBFGS([row], max_iter=200, tolerance_grad=1e-9, line_search_fn="strong_wolfe")

        def closure():
            optimiser.zero_grad()
            loss = self.loss(row.expand(len(train_targets), n), train_targets)
            loss.backward()
            return loss

        optimiser.step(closure)
        return row.detach()

    def score(self, logits: torch.Tensor) -> torch.Tensor:
        """A ranking score for validation: the relevant logit, the predicted level (argmax ranking), or the value."""
        logits = logits.float()
        if self.name in ("binary", "distill"):
            return logits[:, self.relevant_index]
        if self.name == "regression":
            return logits[:, 0]
        return argmax_score(logits)


def argmax_score(logits: torch.Tensor) -> torch.Tensor:
    """The predicted level, ties within a level broken by the expected level: level + E[level] / K, in [level, level+1).

    Not by the predicted level's own probability: within level 0 that ranks the documents surest to
    be irrelevant first (the first Radboud default run's argmax rows fell to nDCG@20 0.02 that way).
    """
    probabilities = torch.softmax(logits.float(), dim=1)
    best = probabilities.argmax(dim=1)
    levels = torch.arange(probabilities.shape[1], dtype=probabilities.dtype)
    expected = (probabilities * levels).sum(dim=1) / probabilities.shape[1]  # in [0, (K-1)/K]
    return best.float() + expected
