#!/bin/bash
# One judged series of the grouped-GEMM targets in one device call, as docs/evidence/grouped-rounds.md's later series
# are run: the GPU tests of what the series times first (nothing else runs unless they all pass), then pass 0 and
# the mechanical fixing of each problem's fastest configuration (target_rounds.sh pass0), then five rounds of the
# fixed suite (target_rounds.sh rounds), none started unless what is left of the call's ten minutes still holds it.
# A series that exists to judge something new names it (REQUIRED, a word of a configuration label): where pass 0
# fixes it on no problem, no round runs, so that unchanged code is not judged again and again until it passes.
# From the repository root ($OUT, GPUBENCH_COMMIT and the wheels' PYTHONPATH set by the caller):
#   bash tools/gpu/series_call.sh "fp8-grouped and n1" tools/gpu/grouped-fp8-next.toml n1
# Outputs: $OUT/series.txt (what each step said), tests.log, pass0.json.gz and .log, rounds.toml and fixed.txt (to
# commit under tools/gpu/rounds/), rounds.tgz (each round's run and log). Then, here: judge_rounds.py.
set -u -o pipefail
tests=${1:?the pytest -k expression that picks the GPU tests} suite=${2:?the suite of pass 0} required=${3:-}
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
S=$OUT/series.txt
here=$(dirname "$0")
timeout -k 5 150 python3 -m pytest -p no:cacheprovider -m gpu -n 8 tests/test_gpu_grouped_gemm.py -k "$tests" -q \
  > "$OUT/tests.log" 2>&1
rc=$?
echo "tests: exit $rc, $(tail -1 "$OUT/tests.log")" | tee -a "$S"
[ $rc -eq 0 ] || exit 1
timeout -k 5 200 bash "$here/target_rounds.sh" pass0 "$suite" 2>&1 | tee -a "$S"
[ -s "$OUT/rounds.toml" ] || { echo "no rounds: pass 0 fixed nothing" | tee -a "$S"; exit 1; }
if [ -n "$required" ] && ! grep -q -w -- "$required" "$OUT/fixed.txt"; then
  echo "no rounds: pass 0 fixed $required on no problem" | tee -a "$S"; exit 0
fi
SECONDS_LEFT=$((575 - SECONDS)) bash "$here/target_rounds.sh" rounds "$OUT/rounds.toml" 5 2>&1 | tee -a "$S"
