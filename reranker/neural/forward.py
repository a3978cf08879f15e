"""A BERT classifier's forward pass for scoring, cut to what the head reads.

Hugging Face's forward computes every layer for every token. A score needs only the head's logits,
so the encoder runs here, layer by layer on the model's own modules (same weights, same results):
for a [CLS] head (pooler or NSP) the last layer computes keys and values for every token but query,
attention output and feed-forward for [CLS] alone (a third less work for a 3-layer MiniLM); a
mean-pooled head reads every token, so its last layer runs whole. Attention is SDPA with a boolean
mask, and no mask when a batch has no padding (a faster kernel). tests/test_score.py checks it
against the plain Hugging Face forward, pair by pair.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import torch

from reranker.neural.batching import pad_batch, pad_id
from reranker.neural.models import LOADERS, mean_pool


def supports_fast_path(model: Any) -> bool:
    """A BERT classifier that `bert_logits` reproduces: an encoder with absolute positions."""
    from transformers import BertForNextSentencePrediction, BertForSequenceClassification

    from reranker.neural.models import mean_pooled_class

    config = model.config
    return (isinstance(model, (BertForSequenceClassification, BertForNextSentencePrediction, mean_pooled_class()))
            and not config.is_decoder and getattr(config, "position_embedding_type", "absolute") == "absolute")


def _attention(layer: Any, queries: torch.Tensor, hidden: torch.Tensor, mask: torch.Tensor | None) -> torch.Tensor:
    """One BERT self-attention block for the positions in `queries` attending to all of `hidden`."""
    attention = layer.attention.self
    heads, size = attention.num_attention_heads, attention.attention_head_size

    def split(x: torch.Tensor) -> torch.Tensor:
        return x.view(x.shape[0], x.shape[1], heads, size).transpose(1, 2)

    context = torch.nn.functional.scaled_dot_product_attention(
        split(attention.query(queries)), split(attention.key(hidden)), split(attention.value(hidden)),
        attn_mask=mask, scale=attention.scaling)
    context = context.transpose(1, 2).reshape(queries.shape[0], queries.shape[1], heads * size)
    return layer.attention.output(context, queries)


def _feed_forward(layer: Any, hidden: torch.Tensor) -> torch.Tensor:
    return layer.output(layer.intermediate(hidden), hidden)


def bert_logits(model: Any, head: str, batch: Mapping[str, torch.Tensor]) -> torch.Tensor:
    """Logits of a BERT classifier (eval mode), run layer by layer on the model's own modules.

    A [CLS] head (pooler or NSP) reads one position, so the last layer computes query, attention
    output and feed-forward for [CLS] alone; a mean-pooled head reads every token, so it does not.
    """
    mask = batch["attention_mask"]
    # Boolean (batch, 1, 1, length) mask for SDPA; none when nothing is padded (a faster kernel).
    sdpa_mask = None if bool(mask.all()) else mask.bool()[:, None, None, :]
    hidden = model.bert.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
    *layers, last = model.bert.encoder.layer
    for layer in layers:
        hidden = _feed_forward(layer, _attention(layer, hidden, hidden, sdpa_mask))
    if LOADERS[head].pooling == "mean":
        hidden = _feed_forward(last, _attention(last, hidden, hidden, sdpa_mask))
        return model.classifier(mean_pool(hidden, mask))
    cls = _feed_forward(last, _attention(last, hidden[:, :1], hidden, sdpa_mask))
    pooled = model.bert.pooler(cls) if model.bert.pooler is not None else cls[:, 0]
    return (model.classifier if hasattr(model, "classifier") else model.cls)(pooled)


def embed(model: Any, tokenizer: Any, texts: Sequence[str], max_length: int, batch_size: int, device: torch.device,
          dtype: torch.dtype) -> torch.Tensor:
    """Unit-length mean-pooled vectors of single texts (a bi-encoder's), in input order; longest batches first."""
    ids = tokenizer(list(texts), truncation=True, max_length=max_length, return_attention_mask=False)["input_ids"]
    types = [[0] * len(row) for row in ids]
    vectors = torch.empty((len(ids), model.config.hidden_size))
    order = sorted(range(len(ids)), key=lambda i: (-len(ids[i]), i))
    pad = pad_id(tokenizer)
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        for start in range(0, len(order), batch_size):
            rows = order[start:start + batch_size]
            batch = pad_batch([ids[i] for i in rows], [types[i] for i in rows], pad, device)
            hidden = model(**batch).last_hidden_state
            vectors[rows] = mean_pool(hidden.float(), batch["attention_mask"]).cpu()
    return torch.nn.functional.normalize(vectors, dim=1)


def cosines(model: Any, tokenizer: Any, queries: Sequence[str], texts: Sequence[str], max_length: int,
            batch_size: int, device: torch.device, dtype: torch.dtype) -> torch.Tensor:
    """A bi-encoder's cosine of each (query, text) pair; every distinct text is encoded once."""
    query_index = {text: i for i, text in enumerate(dict.fromkeys(queries))}
    text_index = {text: i for i, text in enumerate(dict.fromkeys(texts))}
    query_vectors = embed(model, tokenizer, list(query_index), max_length, batch_size, device, dtype)
    text_vectors = embed(model, tokenizer, list(text_index), max_length, batch_size, device, dtype)
    rows = torch.tensor([query_index[q] for q in queries], dtype=torch.long)
    columns = torch.tensor([text_index[t] for t in texts], dtype=torch.long)
    return (query_vectors[rows] * text_vectors[columns]).sum(dim=1)
