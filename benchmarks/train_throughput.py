"""Training throughput on this machine: the train stage's path against the one it replaced.

One run, one model (all-MiniLM-L6-v2 with the mean-pooled two-way head the train stage now puts on
it, seeded), the same real SciFact train pairs for every path: for each query in id order, its
judged documents and 7 documents drawn with the query id as seed, `[CLS] query [SEP] title text
[SEP]` truncated to `--max-length` (192, the default's). A step is forward, backward, gradient
clipping and an AdamW step on a batch of 16, as in reranker.neural.training.loop. Paths:

* `before`: the loop as it was (tokenised per batch, random batches padded to their longest pair, fp32);
* `bucketed_fp32`: tokenised once, length-bucketed batches (reranker.neural.training.encoding.epoch_batches), fp32;
* `after`: the train stage's default: bucketed, and bf16 autocast with fp32 master weights where
  the CPU has bf16 arithmetic (AMX or avx512_bf16), else fp32 (and the JSON says so).

Each path runs `--steps` timed steps (after 2 untimed warm-up steps) in each of `--repeats`
interleaved rounds; the speed-up is the median over rounds of the within-round ratio, since other
jobs on a shared machine come and go. Writes results/benchmarks/train_throughput.json.

    python benchmarks/train_throughput.py [--steps 24] [--repeats 2] [--max-length 192]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import platform
import random
import statistics
import time
from pathlib import Path

import torch

from reranker.core import hardware
from reranker.neural import models
from reranker.neural.training.encoding import collate, encode_texts, epoch_batches
from reranker.neural.training.loop import CLIP_NORM, optimizer_for
from reranker.neural.training.settings import TrainingConfig

REPO = Path(__file__).resolve().parent.parent
BASE = "sentence-transformers/all-MiniLM-L6-v2"
TARGET = 3.0  # the goal: 3x today's pairs/s at the same max length
BATCH = 16


def scifact_rows(count: int, seed: int = 0, negatives_unjudged: bool = False) -> list[dict]:
    """Real SciFact train pairs, per query (id order): its judged documents, then 7 seeded others per positive
    (from every document, or with `negatives_unjudged` from those not judged relevant to it), as
    {qid, doc_id, query, text (title + abstract), label}."""
    import ir_datasets

    dataset = ir_datasets.load("beir/scifact/train")
    docs = {doc.doc_id: f"{doc.title} {doc.text}" for doc in dataset.docs_iter()}
    topics = {q.query_id: q.text for q in dataset.queries_iter()}
    qrels: dict[str, set[str]] = {}
    for qrel in dataset.qrels_iter():
        if qrel.relevance > 0:
            qrels.setdefault(qrel.query_id, set()).add(qrel.doc_id)
    doc_ids = sorted(docs)
    rows: list[dict] = []
    for qid in sorted(qrels, key=int):
        pool = sorted(set(doc_ids) - qrels[qid]) if negatives_unjudged else doc_ids
        others = random.Random(f"{seed}/{qid}").sample(pool, 7 * len(qrels[qid]))
        rows += [{"qid": qid, "doc_id": d, "query": topics[qid], "text": docs[d], "label": label}
                 for d, label in [(d, 1) for d in sorted(qrels[qid])] + [(d, 0) for d in others]]
        if len(rows) >= count:
            break
    return rows[:count]


def scifact_pairs(count: int, seed: int = 0) -> tuple[list[str], list[str], list[int]]:
    """scifact_rows as (queries, texts, labels)."""
    rows = scifact_rows(count, seed)
    return [r["query"] for r in rows], [r["text"] for r in rows], [r["label"] for r in rows]


class Path_:
    """One training path: its own copy of the model and optimizer, and how it makes a batch."""

    def __init__(self, name: str, model: torch.nn.Module, tokenizer, queries, texts, labels, max_length: int,
                 pretokenised: bool, bucketed: bool, dtype: torch.dtype, seed: int = 42):
        self.name, self.model, self.tokenizer = name, copy.deepcopy(model).train(), tokenizer
        self.queries, self.texts, self.max_length = queries, texts, max_length
        self.targets = torch.tensor(labels)
        self.pretokenised, self.dtype = pretokenised, dtype
        config = TrainingConfig(learning_rate=1e-4)
        self.optimizer = optimizer_for(self.model, config)
        self.encoded = None
        if pretokenised:
            self.encoded = encode_texts(tokenizer, queries, texts, self.targets, max_length)
        ids = self.encoded.ids if self.encoded else tokenizer(queries, texts, truncation="only_second",
                                                              max_length=max_length)["input_ids"]
        lengths = [len(one) for one in ids]
        self.batches = epoch_batches(lengths, BATCH, torch.Generator().manual_seed(seed), bucketed)
        self.position, self.tokens, self.padded = 0, 0, 0

    def step(self) -> None:
        batch = self.batches[self.position % len(self.batches)]
        self.position += 1
        if self.pretokenised:
            inputs = collate(self.encoded, batch, 0, torch.device("cpu"))
        else:  # as the loop did before: the tokenizer pads each batch as it comes
            inputs = self.tokenizer([self.queries[i] for i in batch], [self.texts[i] for i in batch], padding=True,
                                    truncation="only_second", max_length=self.max_length, return_tensors="pt")
        self.tokens += int(inputs["attention_mask"].sum())
        self.padded += inputs["attention_mask"].numel()
        with torch.autocast("cpu", dtype=self.dtype, enabled=self.dtype != torch.float32):
            logits = self.model(**inputs).logits
        loss = torch.nn.functional.cross_entropy(logits.float(), self.targets[batch])
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), CLIP_NORM)
        self.optimizer.step()
        self.optimizer.zero_grad(set_to_none=True)

    def timed(self, steps: int) -> float:
        started = time.perf_counter()
        for _ in range(steps):
            self.step()
        return time.perf_counter() - started


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--max-length", type=int, default=192)
    parser.add_argument("--out", type=Path, default=REPO / "results" / "benchmarks" / "train_throughput.json")
    args = parser.parse_args(argv)
    threads = hardware.cpu_threads()
    torch.set_num_threads(threads)
    load_before = os.getloadavg()
    device = torch.device("cpu")
    fast = hardware.resolve_precision("auto", device) == "fast"
    fast_dtype = hardware.compute_dtype("fast", device) if fast else torch.float32

    count = BATCH * (args.steps + 2) * args.repeats
    queries, texts, labels = scifact_pairs(count)
    classifier = models.load_classifier(BASE, seed=42)
    common = dict(model=classifier.model, tokenizer=classifier.tokenizer, queries=queries, texts=texts, labels=labels,
                  max_length=args.max_length)
    paths = [Path_("before", pretokenised=False, bucketed=False, dtype=torch.float32, **common),
             Path_("bucketed_fp32", pretokenised=True, bucketed=True, dtype=torch.float32, **common),
             Path_("after", pretokenised=True, bucketed=True, dtype=fast_dtype, **common)]
    seconds: dict[str, list[float]] = {path.name: [] for path in paths}
    for _ in range(args.repeats):
        for path in paths:
            path.timed(2)  # warm-up: first shapes, allocator
            seconds[path.name].append(path.timed(args.steps))
            print(f"{path.name}: {BATCH * args.steps / seconds[path.name][-1]:.1f} pairs/s", flush=True)

    def ratio(fast_path: str, slow_path: str) -> float:
        return statistics.median(b / a for a, b in zip(seconds[fast_path], seconds[slow_path]))

    speedup = ratio("after", "before")
    info = hardware.cpu_info()
    import transformers

    result = {
        "command": "python benchmarks/train_throughput.py " + " ".join(argv or []),
        "model": {"base": BASE, "head": classifier.head, "layers": classifier.model.config.num_hidden_layers},
        "pairs": {"count": len(queries), "source": "beir/scifact/train: judged documents + 7 seeded random others per query",
                  "max_length": args.max_length, "batch_size": BATCH, "timed_steps_per_round": args.steps,
                  "rounds": args.repeats},
        "best_pairs_per_second": {name: round(BATCH * args.steps / min(values), 2) for name, values in seconds.items()},
        "median_pairs_per_second": {name: round(BATCH * args.steps / statistics.median(values), 2)
                                    for name, values in seconds.items()},
        "padding_fraction": {path.name: round(1 - path.tokens / path.padded, 4) for path in paths},
        "seconds": {name: [round(s, 3) for s in values] for name, values in seconds.items()},
        "speedups": {"after_vs_before": {"measured": round(speedup, 2), "target": TARGET, "met": speedup >= TARGET},
                     "bucketing_alone": round(ratio("bucketed_fp32", "before"), 2),
                     "bf16_over_bucketed_fp32": round(ratio("after", "bucketed_fp32"), 2)},
        "after_dtype": str(fast_dtype).removeprefix("torch."),
        "machine": {"cpu": info["model"], "bf16": fast, "avx512_bf16": "avx512_bf16" in info["flags"],
                    "amx_bf16": "amx_bf16" in info["flags"], "torch_threads": torch.get_num_threads(),
                    "load_average_before": [round(x, 2) for x in load_before],
                    "load_average_after": [round(x, 2) for x in os.getloadavg()]},
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__},
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = args.out.with_name(args.out.name + ".tmp")
    tmp.write_text(json.dumps(result, indent=2) + "\n")
    os.replace(tmp, args.out)
    print(json.dumps({k: result[k] for k in ("best_pairs_per_second", "speedups", "padding_fraction")}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
