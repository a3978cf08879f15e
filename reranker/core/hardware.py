"""What the machine offers: CPU model and flags, usable threads, and the fast half-precision type.

Shared by the stages that run a model (train, score): bf16 is used only where the hardware computes
it (AMX or avx512_bf16 on a CPU, or a GPU); elsewhere it would be emulated, slower than fp32.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from reranker.formats.errors import InputError

if TYPE_CHECKING:
    import torch  # imported where used: the run writers read the CPU without paying for torch

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
    import torch

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


def disable_cudnn_attention() -> bool:
    """Turn cuDNN's attention off for the process (a no-op on a CPU); returns the previous setting, so
    that a caller that only wants it off for a while can restore it. cuDNN plans its kernels for every
    new (batch, length) shape, and bucketed batches are all new shapes: on an H100 bert-base bf16
    scoring fell to 1.9k pairs/s cold with it, against 12k cold and 19-20k warm with PyTorch's own
    flash and memory-efficient kernels; on an H200 MiniLM-L6's first 8 training steps took 4.2 s with
    it and 0.2 s without (results/benchmarks/gpu_train_throughput_cudnn_on.json)."""
    import torch

    previous = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(False)
    return previous


def machine() -> dict[str, Any]:
    """The CPU model, whether it computes bf16, its usable threads and the GPU (or "none")."""
    import torch

    info = cpu_info()
    gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none"
    return {"cpu": info["model"], "cpu_bf16": any(flag in info["flags"] for flag in CPU_BF16_FLAGS),
            "threads": cpu_threads(), "gpu": gpu}


def _nvml_energy_mj(index: int) -> int | None:
    """Total energy the GPU has used since the driver loaded, in mJ; None without NVML or support."""
    try:
        import pynvml  # nvidia-ml-py, optional
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        try:
            return int(pynvml.nvmlDeviceGetTotalEnergyConsumption(pynvml.nvmlDeviceGetHandleByIndex(index)))
        finally:
            pynvml.nvmlShutdown()
    except pynvml.NVMLError:
        return None


class DeviceUsage:
    """What a stage used on its device: the GPU's name, peak memory and, where NVML reports it, energy.

    Start it before the work and `record()` after. On a CPU every field says "none", never zero, so
    a table cannot mistake a CPU run for a GPU run that used nothing."""

    NONE = {"gpu": "none", "gpu_peak_memory_mib": "none", "gpu_energy_joules": "none"}

    def __init__(self, device: torch.device):
        import torch

        self.device = device
        self.cuda = device.type == "cuda"
        if self.cuda:
            self.index = device.index if device.index is not None else torch.cuda.current_device()
            torch.cuda.reset_peak_memory_stats(self.index)
            self.energy_start = _nvml_energy_mj(self.index)

    def record(self) -> dict[str, Any]:
        if not self.cuda:
            return dict(self.NONE)
        import torch

        energy_end = _nvml_energy_mj(self.index)
        energy = (round((energy_end - self.energy_start) / 1000, 1)
                  if energy_end is not None and self.energy_start is not None else "none")
        return {"gpu": torch.cuda.get_device_name(self.index),
                "gpu_peak_memory_mib": round(torch.cuda.max_memory_allocated(self.index) / 2**20, 1),
                "gpu_energy_joules": energy}


def combine_usage(records: list[dict[str, Any] | None]) -> dict[str, Any]:
    """Parts of one stage (score --part): the largest peak and the summed energy; "none" where any part lacks it."""
    records = [record or DeviceUsage.NONE for record in records]
    gpus = sorted({str(record["gpu"]) for record in records} - {"none"})
    if not gpus:
        return dict(DeviceUsage.NONE)

    def numbers(key: str) -> list[float] | None:
        values = [record[key] for record in records]
        return values if all(isinstance(value, (int, float)) for value in values) else None

    peaks, energies = numbers("gpu_peak_memory_mib"), numbers("gpu_energy_joules")
    return {"gpu": " + ".join(gpus), "gpu_peak_memory_mib": max(peaks) if peaks else "none",
            "gpu_energy_joules": round(sum(energies), 1) if energies else "none"}
