#!/bin/bash
# The GPU runs behind the kernels issue (docs/perf-notes.md, results/<gpu>/kernels-*.json, configs/tuned/).
#   bash tools/gpu/kernels.sh check    # the gpu tests of the Winograd variants (every configuration, ragged shapes)
#   bash tools/gpu/kernels.sh winograd # every Winograd configuration on the four stride-1 ResNet layers
#   bash tools/gpu/kernels.sh ncu      # ncu of the Winograd kernel on the 28² and 7² layers
#   bash tools/gpu/kernels.sh resnet   # the ResNet layers: Winograd and implicit GEMM against cuDNN's best plan
#   bash tools/gpu/kernels.sh tune     # SGEMM autotuning at 4096 and 8192 for this GPU (written to $OUT/tuned)
#   bash tools/gpu/kernels.sh gemm     # FP32 (tuned, dbuf, sgemm-tma, cuBLAS) and TF32 (tf32, tf32-tma, cuBLAS) at 4096, 8192
#   bash tools/gpu/kernels.sh tf32     # the gpu tests of the TF32 variants, then TF32 at 4096 and 8192 against cuBLAS
#   bash tools/gpu/kernels.sh tf32ncu  # ncu of the TMA-fed TF32 kernel at 4096 (every launch, all configurations)
#   bash tools/gpu/kernels.sh tf32probe # where its time goes: the copies, the products, the stores, each switched off
#   bash tools/gpu/kernels.sh tf32l2   # ncu of every TF32 kernel at 4096 (and cuBLAS's roofline probe at 8192): launch
#                                  # shapes, bytes to the SMs, L2 sectors, L2's busiest sub-units
#   bash tools/gpu/kernels.sh labconv  # the lab conv at 8192², strides 1-3: the memory-bound variants and cuDNN
#   bash tools/gpu/kernels.sh all      # all of the above, in that order
# OUT and GPUBENCH_COMMIT come from the caller; wheels in .devwheels (PyCUDA, cuDNN frontend).
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-$PWD/.kcache}
export GPUBENCH_TUNED=${GPUBENCH_TUNED:-$OUT/tuned}
mkdir -p "$GPUBENCH_TUNED" && cp configs/tuned/*.json "$GPUBENCH_TUNED/" 2>/dev/null
g() { python3 -m gpubench "$@"; }
# The traffic counters behind the TF32 notes: bytes delivered to the SMs, L2 sectors, shared-memory wavefronts.
TRAFFIC=l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_sectors_op_read.sum,lts__t_sectors.sum,\
l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,\
smsp__inst_executed.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
case "$1" in
check)
  python3 -m pytest -q -m gpu tests/test_gpu.py -k "winograd" -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests-winograd.txt" | tail -3 ;;
winograd)  # the four stride-1 ResNet layers: every Winograd configuration against cuDNN's best plan
  for layer in "56 64" "28 128" "14 256" "7 512"; do set -- $layer
    g conv --variants winograd-2x2,winograd-4x4,cudnn --sizes $1 --stride 1 --batch 32 --in-channels $2 \
      --out-channels $2 --padding 1 -o "$OUT/winograd-$1.json" > "$OUT/winograd-$1.log" 2>&1
    grep -E "winograd|cudnn " "$OUT/winograd-$1.log" | grep -v "^│.*compute" | head -12
  done ;;
ncu)  # where the Winograd kernel's time goes, on the 28² and 7² layers
  for layer in "28 128" "7 512"; do set -- $layer
    ncu --target-processes all -k regex:winograd_conv -c 1 --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis \
      --section MemoryWorkloadAnalysis python3 -m gpubench conv --variants winograd-2x2 --sizes $1 --stride 1 \
      --batch 32 --in-channels $2 --out-channels $2 --padding 1 --reps 5 --warmup 0 -o /tmp/ncu-$1.json \
      > "$OUT/ncu-winograd-$1.txt" 2>&1
    grep -E "Duration|Issue Slots Busy|Eligible Warps|No Eligible|Registers Per|Achieved Occupancy|Compute \(SM\) Thr|Memory Thr|L1/TEX Hit|L2 Hit|DRAM Thr|Stall|Warp Cycles Per Issued" "$OUT/ncu-winograd-$1.txt" | head -24
  done ;;
resnet)
  g run resnet -o "$OUT/resnet.json" > "$OUT/resnet.log" 2>&1; tail -60 "$OUT/resnet.log" ;;
tune)
  /usr/bin/time -f "tune: %e s" python3 -m gpubench tune gemm --sizes 4096,8192 --candidates 40 --refine 1 > "$OUT/tune.log" 2>&1
  tail -8 "$OUT/tune.log" ;;
gemm)
  g gemm --variants cublas,tuned,dbuf,sgemm-tma --sizes 4096,8192 -o "$OUT/gemm-fp32.json" 2>&1 | tail -16
  g gemm --tf32 --variants cublas,tf32,tf32-tma --sizes 4096,8192 -o "$OUT/gemm-tf32.json" 2>&1 | tail -14 ;;
tf32)
  timeout 300 python3 -m pytest -q -m gpu tests/test_gpu.py -k "tf32" -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests-tf32.txt" | tail -5
  g gemm --tf32 --variants cublas,tf32,tf32-tma --sizes 4096,8192 -o "$OUT/tf32.json" 2>&1 | tail -16 ;;
tf32ncu)  # every launch of both configurations at 4096 (cluster size tells them apart)
  ncu --target-processes all -k regex:gemm_tf32_tma -c 30 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats --section LaunchStats --section MemoryWorkloadAnalysis python3 -m gpubench gemm --tf32 \
    --variants tf32-tma --sizes 4096 --reps 5 --warmup 0 -o /tmp/ncu-tf32.json > "$OUT/ncu-tf32-tma-4096.txt" 2>&1
  grep -E "Cluster Size  |Duration|Issue Slots Busy|Eligible Warps|L2 Cache Thr|Compute \(SM\) Thr|Warp Cycles Per Issued|stalled" "$OUT/ncu-tf32-tma-4096.txt" | head -40 ;;
tf32probe)  # the TMA-fed TF32 kernel with parts switched off (PROBE), at 4096 and 8192
  python3 tools/gpu/tf32_probe.py 4096 8192 2>&1 | tee "$OUT/tf32-probe.txt" ;;
tf32l2)  # every launch at 4096 (ours: told apart by grid, block and cluster size), with L2's busiest sub-units
  ncu --target-processes all -k regex:'gemm_tf32_tma|sm90_xmma' -c 80 --section LaunchStats \
    --metrics "$TRAFFIC,gpu__time_duration.sum,breakdown:lts__throughput.avg.pct_of_peak_sustained_elapsed" \
    python3 -m gpubench gemm --tf32 --variants cublas,tf32-tma --sizes 4096 --reps 5 --warmup 0 --decide 0 \
    -o /tmp/ncu-l2.json > "$OUT/ncu-tf32-l2-4096.txt" 2>&1
  python3 tools/ncu_digest.py "$OUT/ncu-tf32-l2-4096.txt" ;;
labconv)
  g conv --variants sliding-tiled,sliding-rows,sliding-vec,sliding-stream,cudnn --sizes 8192 --stride 1,2,3 -o "$OUT/labconv.json" 2>&1 | tail -24 ;;
all)
  for step in check resnet tune gemm labconv; do echo "== $step"; bash "$0" "$step"; done ;;
esac
