#!/usr/bin/env bash
# Issue 58 (Chapter 3: the carried head's effect on multi-level rows), measured on one lent GPU in one call: the
# Radboud baseline, multi-label (head carried from scifact-soft-80, carry_head: true) and multi-label-fresh
# (head_from: null) rows, 5 Cranfield folds each, through the suite's own stage commands (Snakemake's dry run).
#
#   prepare        (here) Snakemake's commands for the three rows' evaluation JSONs and the two agreement JSONs on the
#                  scratch run folder .gpu/run (the first stage there, packed by gpu_default_part.py pack), split into
#                  the device's groups -> .gpu/carried_head/jobs.json, with the resolved config beside it
#   device         (the GPU machine; the default) scifact-soft-80 (the start, 825 steps), then the 15 fold trainings
#                  at once, then the 15 score_radboud jobs at once, each group timed by gpu_default_part.py jobs;
#                  the model cache by gpu_default_part.py hf-home. To $OUT: jobs.json, env.txt, log.txt,
#                  results.tar.gz (the checkpoints' small files, the fold scores, the logs)
#   finish DIR     (here) DIR = the device's files: unpacked into .gpu/run, then the joins, reranks (fuse aggregate
#                  --method firstp over the full depth-1000 BM25 run, as the default does), evaluations and
#                  agreements run here on the CPU (no GPU work; the GPU machine lacks ir_measures), and the record
#                  results/ablation/radboud_carried_head_gpu.json
#
#   bash benchmarks/gpu_carried_head.sh prepare
#   run(command="bash benchmarks/gpu_carried_head.sh", timeout_s=190,
#       carry=[".gpu/inputs.tar.xz", ".gpu/model.tar.xz", ".gpu/carried_head", ".whl"])
#   bash benchmarks/gpu_carried_head.sh finish <files_at>
#
#   GPU_CH_TINY=1 PYTHON=.venv/bin/python bash benchmarks/gpu_carried_head.sh device   # the smoke test on a CPU:
#   GPU_CH_TINY=1 PYTHON=.venv/bin/python bash benchmarks/gpu_carried_head.sh finish /tmp/gpu_carried_head
#       fold 1 of each row on gpu_default_part.py tiny's sizes, under .gpu/tiny (its scifact-soft-80 reused when
#       there); the record goes to /tmp/gpu_carried_head/tiny_record.json
set +e
cd "$(dirname "$0")/.." || exit 2
MODE=${1:-device}
PY=${PYTHON:-python3}
[ "$MODE" != device ] && [ -z "$PYTHON" ] && PY=.venv/bin/python   # prepare and finish run here
OUT=${OUT:-/tmp/gpu_carried_head}
DIR=.gpu/carried_head
JOBS=$DIR/jobs.json
[ -n "$GPU_CH_TINY" ] && JOBS=$DIR/tiny/jobs.json
RECORD=${GPU_CH_RECORD:-results/ablation/radboud_carried_head_gpu.json}
[ -n "$GPU_CH_TINY" ] && RECORD=$OUT/tiny_record.json
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}

# ------------------------------------------------------------------------------------------------ prepare (here)
if [ "$MODE" = prepare ]; then
  mkdir -p $DIR
  R=.gpu/run/work/eval/cranfield
  TARGETS="$R/radboud.baseline.g1.relevant.json $R/radboud.multi-label.g1.argmax.json
    $R/radboud.multi-label-fresh.g1.argmax.json $R/radboud.multi-label.g1.argmax.agreement.json
    $R/radboud.multi-label-fresh.g1.argmax.agreement.json"
  # shellcheck disable=SC2086
  BIRCH_DATA=${BIRCH_DATA:-/work/shared/data} IR_DATASETS_HOME=${IR_DATASETS_HOME:-/tmp/gpu_ch_ird} \
    HF_HOME=${HF_HOME:-/work/shared/hf_home} PATH=$PWD/.venv/bin:$PATH nice -n 19 .venv/bin/snakemake -n -p --cores 2 \
    --config run_dir=.gpu/run -- $TARGETS > $DIR/dry_run.txt 2>&1 || { tail -20 $DIR/dry_run.txt; exit 2; }
  exec nice -n 19 .venv/bin/python - "$DIR" $TARGETS <<'EOF'
import json, shlex, shutil, subprocess, sys, tarfile
from pathlib import Path

folder, targets = Path(sys.argv[1]), sys.argv[2:]
text = (folder / "dry_run.txt").read_text()
rules = [line.split()[1].rstrip(":") for line in text.splitlines() if line.startswith(("rule ", "localrule "))]
unexpected = set(rules) - {"train", "score_radboud", "join_fold_scores", "rerank_radboud", "evaluate", "radboud_agreement"}
if unexpected:  # the packed first stage no longer matches the configuration: pack again first
    sys.exit(f"the dry run needs more than the packed inputs: {sorted(unexpected)}")
commands = [line.removeprefix("Shell command: ") for line in text.splitlines() if line.startswith("Shell command: ")]
jobs, local = [], []
for command in commands:
    words = shlex.split(command.split(" 2> ")[0].split(" > ")[0])
    if words[:4] in (["python", "-m", "reranker", "train"], ["python", "-m", "reranker", "score"]):
        stage, name = words[3], words[words.index("--checkpoint") + 1]
        group = "base" if name == "scifact-soft-80" else stage
        jobs.append({"name": f"{stage}:{name}", "stage": stage, "checkpoint": name, "group": group,
                     "out": words[words.index("--out") + 1], "command": command})
    else:
        local.append(command)
order = {"cat": 0, "python -m reranker fuse": 1, "python -m reranker evaluate --config": 2,
         "python -m reranker evaluate agreement": 3}
local.sort(key=lambda c: next(v for k, v in order.items() if c.startswith(k)))
assert [j["group"] for j in jobs].count("base") == 1 and len(jobs) == 31 and len(local) == 11, (len(jobs), len(local))
# every input a device job reads from the first stage is in the packed inputs
with tarfile.open(".gpu/inputs.tar.xz") as tar:
    packed = {m.name for m in tar.getmembers()}
    packed_config = tar.extractfile(".gpu/run/config.yaml").read().decode()
needed = {w for j in jobs for w in shlex.split(j["command"].split(" 2> ")[0]) for w in w.split(":")
          if w.startswith(".gpu/run/work/") and "/checkpoints/" not in w and "/scores/" not in w and "/cache/" not in w}
missing = sorted(n for n in needed if n not in packed)
if missing:
    sys.exit(f"not in .gpu/inputs.tar.xz: {missing}")
shutil.copy(".gpu/run/config.yaml", folder / "config.yaml")  # the dry run wrote it: today's configuration, resolved
same = [a for a, b in zip(packed_config.splitlines(), Path(".gpu/run/config.yaml").read_text().splitlines())
        if a != b and "data/" not in a]
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
(folder / "jobs.json").write_text(json.dumps({
    "made_by": "snakemake -n -p --cores 2 --config run_dir=.gpu/run -- " + " ".join(targets), "commit": commit,
    "config_differs_from_packed": same[:20], "jobs": jobs, "local": local}, indent=1))
print(f"{len(jobs)} device jobs, {len(local)} local commands -> {folder}/jobs.json (commit {commit[:7]}); "
      f"config lines differing from the packed one (data paths aside): {len(same)}", file=sys.stderr)
EOF
fi

# ------------------------------------------------------------------------------------------------ finish (here)
if [ "$MODE" = finish ]; then
  FILES=${2:?the folder the device files came back to}
  [ -f "$FILES/results.tar.gz" ] && tar -xzf "$FILES/results.tar.gz"
  mkdir -p "$(dirname "$RECORD")"
  export BIRCH_DATA=${BIRCH_DATA:-/work/shared/data} IR_DATASETS_HOME=${IR_DATASETS_HOME:-/tmp/gpu_ch_ird}
  exec nice -n 19 "$PY" - "$JOBS" "$FILES" "$RECORD" "${GPU_CH_TINY:+tiny}" <<'EOF'
import json, os, platform, subprocess, sys, time
from pathlib import Path

from reranker.stages.evaluate import agreement
from reranker.formats.runs import read_run

spec_path, files, record, tiny = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3]), bool(sys.argv[4])
spec = json.loads(spec_path.read_text())
env = dict(os.environ, PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
ran = []
for command in spec["local"]:
    if command.startswith("cat "):  # the join: the folds scored (all 5 on the device; fold 1 alone in the smoke test)
        inputs, out = command.split(" > ")[0].split()[1:], command.split(" > ")[1].split()[0]
        present = [p for p in inputs if Path(p).exists()]
        if len(present) < len(inputs) and not tiny:
            print(f"MISSING fold scores for {out}: {sorted(set(inputs) - set(present))}", file=sys.stderr)
        command = f"cat {' '.join(present)} > {out}" if present else f"false no fold scores for {out}"
    for redirect in (" 2> ", " > "):
        log = command.rsplit(redirect, 1)[1].split()[0] if redirect in command else None
        if log:
            Path(log).parent.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    rc = subprocess.run(["bash", "-c", command], env=env).returncode
    ran.append({"command": command, "rc": rc, "wall_s": round(time.perf_counter() - started, 2)})
    print(f"rc {rc} {ran[-1]['wall_s']:>6} s  {command[:150]}", file=sys.stderr)

device = json.loads((files / "jobs.json").read_text()) if (files / "jobs.json").exists() else {"groups": {}}
env_txt = (files / "env.txt").read_text() if (files / "env.txt").exists() else ""
by_name = {j["name"]: j for g in device["groups"].values() for j in g["jobs"]}
variants = {"baseline": ("relevant", "carried (scifact-soft-80's two-way head)"),
            "multi-label": ("argmax", "carried (scifact-soft-80's head, one map per level)"),
            "multi-label-fresh": ("argmax", "fresh (head_from: null)")}
local_eval = {c.split("--out ")[1].split()[0]: c for c in spec["local"] if "--out " in c}


def path_of(kind, variant, ranking):
    pattern = {"eval": "eval/cranfield/radboud.{v}.g1.{r}.json", "agreement": "eval/cranfield/radboud.{v}.g1.{r}.agreement.json",
               "run": "/radboud.{v}.g1.{r}.run", "joined": "scores/cranfield/radboud/{v}.g1.{r}.tsv"}[kind]
    tail = pattern.format(v=variant, r=ranking)
    return next((Path(p) for p in [*local_eval, *(c.split(" > ")[1].split()[0] for c in spec["local"] if c.startswith("cat "))]
                 if p.endswith(tail)), None)


reference = path_of("run", "baseline", "relevant")
reference_run = read_run(reference) if reference and reference.exists() else None
rows, versions, devices = {}, {}, set()
for variant, (ranking, head) in variants.items():
    row = {"ranking": ranking, "head": head}
    ev = path_of("eval", variant, ranking)
    if ev and ev.exists():
        data = json.loads(ev.read_text())
        row.update({m: round(v, 4) for m, v in data["aggregate"].items()}, queries=data["queries"], eval_file=str(ev))
    else:
        row["eval"] = "missing"
    ag = path_of("agreement", variant, ranking)
    if ag and ag.exists():
        data = json.loads(ag.read_text())
        row.update(kendall_tau_vs_baseline=round(data["kendall_tau"], 6), identical_share_vs_baseline=round(data["identical"], 4),
                   agreement_queries=data["queries"], agreement_file=str(ag))
    run, joined = path_of("run", variant, ranking), path_of("joined", variant, ranking)
    if reference_run and run and run.exists() and joined and joined.exists() and variant != "baseline":
        # beside the command's tau (over every document both runs rank: the reranked top 100 and BM25's tail, the
        # same order in both), tau over the reranked candidates alone, for reading the command's number
        candidates = {}
        for line in joined.read_text().splitlines():
            qid, doc = line.split("\t")[:2]
            candidates.setdefault(qid, set()).add(doc)
        mine = read_run(run)
        cut = lambda r: {q: {d: s for d, s in docs.items() if d in candidates.get(q, ())} for q, docs in r.items()}
        extra = agreement(cut(mine), cut(reference_run))
        row["top100_only"] = {"kendall_tau": round(extra["kendall_tau"], 6), "identical": round(extra["identical"], 4),
                              "queries": extra["queries"], "what": "tau over the reranked candidates only (not the command's)"}
    folds = {}
    for fold in range(1, 6):
        name = f"radboud-{variant}-g1-f{fold}"
        meta_path = next((Path(j["out"]) / "reranker.json" for j in spec["jobs"] if j["checkpoint"] == name), None)
        if not meta_path or not meta_path.exists():
            continue
        meta = json.loads(meta_path.read_text())
        v = meta.get("validation") or {}
        folds[f"f{fold}"] = {"held_out_loss_step0": round(v["untrained_loss"], 4), "kept_step": v.get("selected_step"),
                             "held_out_loss_kept": round(v["loss"], 4), "held_out_loss_last": round(v["last_loss"], 4),
                             "label_prior_loss": round(v["prior_loss"], 4), "steps": meta.get("steps"),
                             **{k: round(x, 4) for k, x in v.items() if k.startswith(("mrr", "untrained_m", "validation_"))
                                and isinstance(x, float)},
                             "head_from": meta.get("head_from"), "fresh_head": meta.get("fresh_head"),
                             "train_stage_s": meta.get("seconds"), "device": meta.get("device"),
                             "train_wall_s": by_name.get(f"train:{name}", {}).get("wall_s"),
                             "score_wall_s": by_name.get(f"score:{name}", {}).get("wall_s")}
        versions.update(meta.get("versions") or {})
        devices.add(str(meta.get("device")))
    row["folds"] = folds
    if folds:
        mean = lambda k: round(sum(f[k] for f in folds.values()) / len(folds), 4)
        row["mean_over_folds"] = {"held_out_loss_step0": mean("held_out_loss_step0"), "held_out_loss_kept": mean("held_out_loss_kept"),
                                  "label_prior_loss": mean("label_prior_loss"), "folds": len(folds)}
    rows[variant] = row

table = ["| row | nDCG@20 | RadboudNDCG@20 | tau vs baseline | identical | held-out loss step 0 -> kept (mean) |", "|---|---|---|---|---|---|"]
for variant, r in rows.items():
    m = r.get("mean_over_folds", {})
    table.append(f"| {variant} | {r.get('nDCG@20', '-')} | {r.get('RadboudNDCG@20', '-')} | {r.get('kendall_tau_vs_baseline', '(reference)')} "
                 f"| {r.get('identical_share_vs_baseline', '-')} | {m.get('held_out_loss_step0', '-')} -> {m.get('held_out_loss_kept', '-')} |")
groups = {n: {"mode": g["mode"], "wall_s": g.get("wall_s"), "jobs": len(g["jobs"]),
              "failed": [j["name"] for j in g["jobs"] if j.get("rc", 0) != 0]} for n, g in device["groups"].items()}
result = {
    "what": "Issue 58 (Chapter 3): the carried head's effect on multi-level rows. Radboud's baseline, multi-label (head carried "
            "from scifact-soft-80, carry_head: true) and multi-label-fresh (head_from: null) rows, 5 Cranfield folds, 150 steps each; "
            "pooled nDCG@20 / RadboudNDCG@20 over the joined folds, Kendall's tau-b with the baseline reranker's run "
            "(python -m reranker evaluate agreement), held-out loss at step 0 and at the kept step per fold (reranker.json)",
    "note": "A SCRATCH measurement on a lent GPU, not the stored default (no run folder kept; .gpu/run). all-MiniLM-L6-v2 was carried "
            "in fp16 and upcast to fp32 on the device (the upload limit), so scifact-soft-80 and every row start from slightly "
            "different weights than a CPU run's; bf16 autocast on the GPU, other kernels and library versions: numbers differ "
            "slightly from a CPU run of the same configuration. The BM25 runs the device read were cut to each query's top 100 "
            "(every device job reads at most that); the reranking, evaluation and agreement ran on this machine's CPU over the full "
            "depth-1000 BM25 run, as the default's commands do." + (" SMOKE TEST (tiny sizes, fold 1 only): not a result." if tiny else ""),
    "date": time.strftime("%Y-%m-%d"), "commit": spec.get("commit"),
    "commands": {"prepare": "bash benchmarks/gpu_carried_head.sh prepare",
                 "device": "run(command='bash benchmarks/gpu_carried_head.sh', timeout_s=190, carry=['.gpu/inputs.tar.xz', "
                           "'.gpu/model.tar.xz', '.gpu/carried_head', '.whl'])",
                 "finish": "bash benchmarks/gpu_carried_head.sh finish <files_at>", "jobs_from": spec["made_by"],
                 "device_jobs": [j["command"] for j in spec["jobs"]], "local": ran},
    "config_differs_from_packed": spec.get("config_differs_from_packed"),
    "device": {"nvidia_smi_and_env": env_txt.strip(), "checkpoint_device": sorted(devices), "groups": groups},
    "versions": {"device_training": versions, "local_python": platform.python_version()},
    "rows": rows, "table": table,
}
record.write_text(json.dumps(result, indent=1) + "\n")
print("\n".join(table))
print(f"-> {record}", file=sys.stderr)
EOF
fi

# ------------------------------------------------------------------------------------------------ device
BUDGET=${GPU_CH_BUDGET:-180}   # seconds of this script: timeout_s of the call less a margin
START=$(date +%s)
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
export HF_HOME=${GPU_CH_HF_HOME:-/tmp/gpu_ch_hf_home}   # built from the carried weights; nothing is fetched
export BIRCH_DATA=/tmp/gpu_ch_no_data IR_DATASETS_HOME=/tmp/gpu_ch_no_ir_datasets  # no device job reads them
BIN=/tmp/gpu_ch_bin; mkdir -p $BIN
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v "$PY")" > $BIN/python; chmod +x $BIN/python
export PATH=$BIN:$PATH   # Snakemake's commands call `python`
ONLY=()
LOGS=.gpu/run/logs
echo "== 0. set-up =="
if [ -n "$GPU_CH_TINY" ]; then
  "$PY" benchmarks/gpu_default_part.py tiny || exit 2   # .gpu/tiny/config.yaml: the tiny sizes
  mkdir -p $DIR/tiny
  "$PY" - <<'EOF' || exit 2
import json
from pathlib import Path

spec = json.loads(Path(".gpu/carried_head/jobs.json").read_text())
swaps = [(".gpu/run/config.yaml", ".gpu/tiny/config.yaml"), (".gpu/run/work/checkpoints/", ".gpu/tiny/checkpoints/"),
         (".gpu/run/work/scores/", ".gpu/tiny/scores/"), (".gpu/run/work/cache/", ".gpu/tiny/cache/"),
         (".gpu/run/logs/", ".gpu/tiny/logs/"), (".gpu/run/work/runs/cranfield/radboud.", ".gpu/tiny/runs/radboud."),
         (".gpu/run/work/eval/", ".gpu/tiny/eval/")]  # gpu_default_part.py tiny's, and the local outputs
for old, new in swaps:
    for job in spec["jobs"]:
        job["command"], job["out"] = job["command"].replace(old, new), job["out"].replace(old, new)
    spec["local"] = [c.replace(old, new) for c in spec["local"]]
Path(".gpu/carried_head/tiny/jobs.json").write_text(json.dumps(spec, indent=1))
EOF
  ONLY=(--only g1-f1)
  LOGS=.gpu/tiny/logs
  mkdir -p /tmp/gpu_ch_block
  cat > /tmp/gpu_ch_block/sitecustomize.py <<'EOF'
import sys
class _Absent:  # the GPU image lacks these: a job that imports one fails here as it would there
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"ir_datasets", "ir_measures", "pysbd", "pyserini", "snakemake"}:
            raise ImportError(f"{name} is not on the GPU machine")
sys.meta_path.insert(0, _Absent())
EOF
  export PYTHONPATH=/tmp/gpu_ch_block:$PYTHONPATH
else
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=$PYTHONPATH:/tmp/site
  fi
  "$PY" -c "import tarfile; tarfile.open('.gpu/inputs.tar.xz').extractall('.', filter='data')" \
    || { echo "inputs not unpacked"; exit 2; }
  cp $DIR/config.yaml .gpu/run/config.yaml   # today's resolved configuration (the dry run's), over the packed one
fi
mkdir -p $LOGS/train $LOGS/score
rm -rf "$HF_HOME"
timeout 120 "$PY" benchmarks/gpu_default_part.py hf-home --model .gpu/model.tar.xz --hf-home "$HF_HOME" || exit 2
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader > "$OUT/env.txt" 2>&1
echo "python $("$PY" -c 'import platform; print(platform.python_version())'); $(nproc) CPUs" >> "$OUT/env.txt"
cat "$OUT/env.txt"
echo "set-up: $(( $(date +%s) - START )) s"

pack() {  # what comes back: the checkpoints' small files, the fold scores and the logs (no weights)
  local root=.gpu/run/work; [ -n "$GPU_CH_TINY" ] && root=.gpu/tiny
  find $root/checkpoints -maxdepth 2 -type f \( -name reranker.json -o -name '*.jsonl' \) 2>/dev/null > /tmp/gpu_ch_list
  find $root/scores/cranfield -type f 2>/dev/null >> /tmp/gpu_ch_list
  find $LOGS -type f 2>/dev/null >> /tmp/gpu_ch_list
  tar -czf "$OUT/results.tar.gz" -T /tmp/gpu_ch_list
}

echo "== 1. scifact-soft-80 (the start) =="
if [ -n "$GPU_CH_TINY" ] && [ -f .gpu/tiny/checkpoints/scifact-soft-80/reranker.json ]; then
  echo "tiny: the smoke test's earlier scifact-soft-80 kept"
else
  timeout -k 5 $(( $(left) > 90 ? $(left) - 60 : 30 )) "$PY" benchmarks/gpu_default_part.py jobs --jobs $JOBS --group base --timeout 130 \
    --out "$OUT/jobs.json" || { echo "scifact-soft-80 failed: nothing more can run"; pack; exit 1; }
fi
echo "($(left) s left)"

echo "== 2. the 15 fold trainings at once =="
timeout -k 5 $(( $(left) > 40 ? $(left) - 22 : 18 )) "$PY" benchmarks/gpu_default_part.py jobs --jobs $JOBS --group train --parallel \
  "${ONLY[@]}" --timeout $(( $(left) > 40 ? $(left) - 27 : 13 )) --out "$OUT/jobs.json"
echo "rc train: $? ($(left) s left)"
pack

echo "== 3. the 15 score_radboud jobs at once =="
timeout -k 3 $(( $(left) > 15 ? $(left) - 5 : 10 )) "$PY" benchmarks/gpu_default_part.py jobs --jobs $JOBS --group score --parallel \
  "${ONLY[@]}" --timeout $(( $(left) > 15 ? $(left) - 8 : 7 )) --out "$OUT/jobs.json"
echo "rc score: $? ($(left) s left)"
pack
echo "== done in $(( $(date +%s) - START )) s =="
"$PY" - "$OUT/jobs.json" <<'EOF'
import json, sys
try:
    groups = json.load(open(sys.argv[1]))["groups"]
except Exception as err:
    sys.exit(f"no jobs.json: {err}")
for name, group in groups.items():
    print(f"-- {name} ({group['mode']}, {group.get('wall_s')} s)")
    for j in group["jobs"]:
        v = j.get("stage_meta", {}).get("validation", {})
        print(f"{j['name']:<48} rc {j.get('rc', '-'):>3} {j.get('wall_s', '-'):>7} s  loss {v.get('untrained_loss', '')} -> {v.get('loss', '')}")
EOF
ls -la "$OUT"
