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
* `soft_labels`: a two-way head, cross-entropy against a soft label: (1 - teacher_weight) x the judged
  label + teacher_weight x a teacher's probability of relevance (Hinton et al. 2015's mixed loss, in one
  target). The teacher may be a bi-encoder: what the plain encoder knew is kept as a target while
  the judgments are learned. The train stage mixes the teacher in.

Each objective's behaviour is one registered `Rule` (`RULES`, keyed by the registry's names);
`Objective` carries the settings and hands each call to its rule. Only the train stage uses these;
scores are read back by the score stage's rankings (`registry.RANKINGS`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch

from reranker.core import registry
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
        self.rule.check(self)
        if self.class_weights is not None and len(self.class_weights) != self.levels:
            raise InputError(f"class_weights has {len(self.class_weights)} values for {self.levels} grade levels")

    @property
    def rule(self) -> Rule:
        return RULES[self.name]

    @property
    def outputs(self) -> int:
        return self.rule.outputs(self)

    def targets(self, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        """The training target of each pair, from its grade level (binary: from its relevant label)."""
        return self.rule.targets(self, levels, labels)

    def loss(self, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return self.rule.loss(self, logits.float(), targets)

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
        return self.rule.prior_row(self, train_targets)

    def score(self, logits: torch.Tensor) -> torch.Tensor:
        """A ranking score for validation: the relevant logit, the predicted level (argmax ranking), or the value."""
        return self.rule.score(self, logits.float())


class Rule:
    """One objective's behaviour, given the objective's settings. The defaults are the multi-level
    objectives': a logit per grade level, the level as target, ranked by argmax_score."""

    def check(self, objective: Objective) -> None:
        """Refuse settings the objective cannot train with."""

    def outputs(self, objective: Objective) -> int:
        return objective.levels

    def targets(self, objective: Objective, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        return torch.tensor(list(levels), dtype=torch.long)

    def loss(self, objective: Objective, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def score(self, objective: Objective, logits: torch.Tensor) -> torch.Tensor:
        return argmax_score(logits)


def label_prior(train_targets: torch.Tensor, outputs: int) -> torch.Tensor:
    """Each class's share of the training targets, kept off 0 and 1 (its log and logit stay finite)."""
    return (torch.bincount(train_targets, minlength=outputs).double() / len(train_targets)).clamp(1e-6, 1 - 1e-6)


class Binary(Rule):
    def outputs(self, objective: Objective) -> int:
        return 2

    def targets(self, objective: Objective, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        relevant = objective.relevant_index
        return torch.tensor([relevant if label else 1 - relevant for label in labels], dtype=torch.long)

    def loss(self, objective: Objective, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.cross_entropy(logits, targets)

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        return label_prior(train_targets, 2).log().float()

    def score(self, objective: Objective, logits: torch.Tensor) -> torch.Tensor:
        return logits[:, objective.relevant_index]


class MultiLabel(Rule):
    def loss(self, objective: Objective, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        one_hot = torch.nn.functional.one_hot(targets, objective.levels).float()
        weights = objective.class_weights
        weight = None if weights is None else torch.tensor(weights, device=logits.device)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, one_hot, pos_weight=weight)

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        # a sigmoid per level: BCE with pos_weight w is least at sigmoid(z) = w p / (w p + 1 - p)
        n = self.outputs(objective)
        prior = label_prior(train_targets, n)
        weights = objective.class_weights
        weight = torch.ones(n, dtype=torch.double) if weights is None else torch.tensor(weights).double()
        return torch.log(weight * prior / (1 - prior)).float()


class MultiClassMultiLabel(MultiLabel):
    def loss(self, objective: Objective, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        ce, bce = objective.loss_weights
        return ce * torch.nn.functional.cross_entropy(logits, targets) + bce * super().loss(objective, logits, targets)

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        # softmax CE mixed with the multi-label BCE has no closed form, so descend from the BCE optimum
        row = super().prior_row(objective, train_targets).clone().requires_grad_(True)
        return minimise(row, lambda: objective.loss(row.expand(len(train_targets), self.outputs(objective)), train_targets))


def minimise(params: torch.Tensor, loss: Callable[[], torch.Tensor], tolerance: float = 1e-9) -> torch.Tensor:
    """`params` (a leaf that requires grad) at the minimum of `loss()`: L-BFGS with a strong Wolfe line search."""
    optimiser = torch.optim.LBFGS([params], max_iter=200, tolerance_grad=tolerance, line_search_fn="strong_wolfe")

    def closure():
        optimiser.zero_grad()
        value = loss()
        value.backward()
        return value

    optimiser.step(closure)
    return params.detach()


def calibrate(scores: torch.Tensor, labels: Sequence[bool]) -> tuple[float, float]:
    """a, b of the logistic regression P(relevant) = sigmoid(a score + b) fitted on training pairs' labels:
    a bi-encoder's cosine becomes a probability on the judgments' own scale (soft_labels' teacher)."""
    x, y = scores.double(), torch.tensor([float(label) for label in labels], dtype=torch.double)
    params = torch.zeros(2, dtype=torch.double, requires_grad=True)
    a, b = minimise(params, lambda: torch.nn.functional.binary_cross_entropy_with_logits(params[0] * x + params[1], y),
                    tolerance=1e-10).tolist()
    return a, b


def carried_map(objective: Objective, log_odds: torch.Tensor, train_targets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """(alpha, beta), one pair per output: logit_k = alpha_k x s + beta_k minimises the objective's loss on
    `train_targets`, s being a two-way head's log-odds of relevance on the same pairs. A head carried so
    ranks as the two-way head did, scaled and shifted to this objective's outputs; from alpha = 0 and
    beta = the label prior, so it starts no worse than the prior."""
    n = objective.outputs
    s = log_odds.double().reshape(-1, 1)
    params = torch.cat([torch.zeros(n, dtype=torch.double), objective.prior_row(train_targets).double()])
    params.requires_grad_(True)
    fitted = minimise(params, lambda: objective.loss(s * params[:n] + params[n:], train_targets))
    return fitted[:n].detach().float(), fitted[n:].detach().float()


class Regression(Rule):
    def check(self, objective: Objective) -> None:
        if objective.grade_values is None:
            raise InputError("the regression objective needs grade_values (one value per grade level)")

    def outputs(self, objective: Objective) -> int:
        return 1

    def targets(self, objective: Objective, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        return torch.tensor([float(objective.grade_values[lv]) for lv in levels], dtype=torch.float32)

    def loss(self, objective: Objective, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(logits[:, 0], targets)

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        return train_targets.float().mean().reshape(1)

    def score(self, objective: Objective, logits: torch.Tensor) -> torch.Tensor:
        return logits[:, 0]


class Distill(Binary):
    """A two-way head read as binary's, trained on a teacher's logits (which replace the targets)."""

    def targets(self, objective: Objective, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        return torch.zeros((len(labels), 2), dtype=torch.float32)  # placeholders until the teacher's logits

    def loss(self, objective: Objective, logits: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.mse_loss(logits, targets)

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        return train_targets.float().mean(dim=0)  # the teacher's mean logits


class SoftLabels(Binary):
    """A two-way head against probabilities: one-hot judged rows until the train stage mixes a teacher in."""

    def targets(self, objective: Objective, levels: Sequence[int], labels: Sequence[int]) -> torch.Tensor:
        hard = super().targets(objective, levels, labels)
        return torch.nn.functional.one_hot(hard, 2).float()

    def prior_row(self, objective: Objective, train_targets: torch.Tensor) -> torch.Tensor:
        # cross-entropy against soft targets is least at their mean
        return train_targets.float().mean(dim=0).clamp(1e-6, 1 - 1e-6).log()


# One rule per name of registry.OBJECTIVES (tests/test_registry.py holds the two lists together).
RULES: dict[str, Rule] = {
    "binary": Binary(),
    "multi_label": MultiLabel(),
    "multi_class_multi_label": MultiClassMultiLabel(),
    "regression": Regression(),
    "distill": Distill(),
    "soft_labels": SoftLabels(),
}


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
