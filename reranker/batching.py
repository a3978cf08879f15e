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


def pad_batch(ids: Sequence[Sequence[int]], types: Sequence[Sequence[int]], pad_id: int,
              device: torch.device) -> dict[str, torch.Tensor]:
    """input_ids, token_type_ids and attention_mask (int64) of a batch, on `device`."""
    width = max(map(len, ids))
    input_ids = np.full((len(ids), width), pad_id, dtype=np.int64)
    token_types = np.zeros((len(ids), width), dtype=np.int64)
    mask = np.zeros((len(ids), width), dtype=np.int64)
    for row, (seq, typ) in enumerate(zip(ids, types)):
        input_ids[row, :len(seq)] = seq
        token_types[row, :len(typ)] = typ
        mask[row, :len(seq)] = 1
    batch = {"input_ids": input_ids, "token_type_ids": token_types, "attention_mask": mask}
    return {name: torch.from_numpy(array).to(device) for name, array in batch.items()}
