"""train() and train_chain(): a checkpoint fine-tuned on one source or a mix, or on several in turn,
published with reranker.json, its logs and loss plot; a complete one with the same inputs is reused."""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import torch

from reranker.core import hardware
from reranker.formats.atomic import atomic_dir, write_lines
from reranker.formats.errors import InputError
from reranker.neural import models
from reranker.neural.batching import pad_id
from reranker.neural.training.heads import calibrate_cosine, carry_head
from reranker.neural.training.loop import Loop
from reranker.neural.training.loss_plot import plot_loss
from reranker.neural.training.resume import checkpoint_inputs, deterministic, inputs_key, is_complete, resume_path
from reranker.neural.training.settings import DEFAULT_TRAINING, Source, TrainingConfig
from reranker.neural.training.tasks import checkpoint_meta, load_task, masked_lm_task, pair_task
from reranker.neural.training.teacher import best_units

LOG_FILE = "train_log.jsonl"
VALIDATION_FILE = "validation_log.jsonl"
PLOT_FILE = "loss.png"


def publish(out_dir: Path, classifier: models.Classifier, loop: Loop, meta: dict[str, Any], precision: str,
            started: float, usage: hardware.DeviceUsage) -> None:
    """Write the trained checkpoint, its logs and loss plot; reranker.json last: a checkpoint without it is incomplete."""
    import transformers

    model = classifier.model
    with atomic_dir(out_dir, last=models.META_FILE) as tmp:
        model.save_pretrained(tmp)
        classifier.tokenizer.save_pretrained(tmp)
        write_lines(tmp / LOG_FILE, (json.dumps(entry) for entry in loop.log))
        write_lines(tmp / VALIDATION_FILE, (json.dumps(entry) for entry in loop.checks))
        plot_loss(loop.log, tmp / PLOT_FILE, title=out_dir.name, validation=loop.checks)
        if isinstance(model, models.CosineClassifier):  # saved as the plain encoder, read back as a bi-encoder
            model, index = model.encoder, 0
            meta.update(relevant_index=index, num_labels=None)
        else:
            index = classifier.relevant_index
        meta.update(
            fingerprint=models.fingerprints(model, classifier.head, index)[1],
            device=str(loop.device), precision=precision, dtype=str(loop.dtype).removeprefix("torch."), **loop.summary(),
            seconds=round(time.perf_counter() - started, 1), device_usage=usage.record(), machine=hardware.machine(),
            versions={"torch": torch.__version__, "transformers": transformers.__version__}, complete=True)
        models.write_meta(tmp, meta)
    resume_path(out_dir).unlink(missing_ok=True)  # published: nothing left to resume


def train(base: str, sources: Source | Sequence[Source], out_dir: str | os.PathLike,
          config: TrainingConfig = DEFAULT_TRAINING, filter_cache: str | os.PathLike | None = None) -> Path:
    """Fine-tune `base` (HF id or checkpoint dir) on the pairs of `sources`, shuffled together.

    A `validation_fraction` of each source's queries is held out; every `eval_every` steps the
    held-out loss and MRR are logged, and with `select: best` the checkpoint keeps the weights of
    the step with the lowest held-out loss. Returns `out_dir`. A complete checkpoint there with the
    same inputs is kept as it is. `filter_cache`: where the positive filter's scores are kept by content
    (positives: best), shared by the trainings that filter the same pairs.
    """
    sources = [sources] if isinstance(sources, Source) else list(sources)
    if not sources:
        raise InputError("train() needs at least one source")
    out_dir = Path(out_dir)
    device = models.pick_device(config.device)
    precision = hardware.resolve_precision(config.precision, device)
    dtype = hardware.compute_dtype(precision, device)
    started = time.perf_counter()
    usage = hardware.DeviceUsage(device)
    if config.task != "rank" and len(sources) != 1:
        raise InputError(f"task {config.task} pre-trains on one collection's documents, not {len(sources)}")
    with deterministic(config.seed):
        base_meta = models.read_meta(base) if Path(base).is_dir() else {}
        fresh = config.fresh_head or base_meta.get("task", "rank") == "mlm"
        classifier, examples, objective = load_task(base, sources, config, device, fresh)
        meta = checkpoint_meta(base, classifier, objective, fresh, examples, config)
        if is_complete(out_dir) and checkpoint_inputs(models.read_meta(out_dir)) == checkpoint_inputs(meta):
            print(f"{out_dir}: complete checkpoint with the same inputs, not retrained", file=sys.stderr)
            return out_dir
        if config.positives == "best":  # after the reuse check: the filter's pass is paid only when training
            examples, meta["positive_filter"] = best_units(examples, config, device, dtype, filter_cache)

        pad = pad_id(classifier.tokenizer)
        if objective is None:
            task = masked_lm_task(classifier, examples[0], pad, device, dtype)
        else:
            task = pair_task(classifier, sources, examples, objective, config, pad, device, dtype, meta)
            if isinstance(classifier.model, models.CosineClassifier):
                meta["cosine_head"] = calibrate_cosine(classifier, task.data, pad, device, dtype, config.seed)
            if config.head_from is not None:
                meta["head_from"] = carry_head(classifier, config.head_from, task.data, objective, pad, device,
                                               dtype, config.seed)
        loop = Loop.begin(classifier.model, task, config, pad, device, dtype, out_dir, inputs_key(meta))
        loop.run()
    publish(out_dir, classifier, loop, meta, precision, started, usage)
    return out_dir


def train_chain(base: str, sources: Sequence[Source], out_dir: str | os.PathLike,
                config: TrainingConfig = DEFAULT_TRAINING, filter_cache: str | os.PathLike | None = None) -> Path:
    """Fine-tune on each source in turn, each stage starting from the previous one's weights.

    Stage i < n is kept in `out_dir/stage-i-<name>`; the last stage is `out_dir` itself.
    """
    if not sources:
        raise InputError("train_chain() needs at least one source")
    out_dir = Path(out_dir)
    current = str(base)
    for number, source in enumerate(sources[:-1], start=1):
        current = str(train(current, source, out_dir / f"stage-{number}-{source.name.replace('/', '-')}", config,
                            filter_cache))
    return train(current, sources[-1], out_dir, config, filter_cache)
