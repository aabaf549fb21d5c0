#!/bin/bash
# The GPU runs behind fp8-tma's promoted accumulation (docs/perf-notes.md, results/<gpu>/tc-gemm-fp8.json).
#   bash tools/gpu/fp8.sh build   # compile every wgmma-tma and fp8-tma configuration in parallel (what follows reuses it)
#   bash tools/gpu/fp8.sh check   # the gpu tests of wgmma-tma and fp8-tma: every configuration, ragged shapes, the
#                                 # long-K error against cuBLASLt, the alternating sets bit for bit against one set
#   bash tools/gpu/fp8.sh error   # rel_err against the promotion interval p (tools/gpu/fp8_promotion.py)
#   bash tools/gpu/fp8.sh sweep   # tools/gpu/tc-gemm-fp8.toml: every fp8-tma configuration against cuBLASLt
#   bash tools/gpu/fp8.sh ncu     # gpubench profile at ${SIZES:-4096 8192}: cuBLASLt and every fp8-tma configuration,
#                                 # one timed call each under ncu, saved ($OUT/profile-fp8.json) with what limits each
#   bash tools/gpu/fp8.sh stalls  # ncu's warp-state sampling per SASS instruction of one launch each at ${SIZES:-4096}:
#                                 # cuBLASLt and the configurations in $CONFIGS (details page, source page as CSV, SASS)
#   bash tools/gpu/fp8.sh all     # build, check, error, sweep, ncu
# OUT and GPUBENCH_COMMIT come from the caller, and PYTHONPATH with the wheels (PyCUDA, nvmath for cuBLASLt).
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
step() {
  case "$1" in
  build)
    python3 - <<'PY'
from gpubench.specs import catalog
from gpubench.execution import nvcc
known = catalog.Catalog(catalog.builtin())
jobs = [b for name in ("wgmma-tma", "fp8-tma") for c in known.get("gemm", "cuda", name).space.configs
        for b in known.get("gemm", "cuda", name).builds(c, "sm_90")]
fp8 = known.get("gemm", "cuda", "fp8-tma")  # and the configurations the tests and the error probe make up
tile = {"BN": 128, "BK": 128, "STAGES": 6, "CLUSTER": 2}
jobs += [b for p in (1, 2, 4, 8, 16) for b in fp8.builds(fp8.space.config({**tile, "SWIZZLE": 8, "PROMOTE": p, "SETS": 2}), "sm_90")]
jobs += [b for p in (1, 2, 4) for n in (1, 2) for b in fp8.builds(fp8.space.config({**tile, "PROMOTE": p, "SETS": n}), "sm_90")]
print(f"build: {len(jobs)} compilations, failures: {nvcc.compile_all(jobs)}")
PY
    ;;
  check)
    python3 -m pytest -q -m gpu tests/test_gpu.py -k "fp8 or wgmma-tma" -p no:cacheprovider 2>&1 \
      | tee "$OUT/gpu-tests-fp8.txt" | tail -4 ;;
  error)
    python3 tools/gpu/fp8_promotion.py 4096 8192 2048x2048x16384 2>&1 | tee "$OUT/fp8-promotion.txt" ;;
  sweep)
    python3 -m gpubench run tools/gpu/tc-gemm-fp8.toml -o "$OUT/tc-gemm-fp8.json" > "$OUT/tc-gemm-fp8.log" 2>&1
    echo "sweep exit $?"; grep -E "cublaslt|fp8-tma" "$OUT/tc-gemm-fp8.log" | head -40
    # cuBLASLt once more right after ours, in the power state our points ran in (the suite times it first)
    python3 -m gpubench gemm --variants cublaslt --dtype fp8 --layout nt --sizes 4096,8192 --warmup 3 --reps 30 \
      --budget 0.5 --max-time 3 --cooldown 1 -o "$OUT/cublaslt-after.json" > "$OUT/cublaslt-after.log" 2>&1
    echo "cublaslt-after exit $?"; grep -E "cublaslt" "$OUT/cublaslt-after.log" | head -8 ;;
  ncu)  # the tensor pipe, stalls, L2 and DRAM of one timed call each (clocks as they come), cuBLASLt's kernel named
    sizes=$(echo ${SIZES:-4096 8192} | tr ' ' ,)
    python3 -m gpubench profile gemm --variants cublaslt,fp8-tma --dtype fp8 --layout nt --sizes "$sizes" --reps 10 \
      --budget 0.5 -o "$OUT/profile-fp8.json" --force > "$OUT/profile-fp8.log" 2>&1
    echo "profile exit $?"
    python3 -m gpubench show "$OUT/profile-fp8.json" --format markdown | sed -n '/what limits each point/,$p' ;;
  stalls)  # where each kernel's warps wait: the source page's samples per SASS instruction, beside the totals
    for n in ${SIZES:-4096}; do
      CONFIGS=${CONFIGS:-0} ncu --profile-from-start off --clock-control none --section SpeedOfLight \
        --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis --section LaunchStats \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,smsp__inst_executed.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum \
        -f -o "$OUT/stalls-$n" python3 tools/gpu/tc_profile.py $n fp8:nt > "$OUT/stalls-$n.log" 2>&1
      echo "ncu $n exit $?"; tail -5 "$OUT/stalls-$n.log"
      ncu -i "$OUT/stalls-$n.ncu-rep" --page details > "$OUT/stalls-$n-details.txt" 2>&1
      ncu -i "$OUT/stalls-$n.ncu-rep" --page source --csv --print-source sass > "$OUT/stalls-$n-sass.csv" 2>&1
      echo "source page exit $? $(wc -c < "$OUT/stalls-$n-sass.csv") bytes"; head -c 600 "$OUT/stalls-$n-sass.csv"; echo
      grep -E "^  [a-z]|Elapsed Cycles|SM Frequency|Shared|L2 Cache Throughput|Warp Cycles Per Issued|Stall|tensor_op|lts__t_bytes|wavefronts" "$OUT/stalls-$n-details.txt" | head -90
      rm -f "$OUT/stalls-$n.ncu-rep"
    done ;;
  esac
}
if [ "$1" = all ]; then for s in build check error sweep ncu; do echo "== $s"; step $s; done; else step "$1"; fi
