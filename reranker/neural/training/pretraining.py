"""Pre-training from a corpus alone (no judgments): masked-language-model and next-sentence examples, a
source's documents as training tasks read them, and the masked-LM loss and held-out pass.

Used by the train stage's `task: mlm` and `task: nsp` (Verbrugge 2021's inductive transfer). Documents
are split by a seeded `pretrain_fraction` into training and held-out documents, so held-out token
accuracy (MLM) and loss (NSP) are measured on text the model never trained on.

MLM masks `mask_probability` of each document's tokens once, seeded (static masking), with BERT's
80/10/10 rule ([MASK] / a random token / the token itself). `consecutive` masks runs of
`SPAN` tokens instead of single tokens, for the same share.

NSP pair constructions (`NSP_PAIRS`), label 1 = B follows A or belongs to A's document:
- random_sentence: per document one random sentence A, with its next sentence or, half of the
  time, a sentence of another document;
- all_sentences: every consecutive sentence pair of a document, each with one random negative;
- title_half: the title as A, with one sentence of the document or (half of the time) of another;
- title_all: the title as A, with every sentence of the document, each with one random negative.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import torch

from reranker.formats.docs import iter_docs
from reranker.formats.errors import InputError
from reranker.formats.text import file_sha256
from reranker.neural.training.encoding import Encoded, collate
from reranker.neural.training.pairs import Examples, TrainingPair, capped
from reranker.neural.training.settings import Source, TrainingConfig

NSP_PAIRS = ("random_sentence", "all_sentences", "title_half", "title_all")
SPAN = 3  # tokens per masked run with consecutive masking
IGNORE = -100  # labels of unmasked tokens (PyTorch's cross-entropy ignore_index)


def split_documents(doc_ids: Sequence[str], fraction: float, seed: int) -> tuple[list[str], list[str]]:
    """A seeded `fraction` of the documents for training, the rest held out (both in input order)."""
    chosen = set(random.Random(f"{seed}/pretrain").sample(list(doc_ids), round(len(doc_ids) * fraction)))
    return [d for d in doc_ids if d in chosen], [d for d in doc_ids if d not in chosen]


class Masked(NamedTuple):
    ids: list[list[int]]
    labels: list[list[int]]  # the original token where masked, IGNORE elsewhere


def mask_tokens(tokenizer: Any, texts: Sequence[str], max_length: int, probability: float, consecutive: bool,
                seed: int) -> Masked:
    """Each text tokenised (with [CLS] and [SEP]) and masked once, seeded per text."""
    encoded = tokenizer(list(texts), truncation=True, max_length=max_length)["input_ids"]
    special = set(tokenizer.all_special_ids)
    vocabulary = tokenizer.vocab_size
    all_ids, all_labels = [], []
    for number, ids in enumerate(encoded):
        rng = random.Random(f"{seed}/mask/{number}")
        positions = [i for i, token in enumerate(ids) if token not in special]
        count = max(1, round(len(positions) * probability)) if positions else 0
        chosen: set[int] = set()
        if consecutive:
            starts = list(range(0, max(1, len(positions) - SPAN + 1)))
            rng.shuffle(starts)
            for start in starts:
                if len(chosen) >= count:
                    break
                chosen.update(positions[start:start + SPAN][:count - len(chosen)])
        else:
            chosen = set(rng.sample(positions, count))
        masked, labels = list(ids), [IGNORE] * len(ids)
        for i in sorted(chosen):
            labels[i] = ids[i]
            roll = rng.random()
            if roll < 0.8:
                masked[i] = tokenizer.mask_token_id
            elif roll < 0.9:
                masked[i] = rng.randrange(vocabulary)
        all_ids.append(masked)
        all_labels.append(labels)
    return Masked(all_ids, all_labels)


def sentences(text: str) -> list[str]:
    """The segment stage's pysbd sentences (whitespace collapsed, punctuation-only pieces dropped), bounded
    in time on a very long text."""
    from reranker.formats.segments import SentenceSplitter

    return SentenceSplitter().split(text)


class SentencePair(NamedTuple):
    doc_id: str
    first: str
    second: str
    label: int  # 1: B follows A (or is of A's document); 0: B is from another document


def nsp_pairs(documents: Mapping[str, tuple[str, str]], construction: str, seed: int) -> list[SentencePair]:
    """Next-sentence pairs of `documents` ({doc_id: (title, text)}), in document order, seeded."""
    if construction not in NSP_PAIRS:
        raise InputError(f"nsp_pairs must be one of {', '.join(NSP_PAIRS)}, not {construction!r}")
    split = {doc_id: sentences(text) for doc_id, (_, text) in documents.items()}
    ids = [doc_id for doc_id in documents if split[doc_id]]
    if len(ids) < 2:
        raise InputError("next-sentence pairs need at least two documents with sentences")
    rng = random.Random(f"{seed}/nsp/{construction}")

    def other_sentence(doc_id: str) -> str:
        other = doc_id
        while other == doc_id:
            other = rng.choice(ids)
        return rng.choice(split[other])

    pairs = []
    for doc_id in ids:
        title, parts = documents[doc_id][0] or parts_title(split[doc_id]), split[doc_id]
        if construction == "random_sentence":
            if len(parts) < 2:
                continue
            i = rng.randrange(len(parts) - 1)
            pairs.append(SentencePair(doc_id, parts[i], parts[i + 1], 1) if rng.random() < 0.5
                         else SentencePair(doc_id, parts[i], other_sentence(doc_id), 0))
        elif construction == "all_sentences":
            for first, second in zip(parts, parts[1:]):
                pairs += [SentencePair(doc_id, first, second, 1), SentencePair(doc_id, first, other_sentence(doc_id), 0)]
        elif construction == "title_half":
            pairs.append(SentencePair(doc_id, title, rng.choice(parts), 1) if rng.random() < 0.5
                         else SentencePair(doc_id, title, other_sentence(doc_id), 0))
        else:
            for sentence in parts:
                pairs += [SentencePair(doc_id, title, sentence, 1), SentencePair(doc_id, title, other_sentence(doc_id), 0)]
    return pairs


def parts_title(parts: Sequence[str]) -> str:
    """A document without a title: its first sentence stands in."""
    return parts[0]


def _corpus(source: Source) -> tuple[dict[str, tuple[str, str]], dict[str, Any]]:
    """All documents of a source, and the record of what a pre-training checkpoint read."""
    docs = {doc.doc_id: (doc.title, doc.text) for _, doc in iter_docs(source.docs)}
    record = {"name": source.name, "files": {"docs": str(source.docs)}, "sha256": {"docs": file_sha256(source.docs)},
              "train_qids": None, "relevant_min_grade": None, "documents": len(docs)}
    return docs, record


def load_nsp_source(source: Source, config: TrainingConfig) -> Examples:
    """Next-sentence pairs of a source's documents: pairs from `pretrain_fraction` of them, validation from the rest."""
    docs, record = _corpus(source)
    trained, held = split_documents(list(docs), config.pretrain_fraction, config.seed)
    texts: dict[str, str] = {}

    def as_pairs(doc_ids: Sequence[str]) -> list[TrainingPair]:
        pairs = []
        for number, pair in enumerate(nsp_pairs({d: docs[d] for d in doc_ids}, config.nsp_pairs, config.seed)):
            first, second = f"{pair.doc_id}/{number}/a", f"{pair.doc_id}/{number}/b"
            texts[first], texts[second] = pair.first, pair.second
            pairs.append(TrainingPair(first, second, pair.label, pair.label))
        return pairs

    pairs, validation = capped(as_pairs(trained), config), capped(as_pairs(held), config)
    record.update(pairs=len(pairs), positives=sum(p.label for p in pairs), validation_pairs=len(validation),
                  nsp_pairs=config.nsp_pairs, levels=[0, 1])
    return Examples(pairs, validation, texts, texts, record)


def load_mlm_source(source: Source, config: TrainingConfig, tokenizer: Any) -> Examples:
    """A source's documents, masked: `pretrain_fraction` to train on, the rest held out (Encoded, not pairs)."""
    docs, record = _corpus(source)
    trained, held = split_documents(list(docs), config.pretrain_fraction, config.seed)

    def masked(doc_ids: Sequence[str], offset: int) -> Encoded:
        texts = [" ".join(part for part in docs[d] if part) for d in doc_ids]
        result = mask_tokens(tokenizer, texts, config.max_length, config.mask_probability, config.consecutive_masking,
                             config.seed + offset)
        return Encoded(result.ids, [[0] * len(ids) for ids in result.ids], torch.empty(0), list(doc_ids),
                       token_labels=result.labels)

    train_part, held_part = masked(capped(trained, config), 0), masked(capped(held, config), 1)
    record.update(pairs=len(trained), validation_pairs=len(held), mask_probability=config.mask_probability,
                  consecutive_masking=config.consecutive_masking,
                  masked_tokens=sum(label != IGNORE for labels in train_part.token_labels for label in labels))
    return Examples(train_part, held_part, {}, {}, record)


def _padded_labels(encoded: Encoded, rows: Sequence[int], device: torch.device) -> torch.Tensor:
    width = max(len(encoded.token_labels[i]) for i in rows)
    return torch.tensor([encoded.token_labels[i] + [IGNORE] * (width - len(encoded.token_labels[i])) for i in rows],
                        device=device)


def masked_lm_loss(logits: torch.Tensor, encoded: Encoded, rows: Sequence[int], device: torch.device) -> torch.Tensor:
    labels = _padded_labels(encoded, rows, device)
    return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), labels.flatten(), ignore_index=IGNORE)


def validate_masked_lm(model: Any, encoded: Encoded, pad_id: int, device: torch.device, dtype: torch.dtype,
                       batch_size: int = 64) -> dict[str, float]:
    """Held-out masked-LM loss and token accuracy (the share of masked tokens predicted exactly)."""
    was_training = model.training
    model.eval()
    total_loss, correct, count = 0.0, 0, 0
    with torch.inference_mode(), torch.autocast(device.type, dtype=dtype, enabled=dtype != torch.float32):
        for start in range(0, len(encoded.ids), batch_size):
            rows = list(range(start, min(start + batch_size, len(encoded.ids))))
            logits = model(**collate(encoded, rows, pad_id, device)).logits.float()
            labels = _padded_labels(encoded, rows, device)
            kept = labels != IGNORE
            total_loss += float(torch.nn.functional.cross_entropy(logits[kept], labels[kept], reduction="sum"))
            correct += int((logits[kept].argmax(dim=-1) == labels[kept]).sum())
            count += int(kept.sum())
    model.train(was_training)
    return {"loss": total_loss / max(count, 1), "accuracy": correct / max(count, 1)}
