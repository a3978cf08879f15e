"""Pre-training data from a corpus alone (no judgments): masked-language-model and next-sentence examples.

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

from reranker.formats.errors import InputError

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
