#!/bin/bash
# Why is a cold run slower? A cold lab run (an empty kernel cache) times its 7-20 µs calls about 0.1-0.35 µs slower
# each than the warm run after it (docs/measuring/preheat.md, docs/evidence/lab-pair-spread-h200.txt), outside the
# kernels, and a pair with CUPTI on in both runs showed no such shift. This probe runs cold-then-warm pairs of the
# lab's small convolutions (tools/gpu/lab-small.toml) in three arms, each twice, arms interleaved:
#   overlap   the default: nvcc compiles while the worker process starts (and makes its CUDA context)
#   first     GPUBENCH_COMPILE_FIRST=1: the worker starts only once every kernel is compiled
#   cupti     the default start, both runs with --clock both (CUPTI's activity records on)
# and prints, per pair, the warm/cold ratio and the cold - warm difference per call by duration class, each run's
# empty-kernel floor, and compare's counts. If `first` agrees within the A/A spread and `overlap` does not, a
# context made under a compile storm is the mechanism. About 6 minutes on one GPU; from the repository root on the
# GPU machine, .devwheels carried (tools/README.md); $OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/lead-site .devwheels/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/lead-site
say() { echo "$@" | tee -a "$OUT/cold-probe.txt"; }
pair() {  # pair ARM REP
  local arm=$1 rep=$2 extra=() env=()
  [ "$arm" = cupti ] && extra=(--clock both)
  [ "$arm" = first ] && env=(GPUBENCH_COMPILE_FIRST=1)
  export GPUBENCH_CACHE=/tmp/gb-cold-$arm-$rep
  rm -rf "$GPUBENCH_CACHE"
  for kind in cold warm; do
    local s=$SECONDS
    env "${env[@]}" python3 -m gpubench run tools/gpu/lab-small.toml "${extra[@]}" -o "/tmp/cold-probe/$arm-$rep-$kind.json.gz" \
      >> "$OUT/cold-probe.log" 2>&1
    say "$arm $rep $kind: rc $?, $((SECONDS - s)) s"
  done
  python3 tools/gpu/cold_pair.py "/tmp/cold-probe/$arm-$rep-cold.json.gz" "/tmp/cold-probe/$arm-$rep-warm.json.gz" \
    | tee -a "$OUT/cold-probe.txt"
}
mkdir -p /tmp/cold-probe
for rep in 1 2; do
  for arm in overlap first cupti; do pair $arm $rep; done
done
tar czf "$OUT/cold-probe-runs.tgz" -C /tmp/cold-probe .
