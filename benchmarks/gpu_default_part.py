"""A part of the default (`make run`) on one GPU, through the suite's own stage commands, timed per job.

What it runs: the jobs Snakemake would run for `scifact-soft-80` (825 steps), one Radboud row (the
baseline's 5 fold trainings of 150 steps and the 5 `score_radboud` jobs of each fold's test queries x
BM25's top 100, joined), one NTNU row (`ntnu-bert`: its training and its `score_ntnu` job), and, when
time is left, the 5 fold trainings again side by side (several jobs on one GPU, as Snakemake with
`--cores all` and no GPU resource would run them), `scifact-bi` (825 steps) and a scoring side test
(bert-large bf16 scoring: today's path against a host-side padding flag and larger batches). The
commands are Snakemake's own (`snakemake -n -p --cores 2 --config run_dir=.gpu/run -- TARGETS`, the
stored default's thread counts), run in the DAG's order, one at a time.

Subcommands:

  pack      (here, after the first stage ran into .gpu/run on the CPU; see benchmarks/gpu_default_part.sh)
            the GPU jobs' inputs (collections, BM25 runs cut to each query's top 100, folds, segments,
            the resolved config) as .gpu/inputs.tar.xz; all-MiniLM-L6-v2 in fp16 as .gpu/model.tar.xz
            (the device's upload limit is 64 MiB; the device upcasts it to fp32); the job list .gpu/jobs.json;
            the cost of parsing the full runs against the cut ones, measured here (.gpu/parse_cost.json);
            the token lengths of the Cranfield pairs for the scoring side test (.gpu/lengths.json)
  hf-home   (device) an offline Hugging Face cache holding the fp32 upcast of the carried weights
  jobs      (device) run a group of jobs.json, timed (wall, CPU and peak RSS per job, the stage's own meta)
  scoring   (device) the scoring side test
  summary   (here)   the device's JSON beside the stored CPU run's times, and the projection of the whole
            default on one GPU -> results/benchmarks/gpu_default_part.json
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import shlex
import signal
import statistics
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RUN = ".gpu/run"
MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
SNAPSHOT = "offline-mirror"
TARGETS = {  # Snakemake targets (under the run folder) -> the group their jobs run in
    "work/scores/cranfield/radboud/baseline.g1.relevant.tsv": "core",
    "work/scores/beir-scifact-test/ntnu-bert/bm25.k20.ntnu-passages.tsv": "core",
    "work/checkpoints/scifact-bi/reranker.json": "extra",
}
RUN_DEPTH = 100  # every GPU job reads at most the top 100 of a run (negatives_depth 100/40, K 100/20)


# ----------------------------------------------------------------------------------------------- pack (here)

def snakemake_commands(run_dir: str, targets: list[str]) -> list[str]:
    """Snakemake's shell commands for the targets, in its order (dry run, 2 cores as the stored default had)."""
    env = dict(os.environ, PATH=f"{ROOT / '.venv/bin'}:{os.environ['PATH']}")
    out = subprocess.run([str(ROOT / ".venv/bin/snakemake"), "-n", "-p", "--cores", "2", "--config", f"run_dir={run_dir}",
                          "--", *[f"{run_dir}/{t}" for t in targets]], cwd=ROOT, env=env, capture_output=True, text=True,
                         check=True).stdout
    return [line.removeprefix("Shell command: ") for line in out.splitlines() if line.startswith("Shell command: ")]


def job_entry(command: str, group: str) -> dict:
    words = shlex.split(command.split(" 2> ")[0])
    if words[:3] == ["python", "-m", "reranker"]:
        stage, name = words[3], words[words.index("--checkpoint") + 1]
        if stage == "score":
            stage = f"score_{words[words.index('--section') + 1]}"
        out = words[words.index("--out") + 1]
    else:  # join_fold_scores: cat ... > out
        stage, name, out = "join", "radboud-baseline", command.split(" > ")[1].split()[0]
    return {"name": f"{stage}:{name}", "stage": stage, "checkpoint": name, "group": group, "out": out,
            "threads": int(words[words.index("--threads") + 1]) if "--threads" in words else 1, "command": command}


def pack(args: argparse.Namespace) -> int:
    from reranker.formats.runs import read_run, sorted_docs

    gpu, run = ROOT / ".gpu", ROOT / RUN
    jobs: list[dict] = []
    seen: set[str] = set()
    for target, group in TARGETS.items():
        for command in snakemake_commands(RUN, [target]):
            if command not in seen:
                seen.add(command)
                jobs.append(job_entry(command, group))
    order = {"train": 0, "score_radboud": 1, "join": 2, "score_ntnu": 3}  # the DAG's order, Radboud's row, then NTNU's
    core = [j for j in jobs if j["group"] == "core"]
    core.sort(key=lambda j: (j["checkpoint"] != "scifact-soft-80", j["checkpoint"].startswith("ntnu"), order[j["stage"]],
                             j["checkpoint"]))
    jobs = core + [j for j in jobs if j["group"] != "core"]
    parallel = [dict(j, name=j["name"] + ":parallel", group="parallel",
                     command=j["command"].replace(f"--out {RUN}/work/checkpoints/", f"--out {RUN}/work/parallel/")
                     .replace(f"2> {RUN}/logs/train/", f"2> {RUN}/logs/parallel/"),
                     out=j["out"].replace(f"{RUN}/work/checkpoints/", f"{RUN}/work/parallel/"))
                for j in core if j["stage"] == "train" and j["checkpoint"].startswith("radboud-")]
    jobs += parallel
    (gpu / "jobs.json").write_text(json.dumps({"made_by": f"snakemake -n -p --cores 2 --config run_dir={RUN} -- "
                                               + " ".join(f"{RUN}/{t}" for t in TARGETS), "jobs": jobs}, indent=1))
    print(f"{len(jobs)} jobs -> .gpu/jobs.json", file=sys.stderr)

    # The runs, cut to each query's top RUN_DEPTH as trec_eval ranks them (the lines kept as they are).
    stage = Path(args.stage)
    parse_cost = {}
    for path in sorted(run.glob("work/runs/*/bm25.run")):
        started = time.perf_counter()
        full = read_run(path)
        full_s = time.perf_counter() - started
        keep = {q: {d for d, _ in sorted_docs(s)[:RUN_DEPTH]} for q, s in full.items()}
        cut = stage / RUN / path.relative_to(run)
        cut.parent.mkdir(parents=True, exist_ok=True)
        with open(path) as f, open(cut, "w") as g:
            g.writelines(line for line in f if line.split()[2] in keep[line.split()[0]])
        started = time.perf_counter()
        short = read_run(cut)
        cut_s = time.perf_counter() - started
        assert all([d for d, _ in sorted_docs(full[q])[:RUN_DEPTH]] == [d for d, _ in sorted_docs(short[q])] for q in full)
        parse_cost[str(path.relative_to(ROOT))] = {"read_run_full_s": round(full_s, 3), "read_run_cut_s": round(cut_s, 3),
                                                   "bytes_full": path.stat().st_size, "bytes_cut": cut.stat().st_size}
    (gpu / "parse_cost.json").write_text(json.dumps({
        "what": "reranker.formats.runs.read_run on the full BM25 runs (depth 1000) and on the cut ones the GPU got "
                f"(top {RUN_DEPTH}), measured here: the stored CPU jobs parsed the full runs, the GPU jobs the cut ones",
        "machine": platform.processor() or platform.machine(), "runs": parse_cost}, indent=1))
    with tarfile.open(gpu / "inputs.tar.xz", "w:xz", preset=9) as tar:
        tar.add(run / "config.yaml", f"{RUN}/config.yaml")
        for sub in ("work/folds", "work/segments"):
            tar.add(run / sub, f"{RUN}/{sub}")
        for coll in sorted((run / "work/collections").iterdir()):
            for f in sorted(coll.iterdir()):
                if not (coll.name == "beir-scifact-test" and f.name == "docs.jsonl"):  # no GPU job reads it
                    tar.add(f, f"{RUN}/{f.relative_to(run)}")
        tar.add(stage / RUN / "work/runs", f"{RUN}/work/runs")

    # all-MiniLM-L6-v2: every file of the offline snapshot, the weights in fp16.
    from safetensors.torch import load_file, save_file

    snap = Path(args.hf_home) / "hub" / f"models--{MODEL_ID.replace('/', '--')}" / "snapshots" / SNAPSHOT
    weights = load_file(snap / "model.safetensors")
    half = {k: (v.half() if v.is_floating_point() else v).contiguous() for k, v in weights.items()}
    save_file(half, stage / "model.fp16.safetensors", metadata={"format": "pt"})
    err = max(float((half[k].float() - v).abs().max()) for k, v in weights.items() if v.is_floating_point())
    with tarfile.open(gpu / "model.tar.xz", "w:xz", preset=9) as tar:
        for f in sorted(snap.rglob("*")):
            if f.is_file() and f.name != "model.safetensors":
                tar.add(f, f"model/{f.relative_to(snap)}")
        tar.add(stage / "model.fp16.safetensors", "model/model.fp16.safetensors")
    (gpu / "model.json").write_text(json.dumps({"model": MODEL_ID, "carried": "fp16, upcast to fp32 on the device",
                                                "max_abs_rounding_error": err}, indent=1))

    # Token lengths of the Cranfield (query, sentence) pairs gpu_throughput.py scores (for the scoring side test).
    if args.pairs:
        from transformers import AutoTokenizer

        from reranker.neural.batching import tokenize_pairs

        rows = [json.loads(line) for line in Path(args.pairs).read_text().splitlines()]
        tokenizer = AutoTokenizer.from_pretrained(str(snap))
        ids, types = tokenize_pairs(tokenizer, [r["query"] for r in rows], [r["text"] for r in rows], "longest_first", 512)
        (gpu / "lengths.json").write_text(json.dumps({"source": "benchmarks/gpu_throughput.py --write-pairs (Cranfield)",
                                                      "lengths": [len(x) for x in ids],
                                                      "first_segment": [t.count(0) for t in types]}))
    for f in ("inputs.tar.xz", "model.tar.xz", "jobs.json", "lengths.json"):
        if (gpu / f).exists():
            print(f"{f}: {(gpu / f).stat().st_size / 2**20:.2f} MiB", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------------------- device side

def hf_home(args: argparse.Namespace) -> int:
    from safetensors.torch import load_file, save_file

    repo = Path(args.hf_home) / "hub" / f"models--{MODEL_ID.replace('/', '--')}"
    snap = repo / "snapshots" / SNAPSHOT
    snap.mkdir(parents=True, exist_ok=True)
    (repo / "refs").mkdir(exist_ok=True)
    (repo / "refs" / "main").write_text(SNAPSHOT)
    with tarfile.open(args.model) as tar:
        for member in tar.getmembers():
            if member.isfile():
                target = snap / Path(member.name).relative_to("model")
                target.parent.mkdir(parents=True, exist_ok=True)
                target.write_bytes(tar.extractfile(member).read())
    half = load_file(snap / "model.fp16.safetensors")
    save_file({k: (v.float() if v.is_floating_point() else v).contiguous() for k, v in half.items()},
              snap / "model.safetensors", metadata={"format": "pt"})
    (snap / "model.fp16.safetensors").unlink()
    print(f"{MODEL_ID} (fp16 upcast to fp32) -> {snap}", file=sys.stderr)
    return 0


def _meta(job: dict) -> dict:
    """What the stage itself recorded: reranker.json for a training, the score meta for a scoring."""
    out = ROOT / job["out"]
    path = out / "reranker.json" if job["stage"] == "train" else Path(f"{out}.meta.json")
    if not path.exists():
        return {}
    meta = json.loads(path.read_text())
    keep = ("seconds", "steps", "pairs", "throughput", "device_usage", "validation", "precision", "machine",
            "pairs_per_second", "device", "cache_hits", "threads", "batch_size", "dtype", "queries", "gpu",
            "model_seconds", "model_pairs_per_second", "candidates", "scored", "planned_steps")
    found = {k: meta[k] for k in keep if k in meta}
    if "training" in meta and isinstance(meta["training"], dict):
        found["training"] = {k: meta["training"][k] for k in ("max_pairs", "epochs", "batch_size", "max_length")
                             if k in meta["training"]}
    for key in ("pairs", "scored", "seconds"):  # score metas name their counts variously: keep the small numbers
        if key in meta and not isinstance(meta[key], (dict, list)):
            found[key] = meta[key]
    found["meta_file"] = str(path.relative_to(ROOT))
    return found


def _start(job: dict, env: dict) -> subprocess.Popen:
    for redirect in (" 2> ", " > "):
        if redirect in job["command"]:
            log = job["command"].rsplit(redirect, 1)[1].split()[0]
            (ROOT / log).parent.mkdir(parents=True, exist_ok=True)
    return subprocess.Popen(["bash", "-c", job["command"]], cwd=ROOT, env=env, start_new_session=True)


def _wait(proc: subprocess.Popen, started: float, timeout: float) -> tuple[int, float, resource.struct_rusage]:
    killer = threading.Timer(timeout, lambda: os.killpg(proc.pid, signal.SIGKILL))
    killer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        killer.cancel()
    proc.returncode = os.waitstatus_to_exitcode(status)
    return proc.returncode, time.perf_counter() - started, usage


def _record(job: dict, rc: int, wall: float, usage: resource.struct_rusage) -> dict:
    entry = {**job, "rc": rc, "wall_s": round(wall, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
             "max_rss_mib": round(usage.ru_maxrss / 1024, 1), "stage_meta": _meta(job)}
    if rc != 0:
        log = job["command"].rsplit(" 2> ", 1)[-1].split()[0] if " 2> " in job["command"] else None
        if log and (ROOT / log).exists():
            entry["log_tail"] = (ROOT / log).read_text(errors="replace")[-3000:]
    return entry


def run_jobs(args: argparse.Namespace) -> int:
    spec = json.loads(Path(args.jobs).read_text())
    jobs = [j for j in spec["jobs"] if j["group"] == args.group]
    if args.only:
        jobs = [j for j in jobs if any(o in j["name"] for o in args.only)]
    out = Path(args.out)
    result = json.loads(out.read_text()) if out.exists() else {"made_by": spec["made_by"], "groups": {}}
    env = dict(os.environ)
    records: list[dict] = []
    group = {"jobs": records, "mode": "parallel" if args.parallel else "sequential"}
    result["groups"][args.group] = group
    started_all = time.perf_counter()
    if args.parallel:
        procs = [(job, _start(job, env), time.perf_counter()) for job in jobs]
        for job, proc, started in procs:
            rc, wall, usage = _wait(proc, started, args.timeout)
            records.append(_record(job, rc, wall, usage))
        group["wall_s"] = round(time.perf_counter() - started_all, 2)
    else:
        for job in jobs:
            if args.deadline and time.time() > args.deadline:
                records.append({**job, "skipped": "deadline"})
                continue
            print(f"[{time.strftime('%H:%M:%S')}] {job['name']}", file=sys.stderr, flush=True)
            started = time.perf_counter()
            rc, wall, usage = _wait(_start(job, env), started, args.timeout)
            records.append(_record(job, rc, wall, usage))
            print(f"    rc {rc}, {wall:.1f} s wall, {records[-1]['cpu_s']} s CPU", file=sys.stderr, flush=True)
            out.write_text(json.dumps(result, indent=1))
        group["wall_s"] = round(time.perf_counter() - started_all, 2)
    out.write_text(json.dumps(result, indent=1))
    bad = [r["name"] for r in records if r.get("rc", 0) != 0]
    print(f"group {args.group}: {len(records)} jobs, {group['wall_s']} s" + (f"; FAILED: {bad}" if bad else ""),
          file=sys.stderr)
    return 1 if bad else 0


def scoring(args: argparse.Namespace) -> int:
    """bert-large (random weights) bf16 scoring of the Cranfield pairs' lengths: today's Scorer path beside
    (a) a padding flag computed on the host instead of `bool(mask.all())` on the device (a sync per batch),
    (b) larger batches, (c) both. Rounds interleave the variants; the median of the timed passes is kept."""
    import numpy as np
    import torch
    from transformers import AutoTokenizer, BertConfig, BertForSequenceClassification

    from reranker.neural import forward
    from reranker.neural import scoring as sc
    from reranker.neural.models import Classifier, mean_pool  # noqa: F401

    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_throughput import encoder_flops, matmul_peak

    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
    data = json.loads(Path(args.lengths).read_text())
    lengths, firsts = data["lengths"][:args.pairs], data["first_segment"][:args.pairs]
    rng = np.random.default_rng(0)
    ids = [[101] + rng.integers(1000, 29000, n - 2).tolist() + [102] for n in lengths]
    types = [[0] * f + [1] * (n - f) for n, f in zip(lengths, firsts)]
    layers, hidden, heads, inner = args.shape
    config = BertConfig(vocab_size=30522, hidden_size=hidden, num_hidden_layers=layers, num_attention_heads=heads,
                        intermediate_size=inner, max_position_embeddings=512, num_labels=2)
    torch.manual_seed(0)
    with torch.device(device):
        model = BertForSequenceClassification(config).eval()
    tokenizer = AutoTokenizer.from_pretrained(args.tokenizer)
    classifier = Classifier(model=model, tokenizer=tokenizer, relevant_index=1, head="sequence_classification",
                            source="random", fingerprint="random", weights_fingerprint="random")
    original = sc.bert_logits

    def host_flag_logits(model, head, batch):
        """bert_logits with the padding decided on the host (batch['_unpadded']): no device-to-host sync."""
        batch = dict(batch)
        unpadded = batch.pop("_unpadded")
        mask = batch["attention_mask"]
        sdpa_mask = None if unpadded else mask.bool()[:, None, None, :]
        hidden = model.bert.embeddings(input_ids=batch["input_ids"], token_type_ids=batch["token_type_ids"])
        *rest, last = model.bert.encoder.layer
        for layer in rest:
            hidden = forward._feed_forward(layer, forward._attention(layer, hidden, hidden, sdpa_mask))
        cls = forward._feed_forward(last, forward._attention(last, hidden[:, :1], hidden, sdpa_mask))
        pooled = model.bert.pooler(cls) if model.bert.pooler is not None else cls[:, 0]
        return model.classifier(pooled)

    class HostFlagScorer(sc.Scorer):
        def _batch(self, ids, types):
            batch = dict(super()._batch(ids, types))
            batch["_unpadded"] = len({len(x) for x in ids}) == 1
            return batch

    variants = {  # name: (scorer class, forward, batch_size, batch_tokens)
        "today (512 pairs / 65,536 tokens)": (sc.Scorer, original, 512, 65536),
        "host padding flag": (HostFlagScorer, host_flag_logits, 512, 65536),
        "larger batches (2,048 / 262,144)": (sc.Scorer, original, 2048, 262144),
        "host flag + larger batches": (HostFlagScorer, host_flag_logits, 2048, 262144),
    }
    peak = matmul_peak(device, torch.bfloat16 if device.type == "cuda" else torch.float32, 8192 if device.type == "cuda" else 1024)
    flops = encoder_flops(lengths, layers, hidden, inner)
    times: dict[str, list[float]] = {name: [] for name in variants}
    logits: dict[str, np.ndarray] = {}
    for round_ in range(args.rounds + 1):  # round 0: warm-up of every variant
        for name, (cls, fwd, size, tokens) in variants.items():
            sc.bert_logits = fwd
            try:
                scorer = cls(classifier, precision="fast" if device.type == "cuda" else "exact", device=str(device),
                             batch_size=size, batch_tokens=tokens, max_length=512)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                started = time.perf_counter()
                values = scorer.logits_tokens(ids, types)
                if device.type == "cuda":
                    torch.cuda.synchronize()
                seconds = time.perf_counter() - started
            finally:
                sc.bert_logits = original
            if round_:
                times[name].append(seconds)
            logits.setdefault(name, values)
    base = next(iter(variants))
    result = {"device": torch.cuda.get_device_name(0) if device.type == "cuda" else "cpu", "torch": torch.__version__,
              "shape_layers_hidden_heads_intermediate": args.shape, "weights": "random (seeded)", "pairs": len(lengths),
              "mean_tokens": round(statistics.fmean(lengths), 1), "rounds": args.rounds,
              "matmul_peak_tflops_bf16": round(peak, 1), "variants": {}}
    for name, seconds in times.items():
        median = statistics.median(seconds)
        result["variants"][name] = {
            "seconds": [round(s, 4) for s in seconds], "median_s": round(median, 4),
            "pairs_per_second": round(len(lengths) / median, 1), "tflops": round(flops / median / 1e12, 1),
            "fraction_of_peak": round(flops / median / 1e12 / peak, 3),
            "speedup_vs_today": round(statistics.median(times[base]) / median, 3),
            "max_abs_logit_diff_vs_today": float(np.abs(logits[name] - logits[base]).max()),
        }
        print(f"{name:<36} {result['variants'][name]['pairs_per_second']:>9} pairs/s "
              f"{result['variants'][name]['fraction_of_peak']:>6.1%} of peak  x{result['variants'][name]['speedup_vs_today']}"
              f"  spread {min(seconds):.3f}-{max(seconds):.3f} s", file=sys.stderr)
    Path(args.out).write_text(json.dumps(result, indent=1))
    return 0


def tiny(args: argparse.Namespace) -> int:
    """The smoke test's jobs: the same commands on a configuration with tiny sizes, outputs under .gpu/tiny/."""
    import yaml

    folder = ROOT / ".gpu/tiny"
    folder.mkdir(parents=True, exist_ok=True)
    config = yaml.safe_load((ROOT / RUN / "config.yaml").read_text())

    def shrink(node):
        if isinstance(node, dict):
            for key, value in node.items():
                if key == "max_pairs" and value:
                    node[key] = 32
                elif key == "validation_fraction":
                    node[key] = 0.01
                else:
                    shrink(value)
        elif isinstance(node, list):
            for value in node:
                shrink(value)

    shrink(config)
    config["training"]["validation_fraction"] = 0.01
    config["radboud"]["candidates"] = 5
    (folder / "config.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    spec = json.loads((ROOT / ".gpu/jobs.json").read_text())
    swaps = [(f"{RUN}/config.yaml", ".gpu/tiny/config.yaml"), (f"{RUN}/work/checkpoints/", ".gpu/tiny/checkpoints/"),
             (f"{RUN}/work/scores/", ".gpu/tiny/scores/"), (f"{RUN}/work/cache/", ".gpu/tiny/cache/"),
             (f"{RUN}/work/parallel/", ".gpu/tiny/parallel/"), (f"{RUN}/logs/", ".gpu/tiny/logs/"),
             ("--candidates 20 ", "--candidates 1 ")]
    for job in spec["jobs"]:
        for old, new in swaps:
            job["command"], job["out"] = job["command"].replace(old, new), job["out"].replace(old, new)
    (folder / "jobs.json").write_text(json.dumps(spec, indent=1))
    return 0


# ------------------------------------------------------------------------------------------- summary (here)

def summary(args: argparse.Namespace) -> int:  # defined in gpu_default_part_summary.py: kept apart, it is long
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from gpu_default_part_summary import main as summarize

    return summarize(args)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("pack")
    p.add_argument("--stage", default="/tmp/gpu_default_part_stage", help="scratch folder for the cut runs")
    p.add_argument("--hf-home", default=os.environ.get("HF_HOME", "/work/shared/hf_home"))
    p.add_argument("--pairs", help="pairs.jsonl of gpu_throughput.py --write-pairs (for the scoring side test)")
    p.set_defaults(func=pack)
    p = sub.add_parser("hf-home")
    p.add_argument("--model", default=".gpu/model.tar.xz")
    p.add_argument("--hf-home", required=True)
    p.set_defaults(func=hf_home)
    p = sub.add_parser("jobs")
    p.add_argument("--jobs", default=".gpu/jobs.json")
    p.add_argument("--group", required=True)
    p.add_argument("--only", nargs="*", help="only the jobs whose name holds one of these")
    p.add_argument("--parallel", action="store_true", help="start every job of the group at once")
    p.add_argument("--timeout", type=float, default=300, help="seconds per job (all of them, in parallel)")
    p.add_argument("--deadline", type=float, help="epoch seconds after which no further job starts")
    p.add_argument("--out", required=True)
    p.set_defaults(func=run_jobs)
    p = sub.add_parser("scoring")
    p.add_argument("--lengths", default=".gpu/lengths.json")
    p.add_argument("--tokenizer", required=True)
    p.add_argument("--pairs", type=int, default=20000)
    p.add_argument("--shape", type=int, nargs=4, default=[24, 1024, 16, 4096])
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--out", required=True)
    p.set_defaults(func=scoring)
    p = sub.add_parser("tiny")
    p.set_defaults(func=tiny)
    p = sub.add_parser("summary")
    p.add_argument("--device-dir", required=True, help="the folder the device's files came back to")
    p.add_argument("--out", default="results/benchmarks/gpu_default_part.json")
    p.set_defaults(func=summary)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
