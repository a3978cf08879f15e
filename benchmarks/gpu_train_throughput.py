"""Training throughput on a GPU (or, without one, this CPU, marked so): the train stage's own step for
MiniLM-L6-, bert-base- (and BERT-Small-, bert-large-) shaped models with random weights, on real
SciFact train pairs.

Random weights: a step's speed depends on the shape, not on what the weights learned, and a GPU
machine with no hub access can build them. Everything else is the train stage's (reranker.neural.training): the model comes from
models.load_classifier with the head the train stage gives that base (mean pooling for all-MiniLM-L6-v2,
[CLS] for BERT), the pairs go through tasks.objective_for and tasks.pair_task (tokenised once,
`[CLS] query [SEP] title text [SEP]`, the text truncated to `max_length`), and a step is
loop.Loop.optimise (collate, the loop's autocast (bf16 on a GPU), forward, loss, backward, gradient
clipping, AdamW and the scheduler, `loss.item()`), on encoding.epoch_batches' length-bucketed batches of
16, timed as Loop.epoch times it and counted by Loop.record.

Per run (`SHAPE:MAX_LENGTH`), on one model and optimiser, in turn (`--variants`):

* `train_stage`: as train() runs it, inside resume.deterministic() (deterministic algorithms, warn_only);
  its warm-up steps (the first shapes, the allocator, kernel plans) are reported as `cold`;
* `nondeterministic`: the same steps with torch.use_deterministic_algorithms(False): what determinism costs;
* `cudnn_on` (GPU only): deterministic, with cuDNN's attention turned back on, as the stage ran before it
  was turned off (hardware.disable_cudnn_attention: it plans every new batch shape anew). Stored results
  made before that change name this comparison's other side `no_cudnn_sdp`.

Each variant: `--warmup` untimed steps, then `--steps` timed ones; steps/s is 1 / the median step time,
pairs/s the mean batch (16 but for an epoch's last) x that. `--determinism-steps N` also trains the first
run's model twice from the same seed and says whether losses and weights come out bit-identical.

`--write-pairs DIR` writes DIR/train_pairs.jsonl here (needs ir_datasets' SciFact), for a machine
without it; the tokenizer is gpu_throughput.py's (`--write-pairs` there).

    python benchmarks/gpu_train_throughput.py --write-pairs .gpu/pairs                       # here
    python benchmarks/gpu_train_throughput.py --pairs-file .gpu/pairs/train_pairs.jsonl --tokenizer .gpu/pairs \\
        [--runs minilm-l6:128 bert-base:192] [--out results/benchmarks/gpu_train_throughput.json]
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import platform
import statistics
import sys
import tempfile
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_throughput import SHAPES as SCORING_SHAPES  # noqa: E402 (the scoring benchmark's shapes)

from reranker.core import hardware  # noqa: E402
from reranker.neural import models
from reranker.neural.batching import pad_id  # noqa: E402
from reranker.neural.training.encoding import epoch_batches  # noqa: E402
from reranker.neural.training.loop import Loop  # noqa: E402
from reranker.neural.training.pairs import Examples, TrainingPair, pair_counts  # noqa: E402
from reranker.neural.training.resume import deterministic  # noqa: E402
from reranker.neural.training.settings import Source, TrainingConfig  # noqa: E402
from reranker.neural.training.tasks import objective_for, pair_task  # noqa: E402

SHAPES = {**SCORING_SHAPES, "bert-small": (4, 512, 8, 2048)}  # (layers, hidden, heads, intermediate)
HEADS = {"minilm-l6": "mean_pooling"}  # the head the train stage gives all-MiniLM-L6-v2; BERT's: [CLS]
VARIANTS = ("train_stage", "nondeterministic", "cudnn_on")
DEFAULT_RUNS = ("minilm-l6:128", "minilm-l6:192", "bert-base:128", "bert-base:192", "bert-small:256")
SOURCE = "beir/scifact/train"


def write_pairs(directory: Path, count: int, seed: int = 0) -> None:
    """SciFact train pairs (benchmarks/train_throughput.py's, negatives not judged relevant to their query),
    with their ids: the train stage groups pairs by query."""
    from train_throughput import scifact_rows

    rows = scifact_rows(count, seed, negatives_unjudged=True)
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / "train_pairs.jsonl", "w") as f:
        f.writelines(json.dumps(row) + "\n" for row in rows)
    print(f"{len(rows)} {SOURCE} pairs -> {directory / 'train_pairs.jsonl'}", file=sys.stderr)


def random_model(shape: str, head: str, tokenizer_dir: Path, directory: Path) -> Path:
    """A BERT classifier of the shape and head, seeded random weights, saved with the tokenizer."""
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    layers, hidden, heads, inner = SHAPES[shape]
    tokenizer = AutoTokenizer.from_pretrained(tokenizer_dir)
    config = BertConfig(vocab_size=tokenizer.vocab_size, hidden_size=hidden, num_hidden_layers=layers,
                        num_attention_heads=heads, intermediate_size=inner, max_position_embeddings=512, num_labels=2)
    torch.manual_seed(0)
    net = models.mean_pooled_class()(config) if head == "mean_pooling" else BertForSequenceClassification(config)
    net.save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    models.write_meta(directory, {"head": head, "relevant_index": 1, "base": f"random {shape}"})
    return directory


def examples_of(rows: list[dict]) -> tuple[Source, Examples]:
    """The rows as one source's training examples (no held-out queries: the loop skips its checks)."""
    pairs = [TrainingPair(r["qid"], r["doc_id"], int(r["label"]), int(r["label"])) for r in rows]
    record = {"name": SOURCE, "levels": [0, 1], **pair_counts(pairs, [])}
    nowhere = Path("-")
    return (Source(SOURCE, nowhere, nowhere, nowhere, nowhere),
            Examples(pairs, [], {r["qid"]: r["query"] for r in rows}, {r["doc_id"]: r["text"] for r in rows}, record))


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


@contextlib.contextmanager
def variant_context(variant: str, seed: int, device: torch.device) -> Iterator[None]:
    if variant == "nondeterministic":
        previous = torch.are_deterministic_algorithms_enabled()
        torch.use_deterministic_algorithms(False)
        try:
            yield
        finally:
            torch.use_deterministic_algorithms(previous)
        return
    with deterministic(seed):  # as train() wraps the whole stage; it turns cuDNN's attention off
        if variant == "cudnn_on":
            torch.backends.cuda.enable_cudnn_sdp(True)  # deterministic() restores its own setting after
        yield


def timed_steps(loop: Loop, batches: Iterator[list[int]], count: int) -> dict:
    """`count` steps as Loop.epoch takes them: optimise, timed, then record."""
    seconds, pairs, tokens, padded, widths, loss = [], 0, 0, 0, set(), float("nan")
    for _ in range(count):
        batch = next(batches)
        tick = time.perf_counter()
        inputs, loss, lr = loop.optimise(batch)  # ends with loss.item(): the GPU's work is done
        elapsed = time.perf_counter() - tick
        loop.record(batch, inputs, loss, lr, elapsed)
        seconds.append(elapsed)
        pairs += len(batch)
        tokens += int(inputs["attention_mask"].sum())
        padded += inputs["attention_mask"].numel()
        widths.add(int(inputs["input_ids"].shape[1]))
    return {"seconds": seconds, "pairs": pairs, "tokens": tokens, "padded": padded, "widths": sorted(widths), "last_loss": loss}


def endless_batches(loop: Loop) -> Iterator[list[int]]:
    """Epoch after epoch of the loop's bucketed batches, drawn by its own shuffler."""
    while True:
        yield from epoch_batches(loop.lengths, loop.config.batch_size, loop.shuffler, loop.config.bucketed)


def build_loop(shape: str, max_length: int, head: str, rows: list[dict], tokenizer_dir: Path, device: torch.device,
               batch_size: int, directory: Path) -> tuple[Loop, torch.dtype, dict]:
    """The train stage's loop at step 0 on a random model of the shape: load_classifier, objective_for,
    pair_task (tokenised once), Loop.begin; and what its setting up took."""
    config = TrainingConfig(batch_size=batch_size, max_length=max_length, device=str(device), epochs=1000.0)
    dtype = hardware.compute_dtype(hardware.resolve_precision(config.precision, device), device)
    source, example = examples_of(rows)
    started = time.perf_counter()
    with deterministic(config.seed):  # as train() loads and encodes
        objective = objective_for(config, [example], relevant_index=1)
        classifier = models.load_classifier(str(random_model(shape, head, tokenizer_dir, directory / "base")),
                                            head=head, seed=config.seed, device=device, num_labels=objective.outputs)
        objective = dataclasses.replace(objective, relevant_index=classifier.relevant_index)
        pad = pad_id(classifier.tokenizer)
        tick = time.perf_counter()
        task = pair_task(classifier, [source], [example], objective, config, pad, device, dtype, {})
        tokenise = time.perf_counter() - tick
        loop = Loop.begin(classifier.model, task, config, pad, device, dtype, directory / "ckpt", "gpu-benchmark")
    from tqdm.auto import tqdm

    loop.bar = tqdm(disable=True)  # Loop.record updates it
    return loop, dtype, {"tokenise_seconds": round(tokenise, 3), "setup_seconds": round(time.perf_counter() - started, 2)}


def measure(shape: str, max_length: int, head: str, rows: list[dict], tokenizer_dir: Path, device: torch.device,
            variants: list[str], warmup: int, steps: int, batch_size: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        loop, dtype, setup = build_loop(shape, max_length, head, rows, tokenizer_dir, device, batch_size, Path(tmp))
        config = loop.config
        entry: dict = {"layers_hidden_heads_intermediate": SHAPES[shape], "head": head, "max_length": max_length,
                       "batch_size": batch_size, "dtype": str(dtype).removeprefix("torch."), **setup,
                       "pairs": len(loop.task.data.ids), "mean_tokens_per_pair": round(statistics.fmean(loop.lengths), 1),
                       "parameters": sum(p.numel() for p in loop.model.parameters()), "variants": {}}
        batches = endless_batches(loop)
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats()
        for variant in variants:
            if variant == "cudnn_on" and device.type != "cuda":
                continue
            # The warnings' filters stay as they are (a warning per cuBLAS call, say, would cost as in the stage);
            # entering catch_warnings resets the once-per-location registries, so each variant lists its own.
            with variant_context(variant, config.seed, device), warnings.catch_warnings(record=True) as caught:
                cold = timed_steps(loop, batches, warmup)
                warm = timed_steps(loop, batches, steps)
            median = statistics.median(warm["seconds"])
            entry["variants"][variant] = {
                "steps_per_second": round(1 / median, 2),
                "pairs_per_second": round(warm["pairs"] / len(warm["seconds"]) / median, 1),  # batches may be short
                "mean_steps_per_second": round(len(warm["seconds"]) / sum(warm["seconds"]), 2),
                "tokens_per_second": round(warm["tokens"] / sum(warm["seconds"]), 1),
                "padding_fraction": round(1 - warm["tokens"] / warm["padded"], 4),
                "step_ms": {"median": round(1000 * median, 2), "min": round(1000 * min(warm["seconds"]), 2),
                            "max": round(1000 * max(warm["seconds"]), 2)},
                "minutes_per_1000_steps": round(1000 * median / 60, 2),
                "cold": {"steps": warmup, "seconds": round(sum(cold["seconds"]), 3),
                         "first_step_ms": round(1000 * cold["seconds"][0], 1) if cold["seconds"] else None},
                "widths": warm["widths"], "timed_steps": steps, "last_loss": round(warm["last_loss"], 4),
                "warnings": sorted({f"{w.category.__name__}: {str(w.message)[:240]}" for w in caught}),
            }
            v = entry["variants"][variant]
            print(f"{shape}:{max_length} {variant}: {v['steps_per_second']} steps/s ({v['pairs_per_second']} pairs/s, "
                  f"median {v['step_ms']['median']} ms, cold {v['cold']['seconds']} s for {warmup} steps, "
                  f"padding {v['padding_fraction']:.1%})", file=sys.stderr, flush=True)
        if device.type == "cuda":
            entry["peak_memory_mib"] = round(torch.cuda.max_memory_allocated() / 2 ** 20, 1)
        del loop
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return entry


def determinism_check(shape: str, max_length: int, head: str, rows: list[dict], tokenizer_dir: Path,
                      device: torch.device, steps: int, batch_size: int) -> dict:
    """The same `steps` steps twice from the same seed, as train() runs them (inside resume.deterministic):
    whether the losses and the weights come out bit-identical (what a resumed run relies on)."""
    losses, states = [], []
    for _ in range(2):
        with tempfile.TemporaryDirectory() as tmp:
            loop, _, _ = build_loop(shape, max_length, head, rows, tokenizer_dir, device, batch_size, Path(tmp))
            batches = endless_batches(loop)
            with deterministic(loop.config.seed):
                losses.append([loop.optimise(next(batches))[1] for _ in range(steps)])
            states.append({k: v.detach().float().cpu().clone() for k, v in loop.model.state_dict().items()})
            del loop
    differences = [float((states[0][k] - states[1][k]).abs().max()) for k in states[0]]
    return {"run": f"{shape}:{max_length}", "steps": steps, "losses_identical": losses[0] == losses[1],
            "max_loss_difference": max(abs(a - b) for a, b in zip(*losses)),
            "weights_identical": all(torch.equal(states[0][k], states[1][k]) for k in states[0]),
            "max_weight_difference": max(differences), "losses": losses[0][:5]}


def parse_run(spec: str) -> tuple[str, int, str]:
    """SHAPE:MAX_LENGTH[:HEAD]."""
    parts = spec.split(":")
    if len(parts) not in (2, 3) or parts[0] not in SHAPES or not parts[1].isdigit():
        raise argparse.ArgumentTypeError(f"{spec!r}: expected SHAPE:MAX_LENGTH[:HEAD], SHAPE one of {', '.join(SHAPES)}")
    head = parts[2] if len(parts) == 3 else HEADS.get(parts[0], "sequence_classification")
    if head not in ("mean_pooling", "sequence_classification"):
        raise argparse.ArgumentTypeError(f"{spec!r}: head mean_pooling or sequence_classification")
    return parts[0], int(parts[1]), head


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write-pairs", type=Path, help="write train_pairs.jsonl here (SciFact train), then stop")
    parser.add_argument("--pairs-file", type=Path, help="train_pairs.jsonl (made by --write-pairs)")
    parser.add_argument("--tokenizer", type=Path, help="a saved BERT-uncased tokenizer (default: beside --pairs-file)")
    parser.add_argument("--pairs", type=int, default=2048, help="pairs written (--write-pairs) or trained on, at most")
    parser.add_argument("--runs", nargs="+", type=parse_run, default=[parse_run(r) for r in DEFAULT_RUNS],
                        metavar="SHAPE:MAX_LENGTH[:HEAD]")
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=VARIANTS)
    parser.add_argument("--warmup", type=int, default=8, help="untimed steps per variant (the first: cold)")
    parser.add_argument("--steps", type=int, default=40, help="timed steps per variant")
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--determinism-steps", type=int, default=0,
                        help="also train the first run's model twice for this many steps and compare (0: no)")
    parser.add_argument("--out", type=Path, default=Path("results/benchmarks/gpu_train_throughput.json"))
    args = parser.parse_args(argv)
    if args.write_pairs:
        write_pairs(args.write_pairs, args.pairs)
        return 0
    if args.pairs_file is None:
        parser.error("give --pairs-file (made by --write-pairs) or --write-pairs")
    rows = [json.loads(line) for line in args.pairs_file.read_text().splitlines()][:args.pairs]
    tokenizer_dir = args.tokenizer or args.pairs_file.parent
    device = models.pick_device("auto")
    if device.type == "cpu":
        torch.set_num_threads(hardware.cpu_threads())
    import transformers

    result = {
        "device": torch.cuda.get_device_name(0) if device.type == "cuda" else f"cpu: {hardware.cpu_info()['model']} "
                  f"({torch.get_num_threads()} threads); no GPU was lent, so these are CPU numbers",
        "gpu": device.type == "cuda",
        "versions": {"python": platform.python_version(), "torch": torch.__version__,
                     "transformers": transformers.__version__, "cuda": torch.version.cuda},
        "pairs": {"count": len(rows), "source": f"{SOURCE}: judged documents + 7 seeded non-relevant others per "
                  "positive, "
                  "title + abstract, in query id order"},
        "step": "reranker.neural.training.loop.Loop.optimise on encoding.epoch_batches (bucketed), as train() runs it; "
                "random weights",
        "warmup_steps": args.warmup, "timed_steps": args.steps, "runs": {},
    }
    for shape, max_length, head in args.runs:
        name = f"{shape}:{max_length}" + ("" if head == HEADS.get(shape, "sequence_classification") else f":{head}")
        try:
            result["runs"][name] = measure(shape, max_length, head, rows, tokenizer_dir, device, args.variants,
                                           args.warmup, args.steps, args.batch_size)
        except Exception as err:  # noqa: BLE001 (one run's failure is reported; the others still run)
            import traceback

            traceback.print_exc()
            result["runs"][name] = {"error": f"{type(err).__name__}: {err}"}
            if device.type == "cuda":
                torch.cuda.empty_cache()
        write_result(args.out, result, argv)  # each run as it ends: a later one that fails or is killed keeps it
    if args.determinism_steps:
        shape, max_length, head = args.runs[0]
        try:
            result["determinism"] = determinism_check(shape, max_length, head, rows, tokenizer_dir, device,
                                                      args.determinism_steps, args.batch_size)
            print(f"determinism: {result['determinism']}", file=sys.stderr)
        except Exception as err:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            result["determinism"] = {"error": f"{type(err).__name__}: {err}"}
    write_result(args.out, result, argv)
    print(f"-> {args.out}", file=sys.stderr)
    failed = any("error" in run for run in result["runs"].values()) or "error" in result.get("determinism", {})
    return 1 if failed else 0


def write_result(out: Path, result: dict, argv: list[str] | None) -> None:
    result["command"] = "python benchmarks/gpu_train_throughput.py " + " ".join(argv if argv is not None else sys.argv[1:])
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    sys.exit(main())
