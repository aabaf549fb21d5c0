#!/bin/bash
# One judged series of the grouped-GEMM targets in one device call, by docs/evidence/grouped-rounds.md's rule for
# its later series: the GPU tests of what the series times first (nothing else runs unless they all pass), then
# pass 0 and the mechanical fixing of each problem's fastest configuration (target_rounds.sh pass0), then five rounds
# of the fixed suite (target_rounds.sh rounds), none started unless the call's time left still holds it.
# A series that exists to judge something new names it (REQUIRED, a word of a configuration label): where pass 0
# fixes it on no problem, no round runs, so that unchanged code is not judged again and again until it passes.
# From the repository root ($OUT, GPUBENCH_COMMIT and the wheels' PYTHONPATH set by the caller):
#   bash tools/gpu/series_call.sh "fp8-grouped and n1" tools/gpu/grouped-fp8-next.toml n1
# CALL_SECONDS (560): the seconds from this script's start to the call's end, less a margin; ROUND_GUESS (70): what
# the first round is taken to need before one has run.
# Outputs: $OUT/series.txt (what each step said), tests.log, pass0.json.gz and .log, rounds.toml and fixed.txt (to
# commit under tools/gpu/rounds/), rounds.tgz (each round's run and log). Exit 0 only where every step did and all
# five rounds ran, or where the guard stopped the series. Then, here: judge_rounds.py --new REQUIRED.
set -u -o pipefail
tests=${1:?the pytest -k expression that picks the GPU tests} suite=${2:?the suite of pass 0} required=${3:-}
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
S=$OUT/series.txt
here=$(dirname "$0")
# (and the tile walk's own tests, every band)
timeout -k 5 150 python3 -m pytest -p no:cacheprovider -m gpu -n 8 tests/test_gpu_grouped_gemm.py \
  tests/test_gpu_group_walk.py -k "($tests) or band" -q > "$OUT/tests.log" 2>&1
rc=$?
echo "tests: exit $rc, $(tail -1 "$OUT/tests.log")" | tee -a "$S"
[ $rc -eq 0 ] || exit 1
timeout -k 5 200 bash "$here/target_rounds.sh" pass0 "$suite" 2>&1 | tee -a "$S"
rc=$?
if [ $rc -ne 0 ] || [ ! -s "$OUT/rounds.toml" ]; then
  echo "no rounds: pass 0 or its fixing failed (exit $rc)" | tee -a "$S"; exit 1
fi
# the guard reads each fixed line's configuration, after its last ": " (sweep: problem: variant configuration)
if [ -n "$required" ] && ! sed 's/.*: //' "$OUT/fixed.txt" | grep -q -w -- "$required"; then
  echo "no rounds: pass 0 fixed $required on no problem; the earlier verdicts stand" | tee -a "$S"; exit 0
fi
SECONDS_LEFT=$((${CALL_SECONDS:-560} - SECONDS)) ROUND_GUESS=${ROUND_GUESS:-70} \
  bash "$here/target_rounds.sh" rounds "$OUT/rounds.toml" 5 2>&1 | tee -a "$S"
