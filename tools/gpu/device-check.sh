#!/bin/bash
# One call on the GPU machine: install the staged wheels, run the gpu tests, then short sweeps.
# Usage there:  bash tools/gpu/device-check.sh  (OUT, GPUBENCH_COMMIT set by the caller)
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/smi.txt"
python3 -m gpubench env > "$OUT/env.json" 2>&1; head -c 600 "$OUT/env.json"; echo
python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tee "$OUT/gpu-tests.txt" | tail -15
for step in "$@"; do echo "== $step"; eval "$step"; done
