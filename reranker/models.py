"""Load relevance classifiers: fetched Hugging Face ids, local directories, fine-tuned checkpoints.

A classifier maps ([CLS] query [SEP] text [SEP]) to logits; `relevant_index` says which logit
means "relevant". Birch's checkpoints are BertForNextSentencePrediction models whose index 1 is
the relevant class (Birch kept the raw logit `predictions[:, 1]`). Plain encoders such as
all-MiniLM-L6-v2 get a freshly initialised two-way head, seeded so that it is reproducible.

Fine-tuned checkpoints are HF-format directories with a `reranker.json` beside the weights that
records the head and the relevant index.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

META_FILE = "reranker.json"
HEADS = ("sequence_classification", "next_sentence_prediction")


class CheckpointError(RuntimeError):
    pass


@dataclass
class Classifier:
    model: Any  # a transformers PreTrainedModel in eval mode
    tokenizer: Any
    relevant_index: int
    head: str
    source: str  # the id or directory it came from
    fingerprint: str

    @property
    def max_length(self) -> int:
        return int(min(getattr(self.tokenizer, "model_max_length", 512) or 512, self.model.config.max_position_embeddings))


def read_meta(directory: str | os.PathLike) -> dict:
    path = Path(directory) / META_FILE
    if path.exists():
        return json.loads(path.read_text())
    return {}


def write_meta(directory: str | os.PathLike, meta: dict) -> None:
    Path(directory, META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


def resolve_source(model: str) -> str:
    """A local directory as it is; otherwise a hub id (served from HF_HOME when offline)."""
    path = Path(model)
    if path.exists():
        if not (path / "config.json").exists():
            raise CheckpointError(f"{path}: not a checkpoint directory (no config.json)")
        return str(path)
    if model.startswith((".", "/")) or os.sep in model.strip("/").replace("/", "", 1):
        raise CheckpointError(f"checkpoint {model!r} not found: no such directory")
    return model


def load_classifier(model: str, head: str | None = None, relevant_index: int | None = None,
                    num_layers: int | None = None, seed: int = 0, device: str | torch.device = "cpu") -> Classifier:
    """Load a two-way (or one-logit) relevance classifier for scoring or fine-tuning."""
    from transformers import (AutoModelForSequenceClassification, AutoTokenizer,
                              BertForNextSentencePrediction)

    source = resolve_source(model)
    meta = read_meta(source) if Path(source).exists() else {}
    head = head or meta.get("head", "sequence_classification")
    if head not in HEADS:
        raise CheckpointError(f"unknown head {head!r}; use one of {', '.join(HEADS)}")
    overrides: dict[str, Any] = {}
    if num_layers is not None:
        overrides["num_hidden_layers"] = num_layers
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        # Seed before construction: a new head (and a missing pooler) is initialised randomly.
        torch.manual_seed(seed)
        if head == "next_sentence_prediction":
            net = BertForNextSentencePrediction.from_pretrained(source, **overrides)
        else:
            if "num_labels" not in meta:
                from transformers import AutoConfig

                config = AutoConfig.from_pretrained(source)
                if getattr(config, "architectures", None) and any("SequenceClassification" in a for a in config.architectures):
                    overrides.setdefault("num_labels", config.num_labels)
                else:
                    overrides.setdefault("num_labels", 2)
            net = AutoModelForSequenceClassification.from_pretrained(source, **overrides)
    except OSError as err:
        raise CheckpointError(
            f"cannot load checkpoint {model!r}: {err}\n"
            "Offline? Point HF_HOME at a cache that holds it (HF_HUB_OFFLINE=1), or give a local directory."
        ) from err
    net.eval()
    net.to(device)
    n_logits = 2 if head == "next_sentence_prediction" else int(net.config.num_labels)
    if relevant_index is None:
        relevant_index = int(meta.get("relevant_index", 1 if n_logits > 1 else 0))
    if not 0 <= relevant_index < n_logits:
        raise CheckpointError(f"relevant_index {relevant_index} is out of range for a head with {n_logits} logits")
    return Classifier(net, tokenizer, relevant_index, head, source,
                      fingerprint(net, head=head, relevant_index=relevant_index))


def fingerprint(model: Any, **extra: Any) -> str:
    """sha256 of every parameter and buffer (names, shapes, bytes) and of `extra`: what scores depend on."""
    digest = hashlib.sha256()
    digest.update(json.dumps(extra, sort_keys=True).encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().to("cpu").contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def pick_device(requested: str = "auto") -> torch.device:
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(requested)


def logits_of(classifier: Classifier, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The head's logits for a tokenised batch, shape (batch, n_logits)."""
    out = classifier.model(**batch)
    return out.logits
