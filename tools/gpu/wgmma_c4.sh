#!/bin/bash
# One call on the GPU machine for wgmma-tma's 4-block clusters (c4) and the repeated A/B (issue 20): how many
# clusters of 4 fit, the wgmma-tma gpu tests, 5 rounds of tools/gpu/gemm_ab.sh, then ncu of cuBLAS, c2 g8 o1 and
# c4 g8 o1 at 4096 bf16 nn (one launch each, clocks not locked; stall sampling by source line).
# Usage there (repository root; OUT, GPUBENCH_COMMIT, PYTHONPATH set by the caller): bash tools/gpu/wgmma_c4.sh [ROUNDS]
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
nvcc -arch=sm_90a -o /tmp/cluster_occupancy tools/gpu/cluster_occupancy.cu && /tmp/cluster_occupancy | tee "$OUT/cluster-occupancy.txt"
echo "== gpu tests ($(date -u +%T))"
{ echo "# GPU tests of wgmma-tma (every configuration, c4 among them; c4 against c1 and c2 bit for bit), commit $GPUBENCH_COMMIT: python3 -m pytest tests/test_gpu.py -k '(test_gemm and wgmma) or four_block or overlapped' -v"
  nvidia-smi --query-gpu=name,uuid --format=csv,noheader
  timeout 240 python3 -m pytest tests/test_gpu.py -k "(test_gemm and wgmma) or four_block or overlapped" -v -p no:cacheprovider 2>&1; } > "$OUT/gpu-tests.txt"
tail -2 "$OUT/gpu-tests.txt"
if grep -q " failed\| error" "$OUT/gpu-tests.txt"; then grep "FAILED\|Error" "$OUT/gpu-tests.txt" | head -20; fi
echo "== A/B ($(date -u +%T))"
bash tools/gpu/gemm_ab.sh "${1:-5}" > "$OUT/ab.log" 2>&1; grep "==\|exit" "$OUT/ab.log"
echo "== ncu ($(date -u +%T))"
if command -v ncu > /dev/null; then
    # (at 31ab290, where this ran, c4 g8 o1 was the list's fifth configuration: CONFIGS=3,4; it is out of the list now)
    CONFIGS=3 timeout 100 ncu --profile-from-start off --clock-control none --section SpeedOfLight \
        --section MemoryWorkloadAnalysis --section WarpStateStats --section SourceCounters \
        python3 tools/gpu/tc_profile.py 4096 bf16:nn > "$OUT/ncu.txt" 2>&1
    echo "ncu exit $?"; grep -E "^  [a-z_]|Duration|SM Frequency|L2 Cache Throughput|Compute \(SM\)|Memory Throughput" "$OUT/ncu.txt" | head -40
fi
echo "== done ($(date -u +%T))"
