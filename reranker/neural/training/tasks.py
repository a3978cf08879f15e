"""What a training task is: its model and examples (rank: judged pairs, nsp: sentence pairs, mlm: masked
documents), its objective, the loss of a batch, a held-out pass, and reranker.json's account of it."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import torch

from reranker.formats.errors import InputError
from reranker.neural import models
from reranker.neural.objectives import Objective
from reranker.neural.training.encoding import Encoded, encode
from reranker.neural.training.heads import freeze_encoder
from reranker.neural.training.pairs import Examples, load_source, without_long_queries
from reranker.neural.training.pretraining import load_mlm_source, load_nsp_source, masked_lm_loss, validate_masked_lm
from reranker.neural.training.settings import Source, TrainingConfig
from reranker.neural.training.teacher import soft_labels, teacher_logits
from reranker.neural.training.validation import validate


def objective_for(config: TrainingConfig, examples: Sequence[Examples], relevant_index: int) -> Objective:
    """The configured objective over the grade levels the sources' qrels use; a grade beyond a mapping stops here."""
    levels = 1 + max((lv for example in examples for lv in example.record["levels"]), default=1)
    for setting in ("grade_values", "class_weights"):
        values = getattr(config, setting)
        if values is not None and len(values) < levels:
            example = next(e for e in examples if max(e.record["levels"]) >= len(values))
            raise InputError(f"{example.record['files']['qrels']}: grade {max(example.record['levels'])} is outside "
                             f"the mapping {setting} {list(values)} (levels 0..{len(values) - 1}; negative grades are 0)")
    mapped = max(len(config.grade_values or ()), len(config.class_weights or ()))
    return Objective(config.objective, max(levels, mapped), relevant_index,
                     None if config.class_weights is None else tuple(config.class_weights),
                     tuple(config.loss_weights),
                     None if config.grade_values is None else tuple(config.grade_values))


class Task(NamedTuple):
    """What the training loop needs of a task: its data, the loss of a batch, and a held-out pass."""

    data: Encoded
    held_out: Encoded
    baseline: float  # the held-out loss of a constant guess (label prior; uniform vocabulary for mlm)
    batch_loss: Callable[[torch.Tensor, Sequence[int]], torch.Tensor]
    evaluate_held_out: Callable[[], dict[str, float]]
    metric: str  # the held-out score besides the loss: mrr (pairs) or accuracy (mlm)


def load_task(base: str, sources: Sequence[Source], config: TrainingConfig, device: torch.device,
              fresh: bool) -> tuple[models.Classifier, list[Examples], Objective | None]:
    """The model and examples of `config.task`: a masked LM and its masked documents (mlm), or a
    classifier with its objective and pairs (rank: judged pairs; nsp: sentence pairs)."""
    if config.task == "mlm":
        classifier = models.load_masked_lm(base, num_layers=config.num_layers, device=device)
        models.check_length(classifier, config.max_length)
        return classifier, [load_mlm_source(sources[0], config, classifier.tokenizer)], None
    examples = [(load_nsp_source if config.task == "nsp" else load_source)(source, config) for source in sources]
    objective = objective_for(config, examples, relevant_index=1)
    head_seed = config.seed if config.head_seed is None else config.head_seed  # a new head's start: its own seed, or `seed`
    classifier = models.load_classifier(base, head=config.head, num_layers=config.num_layers, seed=head_seed,
                                        device=device, num_labels=objective.outputs, fresh_head=fresh)
    if config.head_seed is not None:  # what follows (dropout) draws as every other head seed's run does
        torch.manual_seed(config.seed)
    models.check_length(classifier, config.max_length)
    if classifier.head == "bi_encoder":  # trains as a two-way classifier of its cosine (calibrate_cosine starts it)
        classifier = models.as_cosine_classifier(classifier)
    if classifier.n_logits != objective.outputs:
        raise models.CheckpointError(f"{base}: the {objective.name} objective needs {objective.outputs} "
                                     f"logit(s), this head has {classifier.n_logits}")
    if config.trainable == "head":
        freeze_encoder(classifier.model)
    return classifier, examples, dataclasses.replace(objective, relevant_index=classifier.relevant_index)


def masked_lm_task(classifier: models.Classifier, example: Examples, pad_id: int, device: torch.device,
                   dtype: torch.dtype) -> Task:
    data, held_out = example.pairs, example.validation
    return Task(data, held_out, math.log(classifier.tokenizer.vocab_size),
                lambda logits, rows: masked_lm_loss(logits, data, rows, device),
                lambda: validate_masked_lm(classifier.model, held_out, pad_id, device, dtype), "accuracy")


def pair_task(classifier: models.Classifier, sources: Sequence[Source], examples: Sequence[Examples],
              objective: Objective, config: TrainingConfig, pad_id: int, device: torch.device, dtype: torch.dtype,
              meta: dict[str, Any]) -> Task:
    """(query, text) or sentence pairs under the objective; a teacher's logits as targets when distilling."""
    # A query is kept whole; a sentence pair (nsp) is cut on its longer side.
    truncation = "longest_first" if config.task == "nsp" else "only_second"
    if config.task == "rank":
        examples = [without_long_queries(classifier.tokenizer, source, example, config.max_length)
                    for source, example in zip(sources, examples)]
        meta["sources"] = [example.record for example in examples]  # with the queries left out, for reranker.json
    data = encode(classifier.tokenizer, examples, "pairs", objective, config.max_length, truncation)
    held_out = encode(classifier.tokenizer, examples, "validation", objective, config.max_length, truncation)
    if config.teacher is not None:  # the student learns the teacher's logits (or probabilities) on the same pairs
        teacher = models.load_classifier(config.teacher, head=config.teacher_head, device=device)
        meta["teacher"] = {"checkpoint": str(config.teacher), "head": teacher.head, "fingerprint": teacher.fingerprint}
        if teacher.head != "bi_encoder" and teacher.tokenizer.get_vocab() != classifier.tokenizer.get_vocab():
            raise models.CheckpointError(f"teacher {config.teacher} has another vocabulary than {classifier.source}: "
                                         "its logits would be of other token sequences")
        if objective.name == "soft_labels":
            data, held_out = soft_labels(teacher, examples, data, held_out, objective, config, pad_id, dtype, meta["teacher"])
        elif teacher.head == "bi_encoder":
            raise models.CheckpointError(f"teacher {config.teacher} is a bi-encoder: it has no logits to distill "
                                         "(the soft_labels objective takes its calibrated cosine)")
        else:
            data = data._replace(targets=teacher_logits(teacher, data, objective.relevant_index, pad_id, dtype))
            held_out = held_out._replace(targets=teacher_logits(teacher, held_out, objective.relevant_index, pad_id, dtype))
    return Task(data, held_out, objective.prior_loss(data.targets, held_out.targets),
                lambda logits, rows: objective.loss(logits, data.targets[rows].to(device)),
                lambda: validate(classifier.model, held_out, objective, pad_id, device, dtype), "mrr")


def checkpoint_meta(base: str, classifier: models.Classifier, objective: Objective | None, fresh: bool,
                    examples: Sequence[Examples], config: TrainingConfig) -> dict[str, Any]:
    """reranker.json's account of what training starts from and on (the run's results are added when it ends)."""
    model = classifier.model
    return {
        "head": classifier.head,
        "task": config.task,
        "relevant_index": classifier.relevant_index,
        "num_labels": None if objective is None else objective.outputs,
        "base": str(base),
        "base_fingerprint": classifier.fingerprint,
        "fresh_head": fresh,
        "num_layers": model.config.num_hidden_layers,
        "shape": f"{model.config.num_hidden_layers}/{model.config.hidden_size}",
        "parameters": sum(p.numel() for p in model.parameters()),
        "trainable_parameters": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "sources": [example.record for example in examples],
        "training": config.as_dict(),
    }
