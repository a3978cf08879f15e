"""Where a classifier's head starts, and whether the encoder trains: a head carried from another
checkpoint, a bi-encoder's cosine calibrated, or only the head trained."""

from __future__ import annotations

from typing import Any

import torch

from reranker.neural import models
from reranker.neural.objectives import Binary, Objective, calibrate, carried_map
from reranker.neural.training.encoding import Encoded, batched_logits, subset

HEAD_FIT_PAIRS = 512  # training pairs a carried head's map is fitted on: a forward pass each, 2 numbers per output


def freeze_encoder(model: torch.nn.Module) -> None:
    """Only the head trains: the classifier (and BERT's pooler, part of the [CLS] head)."""
    for name, parameter in model.named_parameters():
        parameter.requires_grad = name.startswith("classifier") or ".pooler." in f".{name}"


def head_fit_scores(model: Any, data: Encoded, n_logits: int, column: int, pad_id: int, device: torch.device,
                    dtype: torch.dtype, seed: int) -> tuple[Encoded, torch.Tensor]:
    """HEAD_FIT_PAIRS training pairs drawn with their own seeded generator (the training RNG is left as it
    was), and logit `column` on each, in eval mode (no dropout in what a head's start is fitted to)."""
    generator = torch.Generator().manual_seed(seed)
    sample = subset(data, torch.randperm(len(data.ids), generator=generator)[:HEAD_FIT_PAIRS].tolist())
    was_training = model.training
    model.eval()
    scores = batched_logits(model, sample, n_logits, pad_id, device, dtype)[:, column]
    model.train(was_training)
    return sample, scores


def carry_head(classifier: models.Classifier, source: str, data: Encoded, objective: Objective, pad_id: int,
               device: torch.device, dtype: torch.dtype, seed: int) -> dict[str, Any]:
    """Start the classifier's head from `source`'s trained two-way head, so that rows of every objective
    start alike: a two-way objective's head is copied; any other's outputs are each an affine map of the
    two-way head's log-odds (on this encoder), fitted to the objective's loss on HEAD_FIT_PAIRS training pairs."""
    donor = models.load_classifier(source)
    if donor.n_logits != 2 or not models.LOADERS[donor.head].sized:
        raise models.CheckpointError(f"head_from {source}: needs a two-way linear head, it has a {donor.head} "
                                     f"head with {donor.n_logits} logit(s)")
    if donor.head != classifier.head:
        raise models.CheckpointError(f"head_from {source}: its {donor.head} head reads other features than the "
                                     f"{classifier.head} head of {classifier.source}")
    weight, bias = donor.model.classifier.weight.detach().float(), donor.model.classifier.bias.detach().float()
    head = classifier.model.classifier
    if weight.shape[1] != head.weight.shape[1]:
        raise models.CheckpointError(f"head_from {source}: hidden size {weight.shape[1]}, not {head.weight.shape[1]}")
    record: dict[str, Any] = {"checkpoint": str(source), "head": donor.head, "fingerprint": donor.fingerprint}
    relevant = donor.relevant_index
    with torch.no_grad():
        if isinstance(objective.rule, Binary):  # the same two-way head, relevant row where the student reads it
            flip = relevant != objective.relevant_index
            head.weight.copy_(weight.flip(0) if flip else weight)
            head.bias.copy_(bias.flip(0) if flip else bias)
            return record | {"copied": True}
        log_odds, offset = weight[relevant] - weight[1 - relevant], bias[relevant] - bias[1 - relevant]
        head.weight.zero_()
        head.bias.zero_()
        head.weight[0], head.bias[0] = log_odds, offset  # output 0 reads the log-odds while the map is fitted
    sample, scores = head_fit_scores(classifier.model, data, objective.outputs, 0, pad_id, device, dtype, seed)
    alpha, beta = carried_map(objective, scores, sample.targets)
    with torch.no_grad():
        head.weight.copy_((alpha[:, None] * log_odds[None, :]).to(head.weight))
        head.bias.copy_((alpha * offset + beta).to(head.bias))
    return record | {"copied": False, "pairs": len(sample.ids), "alpha": [round(float(a), 6) for a in alpha],
                     "beta": [round(float(b), 6) for b in beta]}


def calibrate_cosine(classifier: models.Classifier, data: Encoded, pad_id: int, device: torch.device,
                     dtype: torch.dtype, seed: int) -> dict[str, Any]:
    """Start a bi-encoder's log-odds at sigmoid(a cosine + b), fitted to the judgments of HEAD_FIT_PAIRS
    training pairs: at step 0 it ranks exactly as the zero-shot bi-encoder, on the judgments' scale."""
    # Column 1 of a fresh CosineClassifier's logits is the cosine itself.
    sample, cosine = head_fit_scores(classifier.model, data, 2, 1, pad_id, device, dtype, seed)
    a, b = calibrate(cosine, sample.relevant)
    head = classifier.model.classifier
    with torch.no_grad():
        head.weight.copy_(torch.tensor([[0.0], [a]]))
        head.bias.copy_(torch.tensor([0.0, b]))
    return {"pairs": len(sample.ids), "a": round(a, 6), "b": round(b, 6)}
