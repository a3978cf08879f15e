#!/usr/bin/env bash
# A part of the default (`make run`) on one GPU, through the suite's own stage commands, each job timed,
# in one call on a lent GPU machine with no hub (see benchmarks/gpu_default_part.py for what and why):
#   core:     scifact-soft-80 (825 steps); Radboud's baseline row: 5 fold trainings (150 steps), 5 score_radboud
#             jobs, the join; NTNU's ntnu-bert: its training and its score_ntnu job. One job at a time.
#   parallel: the 5 fold trainings again, all at once on the one GPU (as `snakemake --cores all` would start them)
#   extra:    scifact-bi (825 steps, the bi-encoder)
#   scoring:  bert-large bf16 scoring, today's path beside a host-side padding flag and larger batches
# Each part is guarded by `timeout`, and an optional part starts only while the time budget has room.
# Everything lands in $OUT: jobs.json (per job: command, wall, CPU, peak RSS, the stage's own meta), env.txt,
# scoring.json, log.txt, logs.tar.gz (the jobs' own logs).
#
# Inputs, made here on the CPU (ignored by git under .gpu/ and .whl/, carried along):
#   1. the first stage into a scratch run folder (Java, pyserini, ir_datasets: not on the GPU machine):
#        R=.gpu/run/work; snakemake --cores 1 --config run_dir=.gpu/run -- $R/segments/cranfield/bm25.k100.documents.jsonl \
#          $R/segments/beir-scifact-test/bm25.k40.ntnu-passages.jsonl $R/folds/cranfield.json \
#          $R/runs/{beir-scifact-train,cranfield-titles,cisi-titles,cacm-titles}/bm25.run
#   2. python benchmarks/gpu_throughput.py --write-pairs /tmp/pairs     (Cranfield pairs, for the scoring side test)
#   3. python benchmarks/gpu_default_part.py pack --pairs /tmp/pairs/pairs.jsonl
#        -> .gpu/inputs.tar.xz, .gpu/model.tar.xz (all-MiniLM-L6-v2 in fp16), .gpu/jobs.json, .gpu/lengths.json
#   4. wheels the GPU image lacks (jsonschema and its needs) in .whl/
#   run(command="bash benchmarks/gpu_default_part.sh", carry=[".gpu/inputs.tar.xz", ".gpu/model.tar.xz",
#       ".gpu/jobs.json", ".gpu/lengths.json", ".whl"])
#   then: python benchmarks/gpu_default_part.py summary --device-dir <files_at>
# Measured on an H200 (2026-11-28): set-up 15 s, core 318 s, parallel 24 s, scifact-bi 70 s, scoring side test ~40 s:
# about 470 s in all, so the default budget (520) runs every part in one call. That day's first call ran with 400 and
# skipped parallel and extra; they ran in a later call on the same warm machine, where the files carried and unpacked
# by the first call were partly gone (.gpu/jobs.json, .gpu/run/config.yaml): carry and unpack them again in such a call.
#
#   GPU_PART_TINY=1 PYTHON=.venv/bin/python bash benchmarks/gpu_default_part.sh   # the smoke test on a CPU:
#       the same commands on tiny sizes (python benchmarks/gpu_default_part.py tiny), hub-less, with the packages the
#       GPU image lacks made unimportable
set +e
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/gpu_default_part}
PY=${PYTHON:-python3}
BUDGET=${GPU_PART_BUDGET:-520}  # seconds of this script; an optional part starts only if it can end inside it
START=$(date +%s)
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export HF_HOME=${GPU_PART_HF_HOME:-/tmp/gpu_part_hf_home}   # built from the carried weights; nothing is fetched
export BIRCH_DATA=/tmp/gpu_part_no_data IR_DATASETS_HOME=/tmp/gpu_part_no_ir_datasets  # no GPU job reads them
export PYTHONPATH=$PWD${PYTHONPATH:+:$PYTHONPATH}
BIN=/tmp/gpu_part_bin; mkdir -p $BIN
printf '#!/bin/sh\nexec %s "$@"\n' "$(command -v "$PY")" > $BIN/python; chmod +x $BIN/python
export PATH=$BIN:$PATH   # Snakemake's commands call `python`
JOBS=.gpu/jobs.json

echo "== 0. set-up =="
if [ -n "$GPU_PART_TINY" ]; then
  "$PY" benchmarks/gpu_default_part.py tiny || exit 2
  JOBS=.gpu/tiny/jobs.json
  mkdir -p /tmp/gpu_part_block
  cat > /tmp/gpu_part_block/sitecustomize.py <<'EOF'
import sys
class _Absent:  # the GPU image lacks these: a job that imports one fails here as it would there
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {"ir_datasets", "ir_measures", "pysbd", "pyserini", "snakemake"}:
            raise ImportError(f"{name} is not on the GPU machine")
sys.meta_path.insert(0, _Absent())
EOF
  export PYTHONPATH=/tmp/gpu_part_block:$PYTHONPATH
  SCORING_ARGS=(--pairs 64 --shape 2 128 2 512 --rounds 1)
  T_JOB=600
else
  if compgen -G ".whl/*.whl" >/dev/null; then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
      && export PYTHONPATH=$PYTHONPATH:/tmp/site
  fi
  "$PY" -c "import tarfile; tarfile.open('.gpu/inputs.tar.xz').extractall('.', filter='data')" \
    || { echo "inputs not unpacked"; exit 2; }
  SCORING_ARGS=()
  T_JOB=240
fi
rm -rf "$HF_HOME"
timeout 120 "$PY" benchmarks/gpu_default_part.py hf-home --model .gpu/model.tar.xz --hf-home "$HF_HOME" || exit 2
echo "set-up: $(( $(date +%s) - START )) s"

echo "== 1. machine =="
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>&1
  nproc; grep -m1 "model name" /proc/cpuinfo
  "$PY" - <<'EOF' 2>&1
import importlib, platform, sys, torch
print("python", platform.python_version(), sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, f"{p.total_memory / 2**30:.1f} GiB", p.multi_processor_count, "SMs", "bf16", torch.cuda.is_bf16_supported())
for name in ("transformers", "tokenizers", "safetensors", "numpy", "jsonschema", "yaml", "matplotlib", "scipy"):
    try:
        m = importlib.import_module(name); print(name, getattr(m, "__version__", "present"))
    except Exception as err:
        print(name, "MISSING", type(err).__name__, err)
import reranker.stages.train, reranker.stages.score  # noqa: E401
print("reranker imports: ok")
EOF
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"

echo "== 2. core: scifact-soft-80, Radboud's baseline row, NTNU's ntnu-bert (one job at a time) =="
timeout -k 10 $(( $(left) > 60 ? $(left) : 60 )) "$PY" benchmarks/gpu_default_part.py jobs --jobs $JOBS --group core \
  --timeout $T_JOB --out "$OUT/jobs.json"
echo "rc core: $? ($(left) s of the budget left)"

echo "== 3. parallel: the 5 fold trainings at once =="
if [ "$(left)" -gt 100 ]; then
  timeout -k 10 $(( $(left) - 10 )) "$PY" benchmarks/gpu_default_part.py jobs --jobs $JOBS --group parallel --parallel \
    --timeout $T_JOB --out "$OUT/jobs.json"
  echo "rc parallel: $?"
else echo "skipped: $(left) s left"; fi

echo "== 4. extra: scifact-bi =="
if [ "$(left)" -gt 110 ]; then
  timeout -k 10 $(( $(left) - 10 )) "$PY" benchmarks/gpu_default_part.py jobs --jobs $JOBS --group extra \
    --timeout $T_JOB --out "$OUT/jobs.json"
  echo "rc extra: $?"
else echo "skipped: $(left) s left"; fi

echo "== 5. scoring side test (bert-large bf16) =="
if [ "$(left)" -gt 45 ]; then
  timeout -k 5 $(( $(left) - 5 )) "$PY" benchmarks/gpu_default_part.py scoring --tokenizer \
    "$HF_HOME/hub/models--sentence-transformers--all-MiniLM-L6-v2/snapshots/offline-mirror" "${SCORING_ARGS[@]}" \
    --out "$OUT/scoring.json"
  echo "rc scoring: $?"
else echo "skipped: $(left) s left"; fi

LOGS=.gpu/run/logs; [ -n "$GPU_PART_TINY" ] && LOGS=.gpu/tiny/logs
tar -czf "$OUT/logs.tar.gz" $LOGS 2>/dev/null
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
        m = j.get("stage_meta", {})
        print(f"{j['name']:<52} rc {j.get('rc', '-'):>3} {j.get('wall_s', j.get('skipped', '-')):>8} s wall "
              f"{j.get('cpu_s', '-'):>8} s cpu  stage {m.get('seconds', '-')} s  {m.get('throughput', {}).get('pairs_per_second', m.get('pairs_per_second', ''))}")
EOF
ls -la "$OUT"
