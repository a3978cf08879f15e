#!/usr/bin/env bash
# One GPU check, run once on a lent GPU machine from the repository root (no internet, no HF models):
#   1. the machine: nvidia-smi, torch / CUDA / transformers versions, our modules import;
#   2. scoring: benchmarks/gpu_throughput.py on the prepared Cranfield pairs (random weights, real shapes);
#   3. training: benchmarks/gpu_train_throughput.py, reranker.stages.train's own step on SciFact train pairs
#      (minilm-l6 and bert-base at 128 and 192 tokens, bert-small at 256), and a determinism check;
#   then a summary table. Full JSON and logs go to $OUT (6 files). Each step is guarded by a timeout, and a
#   failing step does not stop the others.
#
# Inputs (made here, on a machine with the offline caches, into the git-ignored folder .gpu/, carried along):
#   HF_HOME=/work/shared/hf_home HF_HUB_OFFLINE=1 IR_DATASETS_HOME=$PWD/.cache/ir_datasets \
#     .venv/bin/python benchmarks/gpu_throughput.py --write-pairs .gpu/pairs        # pairs.jsonl + tokenizer
#   ... .venv/bin/python benchmarks/gpu_train_throughput.py --write-pairs .gpu/pairs  # train_pairs.jsonl
#   ... .venv/bin/python benchmarks/gpu_throughput.py --write-trained runs/default/work/checkpoints/NAME \
#         .gpu/trained/NAME   # optional: a trained checkpoint in bf16 (44 MB for MiniLM-L6), scored beside the shapes
#
#   bash benchmarks/gpu_check.sh            # on the GPU machine: OUT=... (default /tmp/gpu_check)
#   GPU_CHECK_TINY=1 PYTHON=.venv/bin/python bash benchmarks/gpu_check.sh   # a seconds-long smoke test on a CPU
set +e
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/gpu_check}
PY=${PYTHON:-python3}
PAIRS=${PAIRS_DIR:-.gpu/pairs}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export HF_HOME=${GPU_CHECK_HF_HOME:-/tmp/gpu_check_hf_home}  # empty: nothing is fetched, nothing cached
export PYTHONPATH=.${PYTHONPATH:+:$PYTHONPATH}
if compgen -G ".whl/*.whl" >/dev/null; then  # wheels of packages the image lacks (none needed so far)
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi

if [ -n "$GPU_CHECK_TINY" ]; then  # smoke test: every code path, tiny sizes
  SCORE_ARGS=(--shapes minilm-l6 --pairs 32 --padded-pairs 4 --check-pairs 4)
  TRAIN_ARGS=(--runs minilm-l6:48 --pairs 24 --warmup 1 --steps 1 --variants train_stage --determinism-steps 1)
  T_SCORE=120 T_TRAIN=120
else
  SCORE_ARGS=()  # all three shapes, all 16,437 pairs, 512 padded pairs, 128 checked
  TRAIN_ARGS=(--runs minilm-l6:128 minilm-l6:192 bert-base:128 bert-base:192 bert-small:256
              --warmup 8 --steps 40 --determinism-steps 20)
  T_SCORE=260 T_TRAIN=140  # the expected: ~100 s (+~20 s a trained checkpoint) and ~80 s on an H100; a step killed keeps its finished shapes and runs
fi
declare -A RC
started=$(date +%s)

echo "== 1. machine =="
{
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm,power.limit --format=csv 2>&1
  nvidia-smi 2>&1 | head -20
  "$PY" - <<'EOF' 2>&1
import importlib, platform, sys, torch
print("python", platform.python_version(), sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn", torch.backends.cudnn.version(),
      "available", torch.cuda.is_available())
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print("device", p.name, f"{p.total_memory / 2**30:.1f} GiB", "sm", f"{p.major}.{p.minor}", p.multi_processor_count, "SMs",
          "bf16", torch.cuda.is_bf16_supported())
    print("sdp enabled: flash", torch.backends.cuda.flash_sdp_enabled(), "mem_efficient",
          torch.backends.cuda.mem_efficient_sdp_enabled(), "cudnn", torch.backends.cuda.cudnn_sdp_enabled(),
          "| tf32 matmul", torch.backends.cuda.matmul.allow_tf32)
for name in ("transformers", "tokenizers", "huggingface_hub", "safetensors", "numpy", "scipy", "tqdm", "yaml"):
    try:
        print(name, importlib.import_module(name).__version__)
    except Exception as err:
        print(name, "MISSING", type(err).__name__, err)
for name in ("pysbd", "ir_datasets", "ir_measures", "jsonschema", "pynvml"):  # not needed on this path
    try:
        importlib.import_module(name)
        print(name, "present")
    except Exception:
        print(name, "absent (not needed here)")
import reranker.neural.forward, reranker.stages.score, reranker.stages.train  # noqa: E401
print("reranker imports: ok")
EOF
} > "$OUT/env.txt" 2>&1
RC[machine]=$?
cat "$OUT/env.txt"

echo "== 2. scoring: benchmarks/gpu_throughput.py =="
TRAINED=(.gpu/trained/*/)
[ -d "${TRAINED[0]}" ] && SCORE_ARGS+=(--trained "${TRAINED[@]%/}")
timeout -k 10 "$T_SCORE" "$PY" benchmarks/gpu_throughput.py --pairs-file "$PAIRS/pairs.jsonl" --tokenizer "$PAIRS" \
  "${SCORE_ARGS[@]}" --out "$OUT/gpu_throughput.json" > "$OUT/gpu_throughput.log" 2>&1
RC[scoring]=$?
grep -v "Writing model shards\|Loading weights" "$OUT/gpu_throughput.log" | tail -40

echo "== 3. training: benchmarks/gpu_train_throughput.py =="
timeout -k 10 "$T_TRAIN" "$PY" benchmarks/gpu_train_throughput.py --pairs-file "$PAIRS/train_pairs.jsonl" \
  --tokenizer "$PAIRS" "${TRAIN_ARGS[@]}" --out "$OUT/gpu_train_throughput.json" > "$OUT/gpu_train_throughput.log" 2>&1
RC[training]=$?
grep -v "Writing model shards\|Loading weights" "$OUT/gpu_train_throughput.log" | tail -40

echo "== summary =="
"$PY" - "$OUT" "${RC[machine]}" "${RC[scoring]}" "${RC[training]}" "$(( $(date +%s) - started ))" <<'EOF' 2>&1 | tee "$OUT/summary.txt"
import json, sys
from pathlib import Path

out, rc_machine, rc_score, rc_train, seconds = Path(sys.argv[1]), *sys.argv[2:]
print(f"exit codes: machine {rc_machine}, scoring {rc_score}, training {rc_train} (124: timed out); {seconds} s in all")


def load(name):
    try:
        return json.loads((out / name).read_text())
    except Exception as err:
        print(f"{name}: not read ({type(err).__name__}: {err})")
        return None


score = load("gpu_throughput.json")
if score:
    print(f"\nscoring on {score['device']} (torch {score['torch']}, transformers {score.get('transformers')}), "
          f"{score['pairs']} pairs; {score['matmul_peak_dtype']} matmul peak {score['matmul_peak_tflops']} TFLOP/s")
    print(f"{'shape':<24}{'fast/s':>9}{'exact/s':>9}{'pad512/s':>9}{'TFLOP/s':>9}{'%peak':>7}{'x pad':>7}{'tau':>8}"
          f"{'|diff|':>10}{'R04 h':>7}")
    for shape, e in score["shapes"].items():
        p, check = e["pairs_per_second"], e.get("check_exact_vs_hf_one_at_a_time_fp32") or {}
        tflops = e["achieved_tflops"].get("fast", e["achieved_tflops"].get("exact"))
        print(f"{shape:<24}{p.get('fast', '-'):>9}{p['exact']:>9}{p['padded512_fp32']:>9}{tflops:>9}"
              f"{e['fraction_of_matmul_peak']:>7.0%}{e['speedup_vs_padded512_fp32']:>7}"
              f"{e['kendall_tau_fast_vs_exact'] if e['kendall_tau_fast_vs_exact'] is not None else '-':>8}"
              f"{format(check['max_abs_diff'], '.2g') if check else '-':>10}{e['robust04_hours']['1 device']:>7}")
    print("goals:", score.get("goals"))
train = load("gpu_train_throughput.json")
if train:
    print(f"\ntraining on {train['device']} ({train['versions']}), batch 16, {train['pairs']['count']} SciFact pairs, "
          f"{train['timed_steps']} timed steps after {train['warmup_steps']}")
    print(f"{'run':<16}{'steps/s':>8}{'pairs/s':>9}{'ms/step':>8}{'min/1k':>7}{'nondet':>8}{'cuDNN on':>9}{'cold s':>7}"
          f"{'tok/pair':>9}{'pad':>6}{'MiB':>8}")
    for name, e in train["runs"].items():
        if "error" in e:
            print(f"{name:<16} ERROR {e['error']}")
            continue
        v = e["variants"]
        t = v.get("train_stage", next(iter(v.values()), {}))
        other = lambda k: v[k]["steps_per_second"] if k in v else "-"
        print(f"{name:<16}{t.get('steps_per_second', '-'):>8}{t.get('pairs_per_second', '-'):>9}"
              f"{t.get('step_ms', {}).get('median', '-'):>8}{t.get('minutes_per_1000_steps', '-'):>7}"
              f"{other('nondeterministic'):>8}{other('cudnn_on'):>9}{t.get('cold', {}).get('seconds', '-'):>7}"
              f"{e['mean_tokens_per_pair']:>9}{t.get('padding_fraction', 0):>6.1%}{e.get('peak_memory_mib', '-'):>8}")
    warned = sorted({w for e in train["runs"].values() for w in e.get("variants", {}).get("train_stage", {}).get("warnings", [])})
    for w in warned:
        print("warning (train_stage):", w[:200])
    print("determinism:", train.get("determinism"))
EOF
echo "files in $OUT:"; ls -la "$OUT"
