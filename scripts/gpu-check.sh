#!/usr/bin/env bash
# The GPU check (issue 43, docs/sass.md): on a machine with one NVIDIA GPU (H100/H200 class),
# build two models for cuda with --profile --numerics --sass, print what was measured, tune the
# tests' MLP for cuda (8 trials, issue 42) and print its ledger, and run the tests that need a
# GPU. Well under 10 minutes. Without a GPU it says so and exits 0.
#
#   bash scripts/gpu-check.sh [OUT_DIR]
#
# Python: $PYTHON (default .venv/bin/python, else python3) with tvm-explorer and its [sass] and
# [tune] extras installed. On a machine with no network, install from carried wheels first:
#   python3 -m pip install --no-index --find-links WHEELS -e '.[sass,tune]'
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:-${OUT:-gpu-check-out}}
mkdir -p "$OUT"
PY=${PYTHON:-}
[ -n "$PY" ] || { [ -x .venv/bin/python ] && PY=.venv/bin/python || PY=python3; }
# nvcc from the [sass] wheels, for TVM's own kernel build (tvm.support.nvcc looks on PATH)
NVBIN=$("$PY" -c 'import sys,pathlib;print(next((str(p) for e in sys.path for p in [pathlib.Path(e or ".")/"nvidia"/"cu13"/"bin"] if (p/"nvcc").exists()), ""))')
[ -n "$NVBIN" ] && export PATH="$NVBIN:$PATH"
if ! command -v nvidia-smi >/dev/null || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi finds none): nothing to measure"
  exit 0
fi
nvidia-smi -L | tee "$OUT/gpu.txt"
"$PY" - <<'PY' | tee "$OUT/tvm-cuda.txt"
import tvm
print("tvm", tvm.__version__, "cuda runtime:", tvm.runtime.enabled("cuda"), "device:", tvm.cuda(0).exist)
PY
status=0
for model in tests/models/small_cnn_fp32.tflite tests/models/mobilenet_v1_fp32.tflite; do
  name=$(basename "$model" .tflite)
  start=$(date +%s)
  "$PY" -m tvm_explorer compile "$model" -o "$OUT/$name.cuda.bundle" --target cuda --profile --numerics \
    --sass sm_90 --progress none >"$OUT/$name.compile.log" 2>&1 || status=1
  echo "== $name: compile with --profile --numerics --sass took $(( $(date +%s) - start )) s (exit $status)"
  tail -5 "$OUT/$name.compile.log"
  "$PY" -m tvm_explorer costs "$OUT/$name.cuda.bundle" | head -20 | tee "$OUT/$name.costs.txt"
  "$PY" -m tvm_explorer numerics "$OUT/$name.cuda.bundle" | head -20 | tee "$OUT/$name.numerics.txt"
done
# issue 42: a short cuda tuning run (8 trials of the tests' MLP on this GPU) and its ledger
"$PY" -c 'import sys; sys.path.insert(0, "."); from tests.tuning.mlp import write_mlp; write_mlp(sys.argv[1])' "$OUT/mlp.onnx"
start=$(date +%s)
"$PY" -m tvm_explorer compile "$OUT/mlp.onnx" -o "$OUT/mlp.cuda-tuned.bundle" --target cuda --tune 8 \
  --tuning-db "$OUT/mlp-cuda-db" --progress none >"$OUT/mlp.tune.log" 2>&1 || status=1
echo "== mlp: compile --target cuda --tune 8 took $(( $(date +%s) - start )) s (exit $status)"
grep -v '^[0-9-]* [0-9:]* \[' "$OUT/mlp.tune.log" | tail -8
"$PY" -m tvm_explorer tuning "$OUT/mlp.cuda-tuned.bundle" | tee "$OUT/mlp.tuning.txt" || status=1
TVM_EXPLORER_GPU=1 "$PY" -m pytest -q -m "not e2e" tests/sass tests/costs tests/tuning/test_tuning_cuda.py \
  -k "gpu or cuda or sass" 2>&1 | tail -15 | tee "$OUT/tests.txt"
exit $status
