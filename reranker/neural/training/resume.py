"""What a checkpoint depends on (a complete one with the same inputs is not retrained), the state a
killed run resumes from, and the seeded, deterministic mode training runs in."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import random
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reranker.core import hardware
from reranker.formats.atomic import atomic_write
from reranker.neural import models


def checkpoint_inputs(meta: Mapping[str, Any]) -> dict[str, Any]:
    """What a checkpoint depends on: base weights, hyper-parameters, data (by content, not path)."""
    return {
        "base_fingerprint": meta.get("base_fingerprint"),
        "training": meta.get("training"),
        "sources": [{key: source.get(key) for key in ("name", "sha256", "train_qids", "relevant_min_grade")}
                    for source in meta.get("sources", [])],
    }


def inputs_key(meta: Mapping[str, Any]) -> str:
    """A digest of what a checkpoint depends on: a resume state is used only for the same inputs."""
    return hashlib.sha256(json.dumps(checkpoint_inputs(meta), sort_keys=True, default=str).encode()).hexdigest()


def resume_path(out_dir: str | os.PathLike) -> Path:
    """Where training keeps its state between checks (beside the checkpoint, removed once it is published)."""
    out_dir = Path(out_dir)
    return out_dir.with_name(out_dir.name + ".resume.pt")


def write_resume(path: Path, state: dict[str, Any]) -> None:
    """Written beside and renamed: a kill, or a full disk, while saving leaves the previous state intact."""
    with atomic_write(path, binary=True) as f:  # makes the folder: a chain's stages live in the checkpoint's
        torch.save(state, f)


def load_resume(path: Path, key: str) -> dict[str, Any] | None:
    """The saved state for these inputs, or None (absent, unreadable, or from other inputs: then removed)."""
    if not path.exists():
        return None
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
    except Exception as err:  # noqa: BLE001 (a truncated file from an older version: start over)
        print(f"{path}: unreadable resume state ({type(err).__name__}), training from the start", file=sys.stderr)
        state = None
    if state is None or state.get("key") != key:
        path.unlink(missing_ok=True)
        return None
    return state


def is_complete(out_dir: str | os.PathLike) -> bool:
    return bool(models.read_meta(out_dir).get("complete")) if Path(out_dir).is_dir() else False


@contextlib.contextmanager
def deterministic(seed: int) -> Iterator[None]:
    """Seed python, numpy and torch; deterministic torch kernels for the duration, and cuDNN's attention
    off as in scoring (hardware.disable_cudnn_attention says why). PyTorch's own flash and
    memory-efficient attention still warn that their backward pass is not deterministic; 20 steps run
    twice from one seed were bit-identical on an H200, with cuDNN's attention on and off
    (results/benchmarks/gpu_train_throughput*.json)."""
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    previous = torch.are_deterministic_algorithms_enabled()
    torch.use_deterministic_algorithms(True, warn_only=True)
    cudnn_attention = hardware.disable_cudnn_attention()
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous)
        torch.backends.cuda.enable_cudnn_sdp(cudnn_attention)
