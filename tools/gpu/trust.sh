#!/bin/bash
# The GPU runs behind the measurement-trust evidence (docs/evidence/measurement.md, results/<gpu>/lab-a.json,
# lab-b*.json: the device writes lab-1.json and lab-2.json under $OUT, saved here under those names).
#   bash tools/gpu/trust.sh first    # gpu tests, a smoke run, gpubench vs nvbench vs do_bench, lab run 1
#   bash tools/gpu/trust.sh second $OUT/lab-1.json   # lab run 2, compared with run 1 (the first call's file)
#   bash tools/gpu/trust.sh all      # the timers, then two lab runs back to back and their comparison
#   bash tools/gpu/trust.sh check    # the gpu tests, then the ci and quick suites (energy on every point?)
# OUT and GPUBENCH_COMMIT come from the caller; wheels in .devwheels (PyCUDA, cuDNN frontend) and .whl (cuda-bench).
set -u -o pipefail
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl .whl/cuda_bench-*.whl 2>/dev/null || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-$PWD/.kcache}
g() { python3 -m gpubench "$@"; }
DEV=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1 | tr 'A-Z ' 'a-z-')
case "$1" in
first)
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  [ -n "${SKIP_TESTS:-}" ] || python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider 2>&1 | tail -3
  g gemm --variants cublas,tiled --sizes 512,2048 -o /tmp/smoke.json 2>&1 | tail -12 || exit 1
  g gemm --variants cublas,tiled --sizes 512,2048,4096 -o /tmp/timers-gemm.json > /dev/null 2>&1
  g conv --variants sliding --sizes 4096 --stride 1 --block-sizes 16 -o /tmp/timers-conv.json > /dev/null 2>&1
  python3 tools/gpu/timers.py nvbench /tmp > /tmp/nvbench.log 2>&1; tail -2 /tmp/nvbench.log
  python3 tools/gpu/timers.py dobench /tmp 2>&1 | grep -v Deprecat | tail -2
  python3 tools/gpu/timers.py table /tmp /tmp/timers-gemm.json /tmp/timers-conv.json | tee "$OUT/timers.md"
  /usr/bin/time -f "lab run 1: %e s" python3 -m gpubench run lab -o "$OUT/lab-1.json" > "$OUT/lab-1.log" 2>&1
  tail -4 "$OUT/lab-1.log" ;;
all)
  SKIP_TESTS=1 bash "$0" first && bash "$0" second "$OUT/lab-1.json" ;;
check)
  python3 -m pytest -q -m gpu tests/test_gpu.py -p no:cacheprovider 2>&1 | tee "$OUT/gpu-tests.txt" | tail -3
  g run ci -o "$OUT/ci.json" 2>&1 | tail -1
  g run quick -o "$OUT/quick.json" 2>&1 | tail -1
  python3 -c "
import json, sys
for f in sys.argv[1:]:
    d = json.load(open(f)); ok = [p for p in d['points'] if p['status'] == 'ok']
    e = [p for p in ok if (p.get('telemetry') or {}).get('joules_per_call')]
    c = [p for p in ok if (p.get('telemetry') or {}).get('sm_mhz')]
    print(f, len(d['points']), 'points,', len(ok), 'ok,', len(e), 'with energy,', len(c), 'with SM clock')
" "$OUT/ci.json" "$OUT/quick.json" ;;
second)
  /usr/bin/time -f "lab run 2: %e s" python3 -m gpubench run lab -o "$OUT/lab-2.json" > "$OUT/lab-2.log" 2>&1
  tail -3 "$OUT/lab-2.log"
  g compare "$2" "$OUT/lab-2.json" --format markdown > "$OUT/compare-lab.md" 2>&1; echo "compare exit code: $?" | tee -a "$OUT/compare-lab.md"
  head -8 "$OUT/compare-lab.md" ;;
esac
