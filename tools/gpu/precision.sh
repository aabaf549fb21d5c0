#!/bin/bash
# The precision evidence in one device call, from the repository root ($OUT set by the caller):
#   1. the gpu tests (every library path in every dtype and layout, the example half-precision kernels);
#   2. the precision suite (configs/precision.toml), saved as $OUT/precision.json;
#   3. the example project's fp16/bf16 kernels (examples/lab/matmul_half.cu) beside cuBLAS, $OUT/examples-half.json.
# WHEELS names the folder of the carried wheels (PyCUDA, the cuDNN frontend, nvmath-python).
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "${WHEELS:-.devwheels}"/*.whl || exit 1
REPO=$PWD
export PYTHONPATH=/tmp/site:$REPO PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/smi.txt"
timeout 190 python3 -m pytest -q -m gpu -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.txt" | tail -3
timeout 340 python3 -m gpubench run precision -o "$OUT/precision.json" > "$OUT/precision.log" 2>&1
echo "precision exit code: $?" | tee -a "$OUT/precision.log"
cd examples/lab
timeout 45 python3 -m gpubench gemm --dtype fp16,bf16 --variants lab-shared-half,lab-wmma,cublas --sizes 1024,4096 \
    --mnk 1000,1500,777 --block-sizes 16,32 -o "$OUT/examples-half.json" > "$OUT/examples-half.log" 2>&1
echo "examples exit code: $?" | tee -a "$OUT/examples-half.log"
grep -A14 "best configuration" "$OUT/examples-half.log"
cd "$REPO" && python3 tools/precision_table.py "$OUT/precision.json"
