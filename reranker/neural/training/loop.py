"""The training loop: AdamW under a linear warm-up and decay on length-bucketed batches, a held-out pass
every `eval_every` steps that keeps the best weights, and a resume state saved at each pass."""

from __future__ import annotations

import dataclasses
import math
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reranker.neural.training.encoding import collate, epoch_batches
from reranker.neural.training.resume import load_resume, resume_path, write_resume
from reranker.neural.training.settings import TrainingConfig
from reranker.neural.training.tasks import Task

CLIP_NORM = 1.0


def optimizer_for(model: torch.nn.Module, config: TrainingConfig) -> torch.optim.AdamW:
    """AdamW; biases and LayerNorm weights are not decayed."""
    no_decay = {id(p) for module in model.modules() if isinstance(module, torch.nn.LayerNorm) for p in module.parameters()}
    no_decay |= {id(p) for name, p in model.named_parameters() if name.endswith("bias")}
    params = [p for p in model.parameters() if p.requires_grad]
    groups = [{"params": [p for p in params if id(p) not in no_decay], "weight_decay": config.weight_decay},
              {"params": [p for p in params if id(p) in no_decay], "weight_decay": 0.0}]
    return torch.optim.AdamW(groups, lr=config.learning_rate)


@dataclass
class Loop:
    """The training loop's state: what it trains, where it stands, and what it has seen.

    A resume file holds where it stands and what it has seen, with the weights, the optimiser's and
    scheduler's state and torch's RNG: a killed run goes on from its last check bit for bit.
    """

    model: Any
    task: Task
    config: TrainingConfig
    optimizer: torch.optim.Optimizer
    scheduler: Any  # the linear warm-up and decay
    shuffler: torch.Generator  # draws each epoch's batches, apart from the dropout's RNG
    pad_id: int
    device: torch.device
    dtype: torch.dtype
    steps_per_epoch: int
    total_steps: int
    name: str  # the checkpoint's, for messages
    resume_file: Path
    resume_key: str
    autocast: Any  # the training forward's torch.autocast, built once and entered each step
    trainable: list[torch.nn.Parameter]  # the parameters that train (in the model's order), clipped each step
    lengths: list[int]  # each training pair's token count, for drawing each epoch's batches
    # where it stands
    step: int = 0
    epoch_start: torch.Tensor | None = None  # the shuffler's state when the current epoch's batches were drawn
    skip: int = 0  # batches of the current epoch trained on before a resume
    stopped_early: bool = False
    # what it has seen
    log: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # one entry per step
    checks: list[dict[str, Any]] = dataclasses.field(default_factory=list)  # one entry per held-out pass
    best: dict[str, Any] = dataclasses.field(default_factory=dict)  # the best pass's entry, and its weights with select: best
    pairs_seen: int = 0
    tokens_seen: int = 0
    padded_seen: int = 0
    train_seconds: float = 0.0
    smoothed: float | None = None  # the progress bar's moving loss (not resumed)
    bar: Any = None  # the progress bar, while the loop runs

    @classmethod
    def begin(cls, model: Any, task: Task, config: TrainingConfig, pad_id: int, device: torch.device,
              dtype: torch.dtype, out_dir: Path, resume_key: str) -> Loop:
        """A loop at step 0, or where a saved state of the same inputs left off."""
        from transformers import get_linear_schedule_with_warmup

        model.train()
        optimizer = optimizer_for(model, config)
        steps_per_epoch = math.ceil(len(task.data.ids) / config.batch_size)
        total_steps = max(1, math.ceil(config.epochs * steps_per_epoch))
        scheduler = get_linear_schedule_with_warmup(optimizer, round(config.warmup * total_steps), total_steps)
        loop = cls(model, task, config, optimizer, scheduler, torch.Generator().manual_seed(config.seed), pad_id, device,
                   dtype, steps_per_epoch, total_steps, out_dir.name, resume_path(out_dir), resume_key,
                   torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32),
                   [p for p in model.parameters() if p.requires_grad], [len(ids) for ids in task.data.ids])
        saved = load_resume(loop.resume_file, resume_key)
        if saved is not None:
            loop.restore(saved)
        return loop

    def restore(self, saved: dict[str, Any]) -> None:
        """Go on from a saved state (see `save`)."""
        self.model.load_state_dict(saved["model"])
        self.optimizer.load_state_dict(saved["optimizer"])
        self.scheduler.load_state_dict(saved["scheduler"])
        torch.set_rng_state(saved["torch_rng"])  # dropout continues where it was
        self.log, self.checks, self.best = saved["log"], saved["checks"], saved["best"]
        self.step, self.pairs_seen, self.tokens_seen, self.padded_seen, self.train_seconds = saved["counters"]
        self.epoch_start, self.skip, self.stopped_early = saved["epoch_start"], saved["in_epoch"], saved["stopped_early"]
        print(f"train {self.name}: resumed at step {self.step} of {self.total_steps} from {self.resume_file}",
              file=sys.stderr)

    def save(self, in_epoch: int) -> None:
        """Everything the loop needs to go on from here, bit for bit, after the process dies."""
        write_resume(self.resume_file, {
            "key": self.resume_key, "model": self.model.state_dict(), "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(), "torch_rng": torch.get_rng_state(), "log": self.log,
            "checks": self.checks, "best": self.best,
            "counters": (self.step, self.pairs_seen, self.tokens_seen, self.padded_seen, self.train_seconds),
            "epoch_start": self.epoch_start, "in_epoch": in_epoch, "stopped_early": self.stopped_early})

    def run(self) -> None:
        """Train to the planned steps, or until patience runs out; then keep the selected weights."""
        from tqdm.auto import tqdm

        self.bar = tqdm(total=self.total_steps, initial=self.step, unit="step", desc=f"train {self.name}", file=sys.stderr)
        try:
            if self.step == 0:  # the untrained head, the reference for every later pass (a resumed loop has it)
                self.validate()
            while self.step < self.total_steps and not self.stopped_early:
                self.epoch()
        finally:
            self.bar.close()  # ended, so that an error's line is a line of its own
        if self.best.get("state") is not None:
            self.model.load_state_dict(self.best["state"])
        self.model.eval()

    def epoch(self) -> None:
        """The current epoch's batches, from the first not yet trained on; a check and a save every `eval_every` steps."""
        if self.epoch_start is None:
            self.epoch_start = self.shuffler.get_state()
        else:  # resumed mid-epoch: draw the same batches again
            self.shuffler.set_state(self.epoch_start)
        batches = epoch_batches(self.lengths, self.config.batch_size, self.shuffler, self.config.bucketed)
        for position, batch in enumerate(batches[self.skip:], start=self.skip):
            if self.step == self.total_steps or self.stopped_early:
                break
            tick = time.perf_counter()
            inputs, loss, lr = self.optimise(batch)
            self.record(batch, inputs, loss, lr, time.perf_counter() - tick)
            if self.step % self.config.eval_every == 0 or self.step == self.total_steps:
                self.validate()
                self.save(position + 1)
        self.epoch_start, self.skip = None, 0

    def optimise(self, batch: list[int]) -> tuple[dict[str, torch.Tensor], float, float]:
        """One optimiser step on a batch: its inputs, loss and learning rate."""
        inputs = collate(self.task.data, batch, self.pad_id, self.device)
        with self.autocast:
            logits = self.model(**inputs).logits
        loss = self.task.batch_loss(logits, batch)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.trainable, CLIP_NORM)
        lr = self.scheduler.get_last_lr()[0]
        self.optimizer.step()
        self.scheduler.step()
        self.optimizer.zero_grad(set_to_none=True)
        return inputs, loss.item(), lr

    def record(self, batch: list[int], inputs: dict[str, torch.Tensor], loss: float, lr: float, seconds: float) -> None:
        """Count a step and log its loss."""
        self.step += 1
        self.train_seconds += seconds
        self.pairs_seen += len(batch)
        self.tokens_seen += int(inputs["attention_mask"].sum())
        self.padded_seen += inputs["attention_mask"].numel()
        self.log.append({"step": self.step, "epoch": round(self.step / self.steps_per_epoch, 4), "loss": loss, "lr": lr,
                         "width": int(inputs["input_ids"].shape[1])})
        self.smoothed = loss if self.smoothed is None else 0.95 * self.smoothed + 0.05 * loss
        self.bar.set_postfix(loss=f"{self.smoothed:.4f}", refresh=False)
        self.bar.update(1)

    def validate(self) -> None:
        """A held-out pass: log it, keep the best weights, and stop once patience has run out."""
        if not len(self.task.held_out.ids):
            return
        result, metric, baseline = self.task.evaluate_held_out(), self.task.metric, self.task.baseline
        entry = {"step": self.step, "epoch": round(self.step / self.steps_per_epoch, 4), "validation_loss": result["loss"],
                 f"validation_{metric}": result[metric], "prior_loss": baseline}
        self.checks.append(entry)
        print(f"train {self.name}: step {self.step}, validation loss {result['loss']:.4f} (prior {baseline:.4f}), "
              f"{metric} {result[metric]:.4f}", file=sys.stderr)
        if not self.best or result["loss"] < self.best["entry"]["validation_loss"]:
            self.best = {"entry": entry, "state": {k: v.detach().clone() for k, v in self.model.state_dict().items()}
                         if self.config.select == "best" else None}
        passes_since_best = len(self.checks) - 1 - self.checks.index(self.best["entry"])
        self.stopped_early = self.config.patience is not None and passes_since_best >= self.config.patience

    def summary(self) -> dict[str, Any]:
        """reranker.json's account of the run: steps, losses, the selected pass and throughput."""
        metric, seconds, checks = self.task.metric, self.train_seconds, self.checks
        chosen = self.best.get("entry") if self.config.select == "best" and self.best else (checks[-1] if checks else None)
        return {
            "steps": self.step, "planned_steps": self.total_steps, "stopped_early": self.stopped_early,
            "pairs": len(self.task.data.ids), "final_loss": self.log[-1]["loss"],
            "validation": None if chosen is None else {
                "selected_step": chosen["step"], "loss": chosen["validation_loss"], metric: chosen[f"validation_{metric}"],
                "prior_loss": self.task.baseline, "untrained_loss": checks[0]["validation_loss"],
                f"untrained_{metric}": checks[0][f"validation_{metric}"], "last_loss": checks[-1]["validation_loss"],
                "pairs": len(self.task.held_out.ids), "select": self.config.select},
            "throughput": {
                "pairs_per_second": round(self.pairs_seen / seconds, 2) if seconds else None,
                "tokens_per_second": round(self.tokens_seen / seconds, 1) if seconds else None,
                "padding_fraction": round(1 - self.tokens_seen / self.padded_seen, 4) if self.padded_seen else None,
                "threads": torch.get_num_threads() if self.device.type == "cpu" else None},
        }
