#!/bin/bash
# The GPU runs behind docs/evidence/own-kernels.md, in one device call (run from the repo root; OUT set there).
#   1. the gpu tests, from the checkout;
#   2. gpubench installed from its wheel (dist/, non-editable) and run from a project outside the repository:
#      the example lab kernels and a copy of the shipped tiled kernel, declared in that project's gpubench.toml,
#      beside cuBLAS and cuDNN (one suite, one results file);
#   3. the same project with a planted out-of-bounds kernel and a planted infinite loop in the sweep.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl dist/*.whl || exit 1
REPO=$PWD
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-$REPO/.kcache}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv | tee "$OUT/smi.txt"
PYTHONPATH=/tmp/site:$REPO python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.txt" | tail -4

export PYTHONPATH=/tmp/site  # from here on, the installed wheel only
P=/tmp/my-lab && rm -rf $P && cp -r examples/lab $P
cp cuda_src/gemm/03_tiled.cu cuda_src/include/register_tile.cuh cuda_src/include/gemm_common.cuh $P/
cat >> $P/gpubench.toml <<'TOML'

[[variant]]
name = "my-tiled"
op = "gemm"
summary = "gpubench's register-tiled GEMM, copied into this project"
source = "gemm/03_tiled.cu"
kernel = "gemm_tiled"
args = ["A", "B", "C", "M", "N", "K"]
configs = [{ BM = 128, BN = 128, BK = 8, TM = 8, TN = 8 }, { BM = 64, BN = 64, BK = 8, TM = 4, TN = 4 }]
label = "{BM}x{BN}x{BK}/{TM}x{TN}"
grid = ["cdiv(N, BN)", "cdiv(M, BM)"]
block = ["(BM / TM) * (BN / TN)"]
TOML
cat > $P/own.toml <<'TOML'
name = "own-kernels"
description = "the example lab kernels and a copied tiled kernel beside cuBLAS and cuDNN"
[defaults]
reps = 30
[[sweep]]
name = "gemm"
op = "gemm"
variants = ["lab-global", "lab-shared", "my-tiled", "tiled", "cublas"]
sizes = [1024, 2048, 4096]
mnk = [[1000, 1500, 777]]
block_sizes = [8, 16, 32]
[[sweep]]
name = "conv"
op = "conv"
variants = ["lab-conv", "sliding", "cudnn-heuristic", "cudnn"]
sizes = [1000, 4096]
strides = [1, 2, 3]
block_sizes = [8, 16, 32]
TOML
cd $P
python3 -c "import gpubench, sys; print('gpubench', gpubench.__version__, 'from', gpubench.__file__)" | tee "$OUT/own-kernels.log"
{ python3 -m gpubench list | grep -E "lab-|my-tiled|project"; } >> "$OUT/own-kernels.log" 2>&1
python3 -m gpubench run own.toml -o "$OUT/own-kernels.json" >> "$OUT/own-kernels.log" 2>&1; echo "exit code: $?" | tee -a "$OUT/own-kernels.log"
grep -A40 "best configuration" "$OUT/own-kernels.log" | head -60

cat > $P/faults.cu <<'CU'
// Planted faults: a write far outside any allocation (a sticky illegal-address error) and a loop that never ends.
extern "C" __global__ void out_of_bounds(const float* A, const float* B, float* C, int M, int N, int K)
{
    C[(size_t)1 << 40] = 1.0f;
}
extern "C" __global__ void forever(const float* A, const float* B, float* C, int M, int N, int K)
{
    while (clock64() >= 0) { }  // clock64 is volatile: the loop cannot be optimised away
}
CU
for k in out_of_bounds forever; do cat >> $P/gpubench.toml <<TOML

[[variant]]
name = "$k"
op = "gemm"
source = "faults.cu"
kernel = "$k"
args = ["A", "B", "C", "M", "N", "K"]
grid = ["cdiv(N, 16)", "cdiv(M, 16)"]
block = ["16", "16"]
TOML
done
python3 -m gpubench gemm --variants cublas,lab-shared,out_of_bounds,my-tiled,forever --block-sizes 16 --sizes 1024,2048 \
  --timeout 20 -o "$OUT/own-kernels-faults.json" > "$OUT/own-kernels-faults.log" 2>&1
echo "exit code: $?" | tee -a "$OUT/own-kernels-faults.log"
grep -E "FAIL|ERROR|TIMEOUT|worker|saved|exit code" "$OUT/own-kernels-faults.log"
