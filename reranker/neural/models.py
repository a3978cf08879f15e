"""Load relevance classifiers: fetched Hugging Face ids, local directories, fine-tuned checkpoints.

A classifier maps ([CLS] query [SEP] text [SEP]) to logits; `relevant_index` says which logit
means "relevant". Birch's checkpoints are BertForNextSentencePrediction models whose index 1 is
the relevant class (Birch kept the raw logit `predictions[:, 1]`). Plain encoders such as
all-MiniLM-L6-v2 get a freshly initialised two-way head, seeded so that it is reproducible.

Heads (`HEADS`): `sequence_classification` reads BERT's [CLS] pooler, as BERT was pre-trained;
`mean_pooling` reads the mean of the last layer's token vectors, as sentence-transformers encoders
were trained (their [CLS] vector carries little: in all-MiniLM-L6-v2's first layers it is the same
for every input); `next_sentence_prediction` is BERT's NSP head (Birch's checkpoints). A base
without a recorded head gets the head of the pooling it was trained with (`base_pooling`:
sentence-transformers' `modules.json` and `1_Pooling/config.json`), else [CLS]. `bi_encoder` is no
classifier: the plain encoder, whose score is the cosine of the mean-pooled query and text vectors
(not Birch's method); zero-shot it is a reference row, and fine-tuned it trains as a two-way
classifier of that cosine (`CosineClassifier`) and is saved as a plain encoder again.

Each head is one `Loader` (`LOADERS`, keyed by the registry's names): how its model is built from a
checkpoint, and what it outputs.

Fine-tuned checkpoints are HF-format directories with a `reranker.json` beside the weights that
records the head and the relevant index.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from reranker.core import registry
from reranker.formats.errors import InputError

META_FILE = "reranker.json"
HEADS = tuple(registry.HEADS)


class CheckpointError(InputError, RuntimeError):
    """A checkpoint that is missing, partial or not what its config says."""


@dataclass
class Classifier:
    model: Any  # a transformers PreTrainedModel in eval mode
    tokenizer: Any
    relevant_index: int
    head: str
    source: str  # the id or directory it came from
    fingerprint: str  # the weights and how a score is read from them (head, relevant_index)
    weights_fingerprint: str = ""  # the weights and head alone: what the logits depend on

    @property
    def n_logits(self) -> int:
        if isinstance(self.model, CosineClassifier):  # a bi-encoder in training: two-way
            return 2
        return head_outputs(self.head, self.model.config)

    @property
    def max_length(self) -> int:
        return int(min(getattr(self.tokenizer, "model_max_length", 512) or 512, self.model.config.max_position_embeddings))


def check_length(classifier: Classifier, max_length: int | None) -> None:
    """A pair length within the model's position embeddings: past them the forward pass ends in an index error."""
    positions = classifier.model.config.max_position_embeddings
    if max_length is not None and max_length > positions:
        raise CheckpointError(f"max_length {max_length} is longer than {classifier.source} can read (its "
                              f"max_position_embeddings is {positions}): give {positions} or less")


def head_outputs(head: str, config: Any) -> int:
    """Outputs of a head: NSP's two, a bi-encoder's one (its cosine), else the classifier's labels."""
    loader = LOADERS.get(head)
    return (loader.outputs if loader else None) or int(config.num_labels)


def read_meta(directory: str | os.PathLike) -> dict:
    path = Path(directory) / META_FILE
    if path.exists():
        try:
            meta = json.loads(path.read_text(encoding="utf-8"))
        except (json.JSONDecodeError, UnicodeDecodeError) as err:
            raise CheckpointError(f"{path}: not JSON ({err}): the checkpoint is damaged; {DAMAGED_FIX}") from None
        if not isinstance(meta, dict):
            raise CheckpointError(f"{path}: not a JSON object: the checkpoint is damaged; {DAMAGED_FIX}")
        return meta
    return {}


def write_meta(directory: str | os.PathLike, meta: dict) -> None:
    Path(directory, META_FILE).write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")


OFFLINE_FIX = "Offline? Point HF_HOME at a cache that holds it (HF_HUB_OFFLINE=1), or give a local directory."
DAMAGED_FIX = "train or fetch it again (remove the folder first)"


def load_tokenizer(model: str) -> Any:
    """A checkpoint's tokenizer alone (the segment stage's token budget); one that cannot be read is a CheckpointError."""
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(resolve_source(model))
    except OSError as err:
        raise CheckpointError(f"cannot load the tokenizer of {model!r}: {err}\n{OFFLINE_FIX}") from err


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


def _checkpoint_file(source: str, name: str) -> Path | None:
    """A file of a local checkpoint or of a hub id (from the HF cache when offline); None if it has none."""
    if Path(source).is_dir():
        path = Path(source) / name
        return path if path.is_file() else None
    from transformers.utils import cached_file

    try:
        found = cached_file(source, name, _raise_exceptions_for_missing_entries=False,
                            _raise_exceptions_for_connection_errors=False)
    except OSError:
        return None
    return Path(found) if found else None


def base_pooling(source: str) -> str | None:
    """The pooling a sentence-transformers checkpoint was trained with ("mean", "cls", "max", ...), else None."""
    modules_file = _checkpoint_file(source, "modules.json")
    if modules_file is None:
        return None
    for module in json.loads(modules_file.read_text()):
        if str(module.get("type", "")).endswith("Pooling"):
            config_file = _checkpoint_file(source, f"{module.get('path', '1_Pooling')}/config.json")
            if config_file is None:
                return None
            config = json.loads(config_file.read_text())
            if "pooling_mode" in config:  # newer sentence-transformers write the mode by name
                return str(config["pooling_mode"]).removesuffix("_token").removesuffix("_tokens")
            modes = [key.removeprefix("pooling_mode_").removesuffix("_token").removesuffix("_tokens")
                     for key, value in config.items() if key.startswith("pooling_mode_") and value is True]
            return modes[0] if len(modes) == 1 else "+".join(sorted(modes)) or None
    return None


def default_head(source: str) -> str:
    """The head that matches how `source` was trained: its sentence-transformers pooling, else [CLS]."""
    pooling = base_pooling(source)
    if pooling is None:
        return "sequence_classification"
    if pooling not in POOLING_HEADS:
        raise CheckpointError(f"{source} was trained with {pooling!r} pooling, which has no head here "
                              f"({', '.join(POOLING_HEADS)}); give the head explicitly")
    return POOLING_HEADS[pooling]


def mean_pool(hidden: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
    """Mean of the token vectors that the mask keeps (sentence-transformers' mean pooling)."""
    mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)


@functools.cache
def mean_pooled_class() -> type:
    """BertForMeanPooledClassification, built on first use (importing transformers is slow)."""
    from transformers import BertModel, BertPreTrainedModel
    from transformers.modeling_outputs import SequenceClassifierOutput

    class BertForMeanPooledClassification(BertPreTrainedModel):
        """BERT with a linear head on the mean of the last layer's token vectors (dropout as BERT's head)."""

        def __init__(self, config: Any):
            super().__init__(config)
            self.num_labels = config.num_labels
            self.bert = BertModel(config, add_pooling_layer=False)
            dropout = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
            self.dropout = torch.nn.Dropout(dropout)
            self.classifier = torch.nn.Linear(config.hidden_size, config.num_labels)
            self.post_init()

        def forward(self, input_ids: torch.Tensor | None = None, attention_mask: torch.Tensor | None = None,
                    token_type_ids: torch.Tensor | None = None, **kwargs: Any) -> Any:
            if attention_mask is None:
                attention_mask = torch.ones_like(input_ids)
            hidden = self.bert(input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids,
                               return_dict=True).last_hidden_state
            return SequenceClassifierOutput(logits=self.classifier(self.dropout(mean_pool(hidden, attention_mask))))

    return BertForMeanPooledClassification


class CosineClassifier(torch.nn.Module):
    """A bi-encoder fine-tuned as a two-way classifier: of a tokenised pair (`[CLS] query [SEP] text [SEP]`)
    the query and the text are encoded each alone (`[CLS] text [SEP]`, as the bi-encoder encodes them when it
    scores), mean-pooled and normalised; `classifier`, a linear map of their cosine, gives the logits (its
    relevant log-odds an affine map of the cosine, so it ranks as the cosine does). Saved, it is the plain
    encoder again (`save_pretrained`), scored by cosine like any bi-encoder."""

    def __init__(self, encoder: Any, cls_id: int, pad_id: int):
        super().__init__()
        self.encoder = encoder
        self.classifier = torch.nn.Linear(1, 2)
        self.cls_id, self.pad_id = cls_id, pad_id
        with torch.no_grad():  # cosine itself as the log-odds until it is calibrated
            self.classifier.weight.copy_(torch.tensor([[0.0], [1.0]]))
            self.classifier.bias.zero_()

    @property
    def config(self) -> Any:
        return self.encoder.config

    def save_pretrained(self, directory: str | os.PathLike) -> None:
        self.encoder.save_pretrained(directory)

    def vectors(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        hidden = self.encoder(input_ids=ids, attention_mask=mask, token_type_ids=torch.zeros_like(ids)).last_hidden_state
        return torch.nn.functional.normalize(mean_pool(hidden.float(), mask), dim=1)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor, token_type_ids: torch.Tensor,
                **kwargs: Any) -> Any:
        from transformers.modeling_outputs import SequenceClassifierOutput

        mask = attention_mask.bool()
        query_len = (mask & (token_type_ids == 0)).sum(dim=1)  # [CLS] query [SEP]: a prefix
        text_len = (mask & (token_type_ids == 1)).sum(dim=1)  # text [SEP], after it
        positions = torch.arange(int(query_len.max()), device=input_ids.device)
        query_mask = positions[None, :] < query_len[:, None]
        query_ids = input_ids[:, :positions.numel()].masked_fill(~query_mask, self.pad_id)
        # The text from the query's [SEP] on, that [SEP] replaced by [CLS]: `[CLS] text [SEP]`.
        positions = torch.arange(int(text_len.max()) + 1, device=input_ids.device)
        index = (query_len[:, None] - 1 + positions[None, :]).clamp(max=input_ids.shape[1] - 1)
        text_mask = positions[None, :] <= text_len[:, None]
        text_ids = input_ids.gather(1, index).masked_fill(~text_mask, self.pad_id)
        text_ids[:, 0] = self.cls_id
        cosine = (self.vectors(query_ids, query_mask.long()) * self.vectors(text_ids, text_mask.long())).sum(dim=1)
        return SequenceClassifierOutput(logits=self.classifier(cosine[:, None]))


def as_cosine_classifier(classifier: Classifier) -> Classifier:
    """A bi-encoder made trainable as a two-way classifier (CosineClassifier; relevant index 1)."""
    if classifier.head != "bi_encoder":
        raise CheckpointError(f"{classifier.source}: only a bi_encoder head trains as a cosine classifier")
    tokenizer = classifier.tokenizer
    model = CosineClassifier(classifier.model, tokenizer.cls_token_id, tokenizer.pad_token_id or 0)
    model.to(next(classifier.model.parameters()).device)
    return dataclasses.replace(classifier, model=model, relevant_index=1)


def load_masked_lm(model: str, num_layers: int | None = None, device: str | torch.device = "cpu") -> Classifier:
    """An encoder with a masked-LM head, for pre-training (a base without one gets a fresh head, tied to its embeddings)."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer

    source = resolve_source(model)
    overrides = {"num_hidden_layers": num_layers} if num_layers is not None else {}
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        net = AutoModelForMaskedLM.from_pretrained(source, **overrides)
    except OSError as err:
        raise CheckpointError(f"cannot load checkpoint {model!r}: {err}") from err
    net.to(device)
    meta = read_meta(source) if Path(source).exists() else {}
    head = meta.get("head") or default_head(source)  # the ranking head a fine-tune from this checkpoint gets
    weights = fingerprint(net, head="masked_lm")
    return Classifier(net, tokenizer, 0, head, source, weights, weights)


@dataclass(frozen=True)
class Loader:
    """A head: how its model is built from a checkpoint (`load(source, meta, overrides)`, called once the
    seed is set), and what it outputs and reads."""

    load: Callable[[str, dict, dict[str, Any]], Any]
    outputs: int | None = None  # fixed outputs; None: the classifier's num_labels
    pooling: str = "cls"  # what the classifier reads: [CLS] ("cls") or every token ("mean")

    @property
    def sized(self) -> bool:
        """A linear classifier (no fixed outputs): `num_labels` sizes it and `fresh_head` initialises it anew."""
        return self.outputs is None


def _sequence_classification(source: str, meta: dict, overrides: dict[str, Any]) -> Any:
    from transformers import AutoModelForSequenceClassification

    if not meta.get("num_labels"):  # a fetched classifier keeps its own labels; an encoder gets two
        from transformers import AutoConfig

        config = AutoConfig.from_pretrained(source)
        if getattr(config, "architectures", None) and any("SequenceClassification" in a for a in config.architectures):
            overrides.setdefault("num_labels", config.num_labels)
        else:
            overrides.setdefault("num_labels", 2)
    return AutoModelForSequenceClassification.from_pretrained(source, **overrides)


def _mean_pooling(source: str, meta: dict, overrides: dict[str, Any]) -> Any:
    overrides.setdefault("num_labels", int(meta.get("num_labels") or 2))
    return mean_pooled_class().from_pretrained(source, **overrides)


def _next_sentence_prediction(source: str, meta: dict, overrides: dict[str, Any]) -> Any:
    from transformers import BertForNextSentencePrediction

    return BertForNextSentencePrediction.from_pretrained(source, **overrides)


def _bi_encoder(source: str, meta: dict, overrides: dict[str, Any]) -> Any:
    from transformers import AutoModel

    return AutoModel.from_pretrained(source, add_pooling_layer=False, **overrides)


# One loader per name of registry.HEADS (tests/test_registry.py holds the two lists together).
LOADERS: dict[str, Loader] = {
    "sequence_classification": Loader(_sequence_classification),
    "mean_pooling": Loader(_mean_pooling, pooling="mean"),
    "next_sentence_prediction": Loader(_next_sentence_prediction, outputs=2),
    "bi_encoder": Loader(_bi_encoder, outputs=1, pooling="mean"),
}
# sentence-transformers pooling -> the sized head that pools so ({"cls": "sequence_classification", "mean": "mean_pooling"})
POOLING_HEADS = {loader.pooling: head for head, loader in LOADERS.items() if loader.sized}


def load_classifier(model: str, head: str | None = None, relevant_index: int | None = None,
                    num_layers: int | None = None, seed: int = 0, device: str | torch.device = "cpu",
                    num_labels: int | None = None, fresh_head: bool = False) -> Classifier:
    """Load a relevance classifier (two-way, one logit, or one per grade level) for scoring or fine-tuning.

    `num_labels` (for fine-tuning) sizes the head; a head of another size, or any head with
    `fresh_head`, is initialised anew (seeded) while the encoder is carried over.
    """
    from transformers import AutoTokenizer

    source = resolve_source(model)
    meta = read_meta(source) if Path(source).exists() else {}
    head = head or meta.get("head") or default_head(source)
    if head not in HEADS:
        raise CheckpointError(f"unknown head {head!r}; use one of {', '.join(HEADS)}")
    loader = LOADERS[head]
    overrides: dict[str, Any] = {}
    if num_layers is not None:
        overrides["num_hidden_layers"] = num_layers
    if num_labels is not None and loader.sized:
        overrides["num_labels"] = num_labels
        overrides["ignore_mismatched_sizes"] = True  # a head of another size is replaced, not an error
    try:
        tokenizer = AutoTokenizer.from_pretrained(source)
        # Seed before construction: a new head (and a missing pooler) is initialised randomly.
        torch.manual_seed(seed)
        net = loader.load(source, meta, overrides)
    except OSError as err:
        raise CheckpointError(f"cannot load checkpoint {model!r}: {err}\n{OFFLINE_FIX}") from err
    except Exception as err:  # noqa: BLE001 - transformers, safetensors and tokenizers each raise their own
        # a weights file cut short (safetensors' header), a tokenizer file that is not JSON, weights of another shape
        first = str(err).strip().splitlines()[0] if str(err).strip() else ""
        raise CheckpointError(f"cannot load checkpoint {model!r} ({type(err).__name__}: {first[:300]}): it is damaged "
                              f"or incomplete; {DAMAGED_FIX}") from err
    if fresh_head and loader.sized:
        generator = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            weight = torch.randn(net.classifier.weight.shape, generator=generator) * net.config.initializer_range
            net.classifier.weight.copy_(weight)
            net.classifier.bias.zero_()
    net.eval()
    net.to(device)
    n_logits = head_outputs(head, net.config)
    if relevant_index is None:  # a head of a new size: its top grade level (two-way: 1; one output: 0)
        same_head = int(meta.get("num_labels") or 2) == n_logits
        relevant_index = int(meta["relevant_index"]) if same_head and "relevant_index" in meta else n_logits - 1
    if not 0 <= relevant_index < n_logits:
        raise CheckpointError(f"relevant_index {relevant_index} is out of range for a head with {n_logits} logits")
    weights, reading = fingerprints(net, head, relevant_index)
    return Classifier(net, tokenizer, relevant_index, head, source, reading, weights)


def fingerprint(model: Any, **extra: Any) -> str:
    """sha256 of every parameter and buffer (names, shapes, bytes) and of `extra`: what scores depend on."""
    digest = hashlib.sha256()
    digest.update(json.dumps(extra, sort_keys=True).encode())
    for name, tensor in sorted(model.state_dict().items()):
        digest.update(name.encode())
        digest.update(str(tuple(tensor.shape)).encode())
        digest.update(tensor.detach().to("cpu").contiguous().numpy().tobytes())
    return digest.hexdigest()[:16]


def fingerprints(model: Any, head: str, relevant_index: int) -> tuple[str, str]:
    """(weights, reading): the weights and head, hashed once; and that with which logit is read as relevant."""
    weights = fingerprint(model, head=head)
    return weights, hashlib.sha256(json.dumps([weights, relevant_index]).encode()).hexdigest()[:16]


def pick_device(requested: str = "auto") -> torch.device:
    """`auto`: a GPU where torch sees one, else the CPU. A device asked for by name must be one torch can use here:
    found now, not as a traceback when the model first moves (a CPU build's "Torch not compiled with CUDA")."""
    if requested == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(requested)
    except RuntimeError:
        raise InputError(f"--device {requested!r}: not a device torch knows (auto, cpu, cuda, cuda:1, mps)") from None
    if device.type == "cuda":
        count = torch.cuda.device_count() if torch.cuda.is_available() else 0
        if not count:
            build = "a CPU build of torch" if torch.version.cuda is None else f"torch built for CUDA {torch.version.cuda}"
            raise InputError(f"--device {requested}: no CUDA device here ({build}, torch {torch.__version__}); use "
                             "--device cpu or auto, or install a CUDA build of torch on a machine with a GPU")
        if device.index is not None and device.index >= count:
            raise InputError(f"--device {requested}: this machine has {count} CUDA device(s), cuda:0 to cuda:{count - 1}")
    elif device.type == "mps" and not (getattr(torch.backends, "mps", None) and torch.backends.mps.is_available()):
        raise InputError(f"--device {requested}: no Apple GPU (MPS) here; use --device cpu or auto")
    return device


def logits_of(classifier: Classifier, batch: dict[str, torch.Tensor]) -> torch.Tensor:
    """The head's logits for a tokenised batch, shape (batch, n_logits)."""
    out = classifier.model(**batch)
    return out.logits
