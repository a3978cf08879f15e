"""Figures from saved runs, checkpoints and evaluations (`python -m reranker tables figure ...`: `draw_ranks`,
`draw_curves`, `draw_sweep`).

- `ranks`: where each query's first relevant document lands in a run's top R: what MRR@10 and R@10 compress.
- `curves`: training and held-out loss against step per checkpoint, with the label prior the loss must beat.
- `sweep`: measures against a swept number (e.g. the candidates R) per system, one panel per measure.
- `per_query_difference_figure`: per collection, the best row's per-query AP minus the baseline's (`tables results
  --figure`).

Each can store its numbers with provenance (`--numbers`), as the tables do.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reranker.core.provenance import provenance
from reranker.formats.atomic import atomic_write, write_json
from reranker.formats.errors import FormatError
from reranker.formats.evaluations import Evaluation, read_evaluation
from reranker.formats.qrels import read_qrels
from reranker.formats.runs import read_run, sorted_docs
from reranker.formats.table_spec import read_spec
from reranker.formats.text import iter_jsonl
from reranker.report.labels import MEASURE_LABELS, TableError, spec_or_options, split_labelled

EMA_ALPHA = 0.05
DPI = 130


def stored(out: str | os.PathLike, numbers_path: str | None, command: str, numbers: Mapping, inputs: Sequence[str],
           per_query: Mapping | None = None) -> list[Path]:
    """The figure drawn at `out`, and with `numbers_path` its numbers stored there with their provenance (`per_query`
    beside them: what a claim's paired test reads); the paths written."""
    written = [Path(out)]
    if numbers_path:
        document = {"figure": str(out), "provenance": provenance(command, sorted(set(inputs))), "numbers": numbers}
        if per_query is not None:
            document["per_query"] = per_query
        write_json(numbers_path, document, indent=1, ensure_ascii=False)
        written.append(Path(numbers_path))
    return written


def draw_ranks(runs: Sequence[str], qrels: str, depth: int, *, out: str, min_grade: int = 1, numbers: str | None = None,
               title: str = "", command: str = "") -> list[Path]:
    """`figure ranks`: every input checked, the figure of `ranks_numbers` drawn, its numbers stored; the paths written."""
    counted, inputs = ranks_numbers(runs, qrels, depth, min_grade)
    ranks_figure(counted, out, title)
    return stored(out, numbers, command, counted, inputs)


def draw_curves(checkpoints: Sequence[str], *, out: str, what: str = "both", numbers: str | None = None, title: str = "",
                command: str = "") -> list[Path]:
    """`figure curves`: every checkpoint's logs checked, the figure drawn, its numbers stored; the paths written."""
    found, logs, inputs = curves_numbers(checkpoints, what)
    curves_figure(logs, out, what, title)
    return stored(out, numbers, command, found, inputs)


def draw_sweep(measures: Sequence[str], *, out: str, evals: Sequence[str] = (), spec: str | None = None, xlabel: str = "R",
               logx: bool = False, numbers: str | None = None, title: str = "", command: str = "") -> list[Path]:
    """`figure sweep`: the points of `spec` or of `evals` (`X:LABEL:EVAL.json`, never both) checked, the figure
    drawn, its numbers and per-query values stored; the paths written."""
    spec_or_options(spec, ["--eval"] if evals else [], "--eval", "points", "tables figure sweep")
    points = sweep_points(spec) if spec else [(*parse_sweep_spec(item), f"--eval {item!r}") for item in evals]
    found, inputs, per_query = sweep_numbers(points, measures)
    sweep_figure(found, measures, out, xlabel, title, logx)
    return stored(out, numbers, command, found, inputs, per_query)


# ranks


def first_relevant_rank(scores: Mapping[str, float], relevant: set[str], depth: int) -> int | None:
    """1-based rank of the first relevant document among the top `depth` (trec_eval's order), None if none is there."""
    for rank, (doc, _) in enumerate(sorted_docs(scores)[:depth], start=1):
        if doc in relevant:
            return rank
    return None


def rank_counts(run: Mapping[str, Mapping[str, float]], qrels: Mapping[str, Mapping[str, int]], depth: int,
                min_grade: int = 1) -> dict[str, Any]:
    """Queries per rank of their first relevant document (1..depth, then `not in top depth`).

    Queries with a relevant document in the qrels count; those missing from the run are left out (as trec_eval
    and `evaluate` do) and counted apart. `rr` is the mean reciprocal rank at `depth`, a check against MRR@depth."""
    absent = f"not in top {depth}"
    counts = {str(rank): 0 for rank in range(1, depth + 1)} | {absent: 0}
    missing = 0
    for qid, grades in qrels.items():
        relevant = {doc for doc, grade in grades.items() if grade >= min_grade}
        if not relevant:
            continue
        if qid not in run:
            missing += 1
            continue
        rank = first_relevant_rank(run[qid], relevant, depth)
        counts[absent if rank is None else str(rank)] += 1
    queries = sum(counts.values())
    rr = sum(n / int(rank) for rank, n in counts.items() if rank != absent) / queries if queries else math.nan
    return {"queries": queries, "missing_from_run": missing, "rr": rr, "counts": counts}


def _read(reader, path: str, named: str):
    """A file read by `reader`; a missing or malformed one is a TableError that names it."""
    try:
        return reader(path)
    except FileNotFoundError:
        raise TableError(f"{named}: no such file") from None
    except FormatError as err:
        raise TableError(str(err)) from None


def ranks_numbers(specs: Sequence[str], qrels_path: str, depth: int, min_grade: int) -> tuple[dict, list[str]]:
    """Per `LABEL:RUN_FILE`, the counts of `rank_counts`; and the files read."""
    if depth < 1:
        raise TableError(f"--depth {depth}: must be 1 or more")
    qrels = _read(read_qrels, qrels_path, f"--qrels {qrels_path}")
    judged = sum(any(g >= min_grade for g in grades.values()) for grades in qrels.values())
    if not judged:
        raise TableError(f"{qrels_path}: no query has a document of grade {min_grade} or more")
    systems, inputs = {}, [qrels_path]
    for spec in specs:
        label, path = split_labelled(spec, "--run", "LABEL:RUN_FILE", 2)
        if label in systems:
            raise TableError(f"--run {spec!r}: label {label!r} given twice")
        run = _read(read_run, path, f"--run {spec!r}: {path}")
        systems[label] = rank_counts(run, qrels, depth, min_grade)
        inputs.append(path)
    return {"depth": depth, "relevant_min_grade": min_grade, "judged_queries": judged, "systems": systems}, inputs


def ranks_figure(numbers: Mapping[str, Any], path: str | os.PathLike, title: str = "") -> None:
    """Grouped bars: per rank (and `not in top R`), one bar per system, its share of the queries."""
    plt = _pyplot()
    depth, systems = numbers["depth"], numbers["systems"]
    buckets = [str(rank) for rank in range(1, depth + 1)] + [f"not in top {depth}"]
    width = 0.8 / max(len(systems), 1)
    fig, ax = plt.subplots(figsize=(min(9.0, max(4.8, 0.16 * (depth + 1) * len(systems) ** 0.5 + 2.0)), 3.2))
    for i, (label, system) in enumerate(systems.items()):
        share = [system["counts"][b] / system["queries"] if system["queries"] else 0.0 for b in buckets]
        offsets = [x + (i - (len(systems) - 1) / 2) * width for x in range(len(buckets))]
        ax.bar(offsets, share, width=width, color=f"C{i % 10}", label=f"{label} (MRR@{depth} {system['rr']:.3f})")
    step = max(1, math.ceil(depth / 20))
    ticks = [i for i in range(depth) if i == 0 or (i + 1) % step == 0] + [depth]
    ax.set_xticks(ticks, [buckets[i] if i < depth else f"not in\ntop {depth}" for i in ticks])
    ax.set_xlabel("rank of the first relevant document", fontsize=8)
    ax.set_ylabel("share of queries", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    _save(fig, path)


# curves


def read_jsonl(path: Path) -> list[dict]:
    """The records of a JSONL log (formats.text.iter_jsonl); TableError naming the file and line otherwise."""
    try:
        return [record for _, record in iter_jsonl(path)]
    except FormatError as err:
        raise TableError(str(err)) from None


def moving_average(values: Sequence[float], alpha: float = EMA_ALPHA) -> list[float]:
    """Exponential moving average, starting at the first value: each step moves `alpha` of the way to the new one."""
    out: list[float] = []
    for value in values:
        out.append(value if not out else alpha * value + (1 - alpha) * out[-1])
    return out


def read_checkpoint_logs(directory: str | os.PathLike, what: str = "both") -> dict[str, Any]:
    """A checkpoint's meta, training log and validation log; TableError naming the file that is missing or bad."""
    directory = Path(directory)
    meta_path, train_path, validation_path = (directory / name for name in ("reranker.json", "train_log.jsonl", "validation_log.jsonl"))
    if not meta_path.is_file():
        raise TableError(f"{directory}: not a checkpoint directory (no reranker.json)")
    try:
        meta = json.loads(meta_path.read_text())
    except json.JSONDecodeError as err:
        raise TableError(f"{meta_path}: not JSON ({err})") from None
    needed = train_path if what == "both" else validation_path  # a checkpoint trained without validation has no validation log
    if not needed.is_file():
        raise TableError(f"{needed}: no such file (--what {what} needs it)")
    train = read_jsonl(train_path) if train_path.is_file() else []  # its last loss goes into the numbers either way
    validation = read_jsonl(validation_path) if validation_path.is_file() else []
    for path, records, keys in ((train_path, train, ("step", "loss")), (validation_path, validation, ("step", "validation_loss"))):
        for i, record in enumerate(records, start=1):
            if any(key not in record for key in keys):
                raise TableError(f"{path}:{i}: a record needs {' and '.join(keys)}, found {', '.join(record)}")
    inputs = [p for p in (meta_path, train_path, validation_path) if p.is_file()]
    return {"meta": meta, "train": train, "validation": validation, "inputs": [str(p) for p in inputs]}


def prior_loss(logs: Mapping[str, Any]) -> float | None:
    """The held-out label prior: from the validation log, else the meta's validation record."""
    for record in reversed(logs["validation"]):
        if record.get("prior_loss") is not None:
            return float(record["prior_loss"])
    return (logs["meta"].get("validation") or {}).get("prior_loss")


def curves_numbers(specs: Sequence[str], what: str) -> tuple[dict, dict[str, dict], list[str]]:
    """Per `LABEL:CHECKPOINT_DIR`: held-out loss per step, final training loss, selected step, label prior."""
    logs, numbers, inputs = {}, {}, []
    for spec in specs:
        label, directory = split_labelled(spec, "--checkpoint", "LABEL:CHECKPOINT_DIR", 2)
        if label in logs:
            raise TableError(f"--checkpoint {spec!r}: label {label!r} given twice")
        logs[label] = read_checkpoint_logs(directory, what)
        inputs += logs[label]["inputs"]
        meta = logs[label]["meta"]
        train = logs[label]["train"]
        numbers[label] = {
            "validation_loss": {str(r["step"]): r["validation_loss"] for r in logs[label]["validation"]},
            "final_training_loss": train[-1]["loss"] if train else meta.get("final_loss"),
            "selected_step": (meta.get("validation") or {}).get("selected_step"),
            "prior_loss": prior_loss(logs[label]),
        }
    return numbers, logs, inputs


def curves_figure(logs: Mapping[str, Mapping[str, Any]], path: str | os.PathLike, what: str = "both", title: str = "") -> None:
    """Loss against step: training loss as a thin moving average, held-out loss as points on a line, one colour per
    checkpoint; dashed, the label prior (one line when every checkpoint has the same to 3 places)."""
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for i, (label, log) in enumerate(logs.items()):
        colour = f"C{i % 10}"
        if what == "both" and log["train"]:
            ax.plot([r["step"] for r in log["train"]], moving_average([r["loss"] for r in log["train"]]), lw=0.8, alpha=0.8,
                    color=colour, label=f"{label}: training (EMA {EMA_ALPHA})")
        if log["validation"]:
            ax.plot([r["step"] for r in log["validation"]], [r["validation_loss"] for r in log["validation"]], "o-",
                    ms=3.5, lw=1.4, color=colour, label=f"{label}: held-out")
    priors = {label: prior_loss(log) for label, log in logs.items()}
    known = [p for p in priors.values() if p is not None]
    if known and len(known) == len(priors) and all(math.isclose(p, known[0], rel_tol=1e-9) for p in known):
        ax.axhline(known[0], color="grey", ls="--", lw=1.1, label=f"label prior {known[0]:.3f}")
    elif known and len(known) == len(priors) and len({f"{p:.3f}" for p in known}) == 1:
        # folds whose held-out pairs differ slightly: one line, as the legend could not tell theirs apart
        ax.axhline(known[0], color="grey", ls="--", lw=1.1, label=f"label prior {known[0]:.3f} (each, to 3 places)")
    else:
        for i, (label, prior) in enumerate(priors.items()):
            if prior is not None:
                ax.axhline(prior, color=f"C{i % 10}", ls="--", lw=1.0, label=f"{label}: label prior {prior:.3f}")
    ax.set_xlabel("training step", fontsize=8)
    ax.set_ylabel("held-out loss" if what == "validation" else "loss (cross-entropy)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.legend(fontsize=7)
    if title:
        ax.set_title(title, fontsize=9)
    _save(fig, path)


# sweep


def x_key(x: float) -> str:
    """The x value as a JSON key: `100` for 100.0, `0.5` for 0.5."""
    return str(int(x)) if x.is_integer() else repr(x)


def parse_sweep_spec(spec: str) -> tuple[float, str, str]:
    """`--eval X:LABEL:EVAL.json` as (x, label, path)."""
    x_text, label, path = split_labelled(spec, "--eval", "X:LABEL:EVAL.json", 3)
    try:
        return float(x_text), label, path
    except ValueError:
        raise TableError(f"--eval {spec!r}: X must be a number, found {x_text!r}") from None


def sweep_points(spec_path: str | os.PathLike) -> list[tuple[float, str, str, str]]:
    """(x, label, path, where) of a spec file's `sweep` records; `where` names the file and the record."""
    return [(float(record["x"]), record["label"], record["path"], f"{spec_path}: sweep[{i}]")
            for i, record in enumerate(read_spec(spec_path)["sweep"])]


def sweep_numbers(points: Sequence[tuple[float, str, str, str]], measures: Sequence[str]
                  ) -> tuple[dict[str, dict[str, dict[str, float]]], list[str], dict]:
    """{label: {measure: {x: value}}} from (x, label, EVAL.json, where) points, x sorted numerically; the inputs; and
    the same points' per-query values, {label: {measure: {x: {qid: value}}}} (what a claim's paired test reads).
    `where` names a point in errors (its --eval option, or its spec record)."""
    by_label: dict[str, dict[float, Any]] = {}
    inputs = []
    for x, label, path, where in points:
        if x in by_label.get(label, {}):
            raise TableError(f"{where}: {label!r} has two evaluations at {x_key(x)}")
        try:
            evaluation = read_evaluation(path)
        except FileNotFoundError:
            raise TableError(f"{where}: {path}: no such file") from None
        except (json.JSONDecodeError, KeyError) as err:
            raise TableError(f"{path}: not a saved evaluation ({err})") from None
        missing = [m for m in measures if m not in evaluation.aggregate]
        if missing:
            raise TableError(f"{path}: no {', '.join(missing)} (it has {', '.join(evaluation.aggregate)})")
        by_label.setdefault(label, {})[x] = evaluation
        inputs.append(path)
    numbers = {label: {m: {x_key(x): by_x[x].aggregate[m] for x in sorted(by_x)} for m in measures}
               for label, by_x in by_label.items()}
    per_query = {label: {m: {x_key(x): {q: round(float(v), 6) for q, v in sorted(by_x[x].per_query.get(m, {}).items())}
                             for x in sorted(by_x)} for m in measures}
                 for label, by_x in by_label.items()}
    return numbers, inputs, per_query


def sweep_figure(numbers: Mapping[str, Mapping[str, Mapping[str, float]]], measures: Sequence[str], path: str | os.PathLike,
                 xlabel: str = "R", title: str = "", logx: bool = False) -> None:
    """One panel per measure, one line per label over x, markers at the points."""
    plt = _pyplot()
    fig, axes = plt.subplots(1, len(measures), figsize=(3.6 * len(measures), 3.0), squeeze=False)
    xs_all = sorted({float(x) for by_measure in numbers.values() for values in by_measure.values() for x in values})
    for ax, measure in zip(axes[0], measures):
        for i, (label, by_measure) in enumerate(numbers.items()):
            xs = sorted(by_measure[measure], key=float)
            ax.plot([float(x) for x in xs], [by_measure[measure][x] for x in xs], "o-", ms=4, lw=1.4, color=f"C{i % 10}",
                    label=label)
        if logx:
            ax.set_xscale("log")
        if len(xs_all) <= 12:
            ax.set_xticks(xs_all, [x_key(x) for x in xs_all])
            ax.minorticks_off()
        ax.set_xlabel(xlabel, fontsize=8)
        ax.set_ylabel(MEASURE_LABELS.get(measure, measure), fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    axes[0][0].legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=9)
    _save(fig, path)


PER_QUERY_FIGURE_MEASURE = "AP@1000"  # the per-query figure's measure (its file and caption say AP)


def per_query_difference_figure(entries: Sequence[tuple[str, str, Evaluation]], baseline_row: str,
                                path: str | os.PathLike, measure: str = PER_QUERY_FIGURE_MEASURE) -> dict[str, str]:
    """Per collection, the best row's per-query `measure` minus the baseline's, sorted: where it helps and hurts."""
    plt = _pyplot()
    groups = list(dict.fromkeys(g for g, _, _ in entries))
    best: dict[str, tuple[str, Evaluation]] = {}
    baselines: dict[str, Evaluation] = {}
    for group, row, evaluation in entries:
        if row == baseline_row:
            baselines[group] = evaluation
        elif group not in best or evaluation.aggregate[measure] > best[group][1].aggregate[measure]:
            best[group] = (row, evaluation)
    groups = [g for g in groups if g in best and g in baselines]
    fig, axes = plt.subplots(1, max(len(groups), 1), figsize=(4.2 * max(len(groups), 1), 3.4), squeeze=False)
    for ax, group in zip(axes[0], groups):
        row, evaluation = best[group]
        base = baselines[group].per_query[measure]
        deltas = sorted(evaluation.per_query[measure][q] - base[q] for q in base if q in evaluation.per_query[measure])
        colours = ["#2b8cbe" if d > 0 else "#e34a33" if d < 0 else "#999999" for d in deltas]
        ax.bar(range(len(deltas)), deltas, width=1.0, color=colours)
        ax.axhline(0, color="black", linewidth=0.6)
        wins, losses = sum(d > 0 for d in deltas), sum(d < 0 for d in deltas)
        ax.set_title(f"{group}\n{row}", fontsize=9)
        ax.set_xlabel(f"queries (sorted); {wins} better, {losses} worse", fontsize=8)
        ax.set_ylabel(f"{MEASURE_LABELS.get(measure, measure)} - {baseline_row}", fontsize=8)
        ax.tick_params(labelsize=7)
    _save(fig, path)
    return {group: best[group][0] for group in groups}


def _pyplot():
    """matplotlib's pyplot on the Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: str | os.PathLike) -> None:
    """Save at 130 dpi, atomically (the suffix picks the format), and free the figure."""
    import matplotlib.pyplot as plt

    path = Path(path)
    fig.tight_layout()
    with atomic_write(path, binary=True) as f:
        fig.savefig(f, dpi=DPI, format=path.suffix.lstrip(".") or "png")
    plt.close(fig)
