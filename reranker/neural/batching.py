"""(query, text) pairs tokenised once, and batches of them padded to their own longest pair.

Shared by training and scoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import torch


def tokenize_pairs(tokenizer: Any, queries: Sequence[str], texts: Sequence[str], truncation: str,
                   max_length: int) -> tuple[list[list[int]], list[list[int]]]:
    """Token ids and token types of each pair, unpadded; types are 0 where the tokenizer has none."""
    encoded = tokenizer(list(queries), list(texts), truncation=truncation, max_length=max_length,
                        return_attention_mask=False)
    types = encoded.get("token_type_ids") or [[0] * len(ids) for ids in encoded["input_ids"]]
    return encoded["input_ids"], types


def length_batches(lengths: Sequence[int], batch_size: int, batch_tokens: int | None = None) -> list[list[int]]:
    """Indices of pairs in batches of similar length, longest first (memory errors come early).

    A batch holds at most `batch_size` pairs and, with `batch_tokens`, at most that many padded
    tokens (pairs x its longest pair): short pairs fill wide batches, long ones narrow batches, so a
    GPU sees a steady load. A pair longer than `batch_tokens` is a batch of its own.
    """
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    if batch_tokens is None:
        return [order[start:start + batch_size] for start in range(0, len(order), batch_size)]
    batches: list[list[int]] = []
    for index in order:
        if batches and len(batches[-1]) < batch_size and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= batch_tokens:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


def pad_id(tokenizer: Any) -> int:
    """The id batches are padded with: the tokenizer's pad token, else 0 (masked out either way)."""
    return 0 if tokenizer.pad_token_id is None else int(tokenizer.pad_token_id)


def pad_batch(ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]], pad_id: int,
              device: torch.device) -> dict[str, torch.Tensor]:
    """input_ids, token_type_ids and attention_mask (int64) of a batch, on `device`.

    To a GPU the copy is from pinned memory and asynchronous: the next batch is padded while the
    GPU still runs this one."""
    width = max(map(len, ids))
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    token_types = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, (seq, typ) in enumerate(zip(ids, types)):
        input_ids[row, :len(seq)] = seq
        token_types[row, :len(typ)] = typ
        mask[row, :len(seq)] = 1
    batch = {"input_ids": input_ids, "token_type_ids": token_types, "attention_mask": mask}
    if device.type == "cuda":
        return {name: torch.from_numpy(array).pin_memory().to(device, non_blocking=True) for name, array in batch.items()}
    return {name: torch.from_numpy(array).to(device) for name, array in batch.items()}
