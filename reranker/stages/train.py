"""Fine-tune a BERT relevance classifier on query–document judgments (as Nogueira & Cho, and Birch).

The stage: its flags, and a checkpoint's settings from the configuration (`--config --checkpoint`) or the
flags; the training itself is reranker.neural.training's (`train()` on one source or a mix, `train_chain()`
on several in turn). It writes an HF checkpoint with `reranker.json`, `train_log.jsonl`,
`validation_log.jsonl` and `loss.png`; a complete checkpoint whose inputs and hyper-parameters match is reused.

    python -m reranker train --base sentence-transformers/all-MiniLM-L6-v2 \\
        --docs docs.jsonl --topics topics.tsv --qrels qrels.txt --run bm25.run --out ckpt/scifact
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path

import torch

from reranker.core import hardware
from reranker.core.arguments import add_config
from reranker.core.flags import overlay
from reranker.formats.entry import exits_on_input_error
from reranker.formats.errors import InputError
from reranker.neural import models
from reranker.neural.training.run import train, train_chain
from reranker.neural.training.settings import Source, TrainingConfig, fold_training_queries, parse_source, read_qids

HYPER_PARAMETERS = {  # flag -> TrainingConfig field
    "--lr": ("learning_rate", float), "--epochs": ("epochs", float), "--batch-size": ("batch_size", int),
    "--max-length": ("max_length", int), "--warmup": ("warmup", float), "--weight-decay": ("weight_decay", float),
    "--seed": ("seed", int), "--negatives": ("negatives_per_positive", int), "--negatives-depth": ("negatives_depth", int),
    "--max-pairs": ("max_pairs", int), "--device": ("device", str), "--num-layers": ("num_layers", int),
    "--head": ("head", str), "--precision": ("precision", str), "--validation-fraction": ("validation_fraction", float),
    "--eval-every": ("eval_every", int), "--select": ("select", str), "--patience": ("patience", int),
    "--task": ("task", str), "--objective": ("objective", str), "--enrich": ("enrich", str),
    "--nsp-pairs": ("nsp_pairs", str), "--unit": ("unit", str), "--trainable": ("trainable", str),
    "--teacher": ("teacher", str), "--teacher-head": ("teacher_head", str), "--teacher-weight": ("teacher_weight", float),
    "--head-from": ("head_from", str), "--positives": ("positives", str), "--positive-filter": ("positive_filter", str),
    "--positive-filter-head": ("positive_filter_head", str),
}


# flag -> the schema path of the setting it overrides (reranker.core.flags): a flag is checked as the configuration is
FLAGS = {**{flag: f"training.{field}" for flag, (field, _) in HYPER_PARAMETERS.items()},
         "--no-bucketing": "training.bucketed", "--threads": "threads"}


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m reranker train", description=__doc__.split("\n\n")[0],
        epilog="One source: --docs --topics --qrels --run [--train-qids] [--name]. A chain (A, then B from A's "
               "weights): repeat --source NAME:DOCS:TOPICS:QRELS:RUN[:TRAIN_QIDS] in training order. "
               "Hyper-parameters: TrainingConfig defaults, then --config's training: (and the checkpoint's own "
               "training:), then the flags.")
    p.add_argument("--base", help="HF id or checkpoint directory to start from (default: the --checkpoint's base)")
    p.add_argument("--out", required=True, type=Path, help="checkpoint directory to write")
    p.add_argument("--docs", type=Path, help='docs.jsonl: {"id", "title", "text"} per line')
    p.add_argument("--topics", type=Path, help="topics.tsv: qid<TAB>text")
    p.add_argument("--qrels", type=Path, help="TREC qrels")
    p.add_argument("--run", type=Path, help="TREC run the negatives are drawn from")
    p.add_argument("--train-qids", type=Path, help="file of the query ids to train on (default: all judged)")
    p.add_argument("--name", help="source name (default: the docs file's folder)")
    p.add_argument("--relevant-min-grade", type=int, help="lowest relevant grade (default: the collection's, else 1)")
    p.add_argument("--source", action="append", default=[], metavar="NAME:DOCS:TOPICS:QRELS:RUN[:QIDS]")
    p.add_argument("--mix", action="store_true", help="train on the --source collections shuffled together, in one "
                   "stage (default: in turn, each from the previous weights)")
    add_config(p, "training:, the --checkpoint's entry and lineage, its collections' relevant_min_grade")
    p.add_argument("--checkpoint", help="with --config: the finetune checkpoint's name (its base and training:)")
    p.add_argument("--folds", type=Path, help="folds JSON ({fold: [test qids]}) of a checkpoint with train_fold: it "
                   "trains on the queries outside that fold")
    p.add_argument("--filter-cache", type=Path, help="a folder where the positive filter's scores are kept by content "
                                                     "(positives: best): trainings that filter the same pairs score them once")
    p.add_argument("--threads", type=int, help="torch CPU threads (default: the cores this process may use)")
    p.add_argument("--no-bucketing", dest="bucketed", action="store_const", const=False,
                   help="random batches padded to their longest pair (default: length-bucketed)")
    for flag, (field, kind) in HYPER_PARAMETERS.items():
        p.add_argument(flag, type=kind, dest=field, help=f"default: {getattr(TrainingConfig(), field)}")
    return p


def fetched_model(entry: dict, name: str, flag: str) -> str:
    """A fetched checkpoint's hub id or folder; a fine-tuned one's folder must be handed in."""
    if entry["source"] != "hf":
        raise InputError(f"checkpoint {name} is fine-tuned: give {flag}, the folder training wrote")
    return entry["model"]


@exits_on_input_error("train")
def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    args.source = [parse_source(spec) for spec in args.source]  # here, not as argparse's type: a one-line error
    single = [args.docs, args.topics, args.qrels, args.run]
    if args.source and any(single):
        raise InputError("give either --docs/--topics/--qrels/--run or --source, not both")
    if not args.source and not all(single):
        raise InputError("give --docs, --topics, --qrels and --run (or --source, repeated for a chain)")
    sources = args.source or [Source(args.name or args.docs.parent.name, args.docs, args.topics, args.qrels, args.run,
                                     read_qids(args.train_qids) if args.train_qids else None)]

    from reranker.core.config import CHECKPOINT_SETTINGS, load_config

    flags = overlay({}, args, FLAGS)  # each flag given, checked by its setting's schema: a 0 is kept or refused
    threads = flags.pop("threads", None)
    if args.config or args.checkpoint:  # settings from the configuration alone
        # with --config, the folders the rule hands for the checkpoints the settings name, as --base
        folders = {setting: flags.pop(setting, None) for setting in CHECKPOINT_SETTINGS}
        if not args.checkpoint or flags or args.mix or args.relevant_min_grade is not None:
            raise InputError("with --config, name the --checkpoint and give no --mix or hyper-parameter flags (only "
                             "--base, --teacher and --head-from, the folders of the checkpoints it names): its settings "
                             "come from the configuration")
        from reranker.core import settings as stage_settings

        config = load_config(args.config)
        stage = stage_settings.train(config, args.checkpoint)
        checkpoint, start, mix = stage["checkpoint"], stage["base"], stage["checkpoint"]["mix"]
        base = args.base or fetched_model(start, checkpoint["base"], "--base")
        settings = stage["training"]
        settings.pop("gpus")  # a scheduler resource, not a training setting
        if start["source"] == "hf":  # a fetched base: its declared head and layer slice
            settings["head"] = settings["head"] or start.get("head")
            settings["num_layers"] = settings["num_layers"] or start.get("num_layers")
        grades = stage["grades"]  # of the collections it trains on
        sources = [dataclasses.replace(s, relevant_min_grade=grades.get(s.name, 1)) for s in sources]
        for setting, head in CHECKPOINT_SETTINGS.items():  # a checkpoint name of the configuration: its folder or id
            if settings.get(setting):
                entry = stage["named"][setting]
                settings[setting] = folders[setting] or fetched_model(entry, settings[setting],
                                                                      f"--{setting.replace('_', '-')}")
                if head:  # and the head a hub checkpoint declares
                    settings[head] = settings[head] or (entry.get("head") if entry["source"] == "hf" else None)
        if checkpoint.get("train_fold") is not None:
            if args.folds is None or len(sources) != 1:
                raise InputError(f"checkpoint {args.checkpoint} trains on fold {checkpoint['train_fold']}'s training "
                                 "queries: give --folds and one source")
            sources = [dataclasses.replace(sources[0], train_qids=fold_training_queries(
                args.folds, checkpoint["train_fold"], sources[0].topics))]
    else:  # settings from flags alone; TrainingConfig's defaults are the schema's
        if args.base is None:
            raise InputError("give --base (or --config with --checkpoint)")
        base, mix, settings = args.base, args.mix, flags
        if args.relevant_min_grade is not None:
            sources = [dataclasses.replace(s, relevant_min_grade=args.relevant_min_grade) for s in sources]
    torch.set_num_threads(threads or hardware.cpu_threads())

    training = TrainingConfig.from_mapping(settings)
    out = (train(base, sources, args.out, training, args.filter_cache) if mix
           else train_chain(base, sources, args.out, training, args.filter_cache))
    meta = models.read_meta(out)
    chosen = meta.get("validation") or {}
    print(f"{out}: {meta['pairs']} pairs, {meta['steps']} steps, final loss {meta['final_loss']:.4f}"
          + (f", held-out loss {chosen['loss']:.4f} at step {chosen['selected_step']} (label prior "
             f"{chosen['prior_loss']:.4f})" if chosen else "") + f", fingerprint {meta['fingerprint']}")
    return 0
