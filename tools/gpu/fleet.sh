#!/bin/bash
# The runs behind the many-GPU evidence, on a machine with two GPUs (run from the repo root; OUT and
# GPUBENCH_COMMIT set by the caller; wheels in .devwheels and .whl, kernels precompiled in .kcache):
#   the lab on one GPU, the lab sharded over both, a replicate run over both, the lab on one GPU again.
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl .whl/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-$PWD/.kcache}
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
g() { python3 -m gpubench "$@"; }
nvidia-smi -L
g run lab -o "$OUT/lab-1gpu.json" 2>&1 | tail -1
g run lab --gpus all -o "$OUT/lab-2gpu.json" 2>&1 | tail -1
g run quick --gpus all --replicate -o "$OUT/quick-replicate.json" > "$OUT/replicate.log" 2>&1; echo "replicate exit code: $?"
grep -A8 "GPUs against" "$OUT/replicate.log"; tail -2 "$OUT/replicate.log"
g run lab -o "$OUT/lab-1gpu-b.json" 2>&1 | tail -1
g compare "$OUT/lab-1gpu.json" "$OUT/lab-1gpu-b.json" --format markdown > "$OUT/compare-h200.md" 2>&1; echo "compare exit code: $?"
head -3 "$OUT/compare-h200.md"
