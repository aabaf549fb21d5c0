#!/bin/bash
# The GPU runs behind the FP32 Winograd (docs/perf-notes.md, results/<gpu>/winograd.json).
#   bash tools/gpu/winograd.sh build   # compile every Winograd configuration at once, in parallel (the cache)
#   bash tools/gpu/winograd.sh check   # the gpu tests of every Winograd variant (every configuration, ragged
#                                      # shapes) and winograd-tf32x3's error against the FFMA products'
#   bash tools/gpu/winograd.sh sweep   # tools/gpu/winograd.toml: the four stride-1 ResNet layers at N = 32, every
#                                      # Winograd configuration against cuDNN's best FP32 plan in the same run
#   bash tools/gpu/winograd.sh ncu     # ncu of winograd-tf32x3's products on the 7² layer (CONFIG: its parameters)
#   bash tools/gpu/winograd.sh sass    # the products' instruction mix (7²'s configuration): counts by opcode
#   bash tools/gpu/winograd.sh all     # build, check, sweep, ncu, sass
# OUT and GPUBENCH_COMMIT come from the caller, and PYTHONPATH with the wheels (PyCUDA, the cuDNN frontend).
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
step() {
  case "$1" in
  build)
    python3 - <<'PY'
from gpubench.specs import catalog, parse as specs
from gpubench.execution import nvcc
known = catalog.Catalog(catalog.builtin())
jobs = []
for name in ("winograd-2x2", "winograd-4x4", "winograd-gemm", "winograd-tf32x3"):
    v = known.get("conv", "cuda", name)
    configs = list(v.space.configs) + ([v.space.config({**v.space.configs[0].values, "PARTS": 1})] if name.endswith("x3") else [])
    jobs += [j for c in configs for p in specs.sample_problems(v) for j in v.builds(c, v.code.program.arch or "sm_90", p)]
failures = nvcc.compile_all(jobs)
print(f"{len(set(jobs))} builds, {len(failures)} failed", *(str(e) for _, e in failures), sep="\n")
PY
    ;;
  check)
    timeout 220 python3 -m pytest -q -m gpu tests/test_gpu.py -k "winograd" -p no:cacheprovider -rf -s 2>&1 \
      | tee "$OUT/gpu-tests-winograd.txt" | grep -E "winograd-gemm .*tf32x3|passed|failed|Error" | tail -6 ;;
  sweep)
    timeout 300 python3 -m gpubench run tools/gpu/winograd.toml -o "$OUT/winograd.json" > "$OUT/winograd.log" 2>&1
    echo "sweep exit $?"
    python3 - "$OUT/winograd.json" <<'PY'
import json, sys
for p in json.load(open(sys.argv[1]))["points"]:  # every configuration: median, rel_err, each step's own time
    parts = " ".join(f"{k.removeprefix('winograd_')} {v:.4f}" for k, v in ((p.get("details") or {}).get("parts_ms") or {}).items())
    err = f"{p['rel_err']:.1e}" if p.get("rel_err") is not None else "-"
    print(p["problem"]["height"], p["variant"], p.get("config"), f"{p['stats']['median']:.4f}" if p.get("stats") else p.get("status"),
          err, parts, p["telemetry"]["sm_mhz_min"] if p.get("telemetry") else "")
PY
    ;;
  ncu)  # where the tensor-core products' time goes: pipes, issue, stalls (the second launch of three)
    timeout 120 ncu -k regex:winograd_products_tc -s 1 -c 1 --section SpeedOfLight --section WarpStateStats \
      --section SchedulerStats --section Occupancy --section ComputeWorkloadAnalysis --section LaunchStats \
      --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active \
      python3 tools/gpu/winograd_probe.py 7x512 > "$OUT/ncu-winograd-tf32x3-7.txt" 2>&1
    grep -E "Duration|Registers Per|Achieved Occupancy|Issue Slots Busy|Eligible Warps|No Eligible|Warp Cycles Per Issued|hmma|pipe_xu|Compute \(SM\) Thr|Memory Thr|Stall|stall" "$OUT/ncu-winograd-tf32x3-7.txt" | head -30 ;;
  sass)
    nvcc -arch=sm_90 -cubin -o /tmp/products_tc.cubin -DBM=64 -DBN=128 -DBK=32 -DWM=32 -DWN=64 -DSTAGES=3 \
      -DMIN_BLOCKS=2 -DSPLIT=2 cuda_src/conv/15_winograd_tf32x3.cu && \
    cuobjdump -sass -fun winograd_products_tc /tmp/products_tc.cubin | grep -oE "/\*[0-9a-f]{4,}\*/\s+(@!?U?P[0-9T]+\s+)?[A-Z0-9.]+" \
      | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -20 | tee "$OUT/sass-products-tc.txt" ;;
  esac
}
if [ "$1" = all ]; then for s in build check sweep ncu sass; do echo "== $s"; step $s; done; else step "$1"; fi
