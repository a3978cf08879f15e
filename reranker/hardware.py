"""What the machine offers: CPU model and flags, usable threads, and the fast half-precision type.

Shared by the stages that run a model (train, score): bf16 is used only where the hardware computes
it (AMX or avx512_bf16 on a CPU, or a GPU); elsewhere it would be emulated, slower than fp32.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import torch

from reranker.formats.errors import InputError

PRECISIONS = ("exact", "fast")
CPU_BF16_FLAGS = ("amx_bf16", "avx512_bf16")


class PrecisionNotApplicable(InputError, RuntimeError):
    """A precision the hardware cannot run (e.g. bf16 on a CPU without it)."""


def cpu_info() -> dict[str, Any]:
    """CPU model name and flags from /proc/cpuinfo (empty on systems without it)."""
    model, flags = "unknown", set()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and model == "unknown":
                model = value.strip()
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    return {"model": model, "flags": flags}


def cpu_threads() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def has_fast_half(device: torch.device) -> bool:
    """Whether `device` computes bf16 (or fp16 on older GPUs) natively."""
    return device.type == "cuda" or any(flag in cpu_info()["flags"] for flag in CPU_BF16_FLAGS)


def compute_dtype(precision: str, device: torch.device) -> torch.dtype:
    """fp32 for exact; the hardware's fast half type, or PrecisionNotApplicable with the reason."""
    if precision == "exact":
        return torch.float32
    if precision != "fast":
        raise InputError(f"precision must be one of {', '.join(PRECISIONS)}, not {precision!r}")
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    if not has_fast_half(device):
        info = cpu_info()
        raise PrecisionNotApplicable(
            f"fast precision needs bf16 arithmetic, but this CPU ({info['model']}) has neither "
            f"{' nor '.join(CPU_BF16_FLAGS)}; bf16 would be emulated in software, slower than fp32. "
            "Use --precision exact.")
    return torch.bfloat16


def resolve_precision(precision: str, device: torch.device) -> str:
    """`auto` is `fast` where the hardware has a fast half type, else `exact`."""
    if precision == "auto":
        return "fast" if has_fast_half(device) else "exact"
    if precision not in PRECISIONS:
        raise InputError(f"precision must be auto or one of {', '.join(PRECISIONS)}, not {precision!r}")
    return precision
