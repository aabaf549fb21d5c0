#!/bin/bash
# The runs behind results/ and the README, in two device calls (each well inside ten minutes).
#   bash tools/gpu/evidence.sh kernels   # gpu tests, GEMM progression, TF32, fast conv kernels, ResNet layers, ncu
#   bash tools/gpu/evidence.sh lab       # gpu tests, fast conv kernels, two CI runs, a planted slowdown, the
#                                    # comparisons, the lab suite
#   bash tools/gpu/evidence.sh final     # gpu tests, fast conv kernels again, a CI run against a blunter slowdown
# OUT (where files go) and GPUBENCH_COMMIT (this checkout's commit, since the copy has no .git) come from the caller.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
g() { python3 -m gpubench "$@"; }
summary() { grep -A60 "best configuration" | grep -E "│" ; }
case "$1" in
kernels)
  python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tee "$OUT/gpu-tests.txt" | tail -3
  g gemm --variants tiled,vec,warptile,dbuf,async,swizzle,tuned,cublas --sizes 2048,4096,8192 \
    --mnk 8192,2048,4096 -o "$OUT/gemm-progression.json" 2>&1 | summary
  g gemm --variants tf32,cublas --tf32 --sizes 2048,4096,8192 -o "$OUT/gemm-tf32.json" 2>&1 | summary
  g conv --variants sliding,sliding-tiled,sliding-rows,cudnn-heuristic,cudnn --sizes 512,1024,2048,4096,8192 \
    --stride 1,2,3 -o "$OUT/conv-fast.json" 2>&1 | grep -A20 "ms per variant"
  g run resnet -o "$OUT/resnet.json" 2>&1 | grep -A12 "ms per variant"
  ncu=$(ls /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
  for spec in "conv implicit-async conv_implicit_async --sizes 28 --batch 32 --in-channels 128 --out-channels 128 --padding 1 --stride 1" \
              "gemm tuned gemm_warptile --sizes 4096"; do
    set -- $spec; op=$1 v=$2 k=$3; shift 3
    timeout 150 "${ncu:-ncu}" --clock-control none --kernel-name "$k" --launch-count 1 --section SpeedOfLight \
      --section Occupancy --section WarpStateStats --section LaunchStats --section ComputeWorkloadAnalysis \
      python3 -m gpubench "$op" --variants "$v" "$@" --reps 1 --warmup 0 --budget 0 -o /tmp/ncu.json \
      > "$OUT/ncu-$v.txt" 2>&1
    grep -E "Duration|Compute \(SM\) Throughput|DRAM Throughput|Registers Per|Achieved Occ|Issue Slots Busy|Executed Ipc A" "$OUT/ncu-$v.txt"
  done ;;
lab)
  python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tee "$OUT/gpu-tests.txt" | tail -3
  g conv --variants sliding,sliding-tiled,sliding-rows,sliding-vec,cudnn-heuristic,cudnn \
    --sizes 512,1024,2048,4096,8192 --stride 1,2,3 -o "$OUT/conv-fast.json" 2>&1 | grep -A20 "ms per variant"
  g run ci -o "$OUT/ci-1.json" 2>&1 | tail -1
  g run ci -o "$OUT/ci-2.json" 2>&1 | tail -1
  # A planted regression: an inner-loop bound that looks harmless but is known only at run time, so the
  # shared-memory GEMM's loop is no longer unrolled.
  sed -i 's/for (int k = 0; k < BLOCK; ++k) acc/for (int k = 0; k < min(BLOCK, K - k0); ++k) acc/' cuda_src/gemm/02_shared.cu
  grep -n "min(BLOCK" cuda_src/gemm/02_shared.cu
  g run ci -o "$OUT/ci-slow.json" 2>&1 | tail -1
  sed -i 's/for (int k = 0; k < min(BLOCK, K - k0); ++k) acc/for (int k = 0; k < BLOCK; ++k) acc/' cuda_src/gemm/02_shared.cu
  {
    echo "## ci-1 vs ci-2 (back to back, same code)"; g compare "$OUT/ci-1.json" "$OUT/ci-2.json" --format markdown; echo "exit code: $?"
    echo "## ci-1 vs ci-slow (planted slowdown in gemm/02_shared.cu)"; g compare "$OUT/ci-1.json" "$OUT/ci-slow.json" --format markdown; echo "exit code: $?"
  } > "$OUT/compare.md" 2>&1
  cat "$OUT/compare.md"
  g run lab -o "$OUT/lab.json" 2>&1 | tail -3 ;;
final)
  python3 -m pytest -q -m gpu tests/test_gpu.py 2>&1 | tee "$OUT/gpu-tests.txt" | tail -3
  g conv --variants sliding,sliding-tiled,sliding-rows,sliding-vec,cudnn-heuristic,cudnn \
    --sizes 512,1024,2048,4096,8192 --stride 1,2,3 -o "$OUT/conv-fast.json" 2>&1 | grep -A20 "ms per variant"
  g run ci -o "$OUT/ci-3.json" 2>&1 | tail -1
  # A planted regression of the blunt kind: a barrier left inside the inner loop of the shared-memory GEMM.
  sed -i 's/for (int k = 0; k < BLOCK; ++k) acc = fmaf(As\[ty\]\[k\], Bs\[k\]\[tx\], acc);/for (int k = 0; k < BLOCK; ++k) { acc = fmaf(As[ty][k], Bs[k][tx], acc); __syncthreads(); }/' cuda_src/gemm/02_shared.cu
  grep -n "__syncthreads(); }" cuda_src/gemm/02_shared.cu
  g run ci -o "$OUT/ci-slow-barrier.json" 2>&1 | tail -1
  git checkout -- cuda_src/gemm/02_shared.cu 2>/dev/null || sed -i 's/ { acc = fmaf(As\[ty\]\[k\], Bs\[k\]\[tx\], acc); __syncthreads(); }/ acc = fmaf(As[ty][k], Bs[k][tx], acc);/' cuda_src/gemm/02_shared.cu
  { echo "## ci-3 vs ci-slow-barrier (planted: a barrier inside gemm/02_shared.cu's inner loop)"
    g compare "$OUT/ci-3.json" "$OUT/ci-slow-barrier.json" --format markdown; echo "exit code: $?"; } > "$OUT/compare-barrier.md" 2>&1
  cat "$OUT/compare-barrier.md" ;;
esac
