"""`python benchmarks/gpu_default_part.py summary`: the GPU jobs beside the stored CPU run, and a projection.

Reads the device's files (jobs.json, scoring.json, env.txt) and the stored default's own records
(results/numbers/resources.json, radboud_2_1.json, birch_main.json, ntnu_5_5.json, results/ablation/run_time.md's
Birch scoring minutes), writes results/benchmarks/gpu_default_part.json. Every number is marked: `measured` (on the
GPU in this call, or stored from the CPU run), `derived` (arithmetic on stored numbers) or `projected`.
"""

from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
NUMBERS = ROOT / "results/numbers"
BIRCH_SCORE_JOBS_S = 15.8 * 60  # results/ablation/run_time.md: "Birch's 16 score jobs | ... | 15.8 min on 1 thread"
# NTNU trainings of the default (workflow/config/config.yaml, ntnu.models): steps per row.
NTNU_STEPS = {"bert": 150, "head-only": 150, "seed-2": 150, "seed-3": 150, "seed-4": 150, "layers-4": 150,
              "distilled-layers-4": 150, "epochs-2": 300, "layers-2": 800, "layers-1": 800, "minilm-l3": 800,
              "distilled-layers-2": 800, "distilled-layers-1": 800}
RUNS_READ = {  # which BM25 runs each job reads (the GPU got them cut to the top 100; parse_cost.json times both)
    "train:scifact-soft-80": ["beir-scifact-train", "cranfield-titles", "cisi-titles", "cacm-titles"],
    "train:scifact-bi": ["beir-scifact-train", "cranfield-titles", "cisi-titles", "cacm-titles"],
    "train:radboud": ["cranfield"], "score_radboud": ["cranfield"], "train:ntnu-bert": ["beir-scifact-train"],
    "score_ntnu": ["beir-scifact-test"],
}


def load(path: Path):
    return json.loads(path.read_text())


def stored_cpu() -> dict:
    """Per-job and per-stage times of the stored CPU run (984412c, 2 cores)."""
    res = load(NUMBERS / "resources.json")["numbers"]["resources"]
    rb = load(NUMBERS / "radboud_2_1.json")["provenance"]["checkpoints"]["BERT baseline"]
    birch = load(NUMBERS / "birch_main.json")["provenance"]["checkpoints"]
    ntnu = load(NUMBERS / "ntnu_5_5.json")["numbers"]["beir/scifact/test"]
    queries = 300
    ntnu_score = 60 * queries / ntnu["MiniLM-L6"]["Queries/min"] - 60 * queries / ntnu["BM25"]["Queries/min"] \
        - res["segment · beir-scifact-test"]["time (s)"]
    birch_cranfield = BIRCH_SCORE_JOBS_S - sum(res[f"score · {c}"]["time (s)"] for c in ("cacm", "cisi", "vaswani"))
    rb_score_mean = (res["score · cranfield"]["time (s)"] - birch_cranfield) / (res["score · cranfield"]["jobs"] - 4)
    return {
        "resources": res,
        "jobs": {
            "train:scifact-soft-80": {"cpu_s": res["train · scifact-soft-80"]["time (s)"], "kind": "measured",
                                      "source": "results/numbers/resources.json, train · scifact-soft-80 "
                                                "(Snakemake benchmark: the job's wall clock)",
                                      "stage_seconds": birch["BERT(SciFact+titles, soft labels 0.8)"]["seconds"]},
            "train:scifact-bi": {"cpu_s": res["train · scifact-bi"]["time (s)"], "kind": "measured",
                                 "source": "results/numbers/resources.json, train · scifact-bi (1 thread)",
                                 "stage_seconds": birch["Bi-encoder MiniLM-L6 (SciFact+titles)"]["seconds"]},
            **{f"train:radboud-baseline-g1-f{i + 1}": {
                "cpu_s": c["seconds"], "kind": "measured",
                "source": "results/numbers/radboud_2_1.json provenance, BERT baseline's checkpoints in fold order: the train "
                          "stage's own seconds (reranker.json; the job's wall clock adds ~3 s of start-up: scifact-soft-80 "
                          "1036.1 s against 1038.7 s)", "stage_seconds": c["seconds"]} for i, c in enumerate(rb)},
            **{f"score_radboud:radboud-baseline-g1-f{i}": {
                "cpu_s": round(rb_score_mean, 1), "kind": "derived",
                "source": "per-job times of score_radboud are not stored: (score · cranfield's 6,409.9 s - Birch's 4 Cranfield "
                          f"score jobs, {birch_cranfield:.0f} s = 15.8 min of Birch's 16 score jobs in results/ablation/run_time.md "
                          "- their CACM, CISI and Vaswani jobs) / 105 score_radboud jobs"} for i in range(1, 6)},
            "train:ntnu-bert": {"cpu_s": round(res["train · ntnu-*"]["time (s)"] / res["train · ntnu-*"]["jobs"], 1),
                                "kind": "derived", "source": "not stored per job: the mean of the 13 NTNU trainings "
                                "(150 to 800 steps; ntnu-bert is one of the 150-step rows)"},
            "score_ntnu:ntnu-bert": {"cpu_s": round(ntnu_score, 1), "kind": "derived",
                                     "source": "results/numbers/ntnu_5_5.json: 300 queries / 48.7 queries per minute (BM25 + "
                                               "passage splitting + scoring, the Snakemake benchmarks' wall clock) - BM25's "
                                               "300 / 1,354.4 per minute - segment · beir-scifact-test's 1.3 s"},
        },
        "birch_cranfield_score_s": birch_cranfield,
    }


def parse_delta(parse_cost: dict, job: str) -> float:
    """Seconds the full runs' parsing adds over the cut runs' (measured here on the CPU)."""
    key = next((k for k in RUNS_READ if job.startswith(k)), None)
    runs = parse_cost["runs"]
    return round(sum(runs[f".gpu/run/work/runs/{r}/bm25.run"]["read_run_full_s"] - runs[f".gpu/run/work/runs/{r}/bm25.run"]
                     ["read_run_cut_s"] for r in RUNS_READ.get(key, [])), 2)


def main(args) -> int:
    device_dir = Path(args.device_dir)
    jobs = load(device_dir / "jobs.json")
    parse_cost = load(ROOT / ".gpu/parse_cost.json")
    env = (device_dir / "env.txt").read_text() if (device_dir / "env.txt").exists() else ""
    cpu = stored_cpu()
    res = {k: v for k, v in cpu["resources"].items() if k != "sum"}  # the table's sum row is not a stage
    gpu: dict[str, dict] = {}
    per_job = []
    for group in ("core", "extra"):
        for j in jobs["groups"].get(group, {}).get("jobs", []):
            if "wall_s" not in j:
                continue
            meta = j.get("stage_meta", {})
            delta = parse_delta(parse_cost, j["name"])
            entry = {"job": j["name"], "command": j["command"], "rc": j["rc"], "gpu_wall_s": j["wall_s"],
                     "gpu_job_cpu_s": j["cpu_s"], "gpu_job_max_rss_mib": j["max_rss_mib"],
                     "gpu_stage_seconds": meta.get("seconds"), "gpu_pairs_per_second": (meta.get("throughput") or {}).get(
                         "pairs_per_second", meta.get("pairs_per_second")),
                     "gpu_device_usage": meta.get("device_usage"), "steps": meta.get("steps"),
                     "parse_delta_s": delta, "gpu_wall_adjusted_s": round(j["wall_s"] + delta, 2)}
            stored = cpu["jobs"].get(j["name"])
            if stored:
                entry.update({"cpu_s_stored": stored["cpu_s"], "cpu_kind": stored["kind"], "cpu_source": stored["source"],
                              "speedup_cpu_over_gpu": round(stored["cpu_s"] / j["wall_s"], 1)})
                if stored.get("stage_seconds") and meta.get("seconds"):
                    entry["speedup_stage_seconds"] = round(stored["stage_seconds"] / meta["seconds"], 1)
            per_job.append(entry)
            gpu[j["name"]] = entry
    ok = lambda name: name in gpu and gpu[name]["rc"] == 0
    adj = lambda name: gpu[name]["gpu_wall_adjusted_s"]

    # ---- per-job GPU times of each class of the default's jobs: measured, or projected from a measured one
    rb_train = [adj(f"train:radboud-baseline-g1-f{i}") for i in range(1, 6) if ok(f"train:radboud-baseline-g1-f{i}")]
    rb_score = [adj(f"score_radboud:radboud-baseline-g1-f{i}") for i in range(1, 6) if ok(f"score_radboud:radboud-baseline-g1-f{i}")]
    g_soft = adj("train:scifact-soft-80")
    g_bi = adj("train:scifact-bi") if ok("train:scifact-bi") else None
    nb = gpu["train:ntnu-bert"]
    nb_steps_s = nb["steps"] * 16 / nb["gpu_pairs_per_second"] if nb.get("gpu_pairs_per_second") else 0.0
    step_s = nb_steps_s / nb["steps"] if nb.get("steps") else 0.0
    ntnu_train = {row: adj("train:ntnu-bert") + (steps - 150) * step_s for row, steps in NTNU_STEPS.items()}
    g_ntnu_score = adj("score_ntnu:ntnu-bert")
    g_rb_train, g_rb_score = statistics.fmean(rb_train), statistics.fmean(rb_score)
    classes = [  # (class, jobs, stored CPU job time, GPU seconds per job or total, how)
        ("train · scifact-soft-80", 1, res["train · scifact-soft-80"]["time (s)"], g_soft, "measured"),
        ("train · scifact-bi", 1, res["train · scifact-bi"]["time (s)"], g_bi if g_bi else g_soft,
         "measured" if g_bi else "projected: as scifact-soft-80 (the same 13,200 pairs and 825 steps)"),
        ("train · radboud-*", 91, res["train · radboud-*"]["time (s)"], g_rb_train * 91,
         "projected: 91 x the mean of the 5 measured baseline fold trainings (85 fold trainings of 150 steps of every "
         "variant, and the 6 MLM/NSP pre-trainings, assumed alike)"),
        ("train · ntnu-*", 13, res["train · ntnu-*"]["time (s)"], sum(ntnu_train.values()),
         f"projected: ntnu-bert's measured job ({adj('train:ntnu-bert'):.1f} s for 150 steps) + its measured step time "
         f"({step_s * 1000:.1f} ms, 6 layers: an upper bound for the 1-4-layer rows) x the extra steps of each row "
         "(epochs-2 300, the 5 small rows 800)"),
        ("score · radboud (cranfield)", 105, res["score · cranfield"]["time (s)"] - cpu["birch_cranfield_score_s"],
         g_rb_score * 105, "projected: 105 x the mean of the 5 measured score_radboud jobs (every ranking scores "
                           "the same 4,500 pairs of its fold)"),
        ("score · ntnu (beir-scifact-test)", 14, res["score · beir-scifact-test"]["time (s)"], g_ntnu_score * 14,
         "projected: 14 x the measured ntnu-bert score_ntnu job (an upper bound for the smaller models; the k40 "
         "reference job scores twice the pairs)"),
        ("score · birch (cranfield, vaswani, cisi, cacm)", 16, BIRCH_SCORE_JOBS_S, max(g_ntnu_score, g_rb_score) * 16,
         "projected: 16 x the larger of the measured score jobs (not measured: Birch's jobs score 8k-40k sentence "
         "pairs of up to 256 tokens; a job on the GPU is mostly start-up, tokenising and reading)"),
    ]
    gpu_stage_cpu_s = sum(c[2] for c in classes)
    all_cpu_s = sum(v["time (s)"] for k, v in res.items())
    cpu_only_s = all_cpu_s - gpu_stage_cpu_s
    cpu_only_jobs = sum(v["jobs"] for v in res.values()) - sum(c[1] for c in classes)
    gpu_sum = sum(c[3] for c in classes)
    # several jobs at once on the one GPU (Snakemake --cores all, rules declare no GPU resource): the measured
    # throughput of 5 fold trainings side by side against one at a time
    par = jobs["groups"].get("parallel", {})
    par_ok = par and all(j.get("rc") == 0 for j in par.get("jobs", []))
    seq_sum = sum(gpu[f"train:radboud-baseline-g1-f{i}"]["gpu_wall_s"] for i in range(1, 6))
    concurrency = round(seq_sum / par["wall_s"], 2) if par_ok else None
    # the longest chain after the first stage: scifact-soft-80 -> ntnu-epochs-2 -> an 800-step distilled student
    # -> its score job; or -> an MLM pre-training -> a fold training -> its score job
    chain_ntnu = g_soft + ntnu_train["epochs-2"] + ntnu_train["distilled-layers-2"] + g_ntnu_score
    chain_rb = g_soft + 2 * g_rb_train + g_rb_score
    chain = max(chain_ntnu, chain_rb)
    first_stage = res["export · beir-scifact-train"]["time (s)"] + res["index · beir-scifact-train"]["time (s)"] \
        + res["retrieve · beir-scifact-train"]["time (s)"]
    wall_serial_low = gpu_sum + first_stage
    wall_serial_high = gpu_sum + cpu_only_s
    wall_parallel = max(chain, g_soft + (gpu_sum - g_soft) / concurrency) + first_stage if concurrency else None
    scoring = load(device_dir / "scoring.json") if (device_dir / "scoring.json").exists() else None
    stored_run = load(NUMBERS / "run.json")
    result = {
        "what": "A part of the default (make run) on one GPU through the suite's own stage commands, each job timed, "
                "beside the same jobs' times in the stored CPU run, and a projection of the whole default on one GPU",
        "device": next((line.split(" ", 1)[1] for line in env.splitlines() if line.startswith("device ")), None),
        "device_env": env,
        "commands": {"device": "bash benchmarks/gpu_default_part.sh", "calls": jobs.get("calls"),
                     "jobs_from": jobs["made_by"], "summary": "python benchmarks/gpu_default_part.py summary --device-dir DIR"},
        "stored_cpu_run": {"wall_clock_s": stored_run.get("wall_clock_seconds"), "jobs": stored_run.get("jobs"),
                           "machine": "2-core AMD EPYC (avx512_bf16), results/numbers/run.json, 984412c"},
        "differences_from_the_cpu_run": [
            "all-MiniLM-L6-v2 was carried in fp16 and upcast to fp32 (the upload limit is 64 MiB; max |rounding| "
            f"{load(ROOT / '.gpu/model.json')['max_abs_rounding_error']:.1e}): the base weights, so every checkpoint's numbers, "
            "differ slightly from the CPU run's; the work (pairs, steps, held-out passes) is the same",
            "the BM25 runs were carried cut to each query's top 100 (every GPU job reads at most the top 100: negatives_depth "
            "100 and 40, K 100 and 20); parsing the full runs costs more, measured here (.gpu/parse_cost.json) and added "
            "back as parse_delta_s in gpu_wall_adjusted_s, which the projection uses",
            "bf16 autocast on the GPU, bf16 on the CPU (avx512_bf16): the same precision setting (auto), other kernels",
            "torch 2.11 / transformers 5.17 on the GPU machine, torch 2.13 / transformers 5.23 in the stored run",
        ],
        "per_job": per_job,
        "parallel": {"what": "the 5 fold trainings started at once on the one GPU (as snakemake --cores all would: the "
                             "default's rules reserve no GPU), against the same 5 one at a time",
                     "jobs": [{k: j.get(k) for k in ("name", "rc", "wall_s", "cpu_s")} for j in par.get("jobs", [])],
                     "wall_s": par.get("wall_s"), "sequential_sum_s": round(seq_sum, 2),
                     "throughput_gain": concurrency, "kind": "measured"} if par else None,
        "projection": {
            "kind": "projected, from the per-job GPU times measured here (gpu_wall_adjusted_s)",
            "classes": [{"class": c[0], "jobs": c[1], "cpu_job_time_s_stored": round(c[2], 1),
                         "gpu_job_time_s": round(c[3], 1), "how": c[4]} for c in classes],
            "cpu_only_jobs": {"jobs": cpu_only_jobs, "job_time_s_stored": round(cpu_only_s, 1),
                              "how": "kept at their stored CPU times (Lucene, evaluation, fusion, tables, figures: no GPU "
                                     "work); on a 16-core GPU machine they run beside the GPU jobs"},
            "gpu_jobs_sum_s": round(gpu_sum, 1),
            "gpu_jobs_stored_cpu_s": round(gpu_stage_cpu_s, 1),
            "wall_one_gpu_job_at_a_time_s": {"low": round(wall_serial_low, 1), "high": round(wall_serial_high, 1),
                                             "how": "every GPU job one after another (e.g. --resources gpu=1 with each "
                                                    "train/score rule reserving it); low: only the first stage "
                                                    "(SciFact train's export, index, BM25: "
                                                    f"{first_stage:.0f} s) before them, the other CPU-only jobs beside "
                                                    "them; high: no CPU-only job overlapping"},
            "wall_several_jobs_at_once_s": {
                "value": round(wall_parallel, 1) if wall_parallel else None,
                "how": "the first stage, then scifact-soft-80 alone (everything else but scifact-bi waits for it), then "
                       "the rest of the GPU work at the measured throughput gain of 5 jobs side by side, but no shorter "
                       f"than the longest chain after the first stage ({chain:.0f} s: scifact-soft-80 -> ntnu-epochs-2 -> "
                       "an 800-step distilled student -> its scoring, or -> MLM pre-training -> fold training -> "
                       "scoring); assumes the gain of 5 MiniLM jobs holds for the mix, and the GPU memory holds them "
                       "(each job's peak is in per_job)"},
            "stored_cpu_wall_s": stored_run.get("wall_clock_seconds"),
        },
        "scoring_side_test": {**scoring, "kind": "measured", "reading": (
            "bert-large-shaped random weights, bf16, the 16,437 Cranfield pairs' token lengths (random ids), 3 timed "
            "passes per variant after a warm-up, variants interleaved. A padding flag decided on the host (no "
            "bool(mask.all()) sync per batch): 0.8% faster, identical logits, spreads apart (1.519-1.523 s against "
            "1.531-1.546 s): real but small, since the per-batch sync only exposes one batch's launch latency. Batches 4x "
            "larger (2,048 pairs / 262,144 tokens): 8.5% slower (wider padding in longer-sorted batches and larger "
            "attention tiles did not pay). Neither brings scoring much nearer the matmul peak; the gap is the "
            "non-matmul work of short sequences (mean 51 tokens: layer norms, GELU, softmax, bias adds in eager mode)")}
        if scoring else None,
    }
    out = ROOT / args.out
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"-> {out}", file=sys.stderr)
    for e in per_job:
        print(f"{e['job']:<44} GPU {e['gpu_wall_s']:>7.1f} s (adj {e['gpu_wall_adjusted_s']:>7.1f})  CPU "
              f"{e.get('cpu_s_stored', '-'):>8} s [{e.get('cpu_kind', '-')}]  x{e.get('speedup_cpu_over_gpu', '-')}")
    for c in result["projection"]["classes"]:
        print(f"{c['class']:<48} {c['jobs']:>4} jobs  CPU {c['cpu_job_time_s_stored']:>9.1f} s  GPU {c['gpu_job_time_s']:>8.1f} s")
    p = result["projection"]
    print(f"GPU jobs: {p['gpu_jobs_sum_s']:.0f} s (CPU run: {p['gpu_jobs_stored_cpu_s']:.0f} s); CPU-only jobs "
          f"{p['cpu_only_jobs']['job_time_s_stored']:.0f} s; wall one at a time {p['wall_one_gpu_job_at_a_time_s']['low']:.0f}-"
          f"{p['wall_one_gpu_job_at_a_time_s']['high']:.0f} s; several at once {p['wall_several_jobs_at_once_s']['value']} s; "
          f"stored CPU wall {p['stored_cpu_wall_s']} s")
    return 0
