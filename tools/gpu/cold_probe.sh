#!/bin/bash
# Why is a cold run slower? A cold lab run (an empty kernel and plan cache) timed its 7-20 µs calls 0.1-0.4 µs slower
# each than the warm run after it (docs/measuring/preheat.md). This probe runs cold-then-warm pairs of the lab's
# small convolutions (tools/gpu/lab-small.toml), each arm twice, arms interleaved:
#   events   the default clock
#   cupti    both runs with --clock both (CUPTI's activity records on)
#   graph    both runs with --graph 64: each sample one launch of a CUDA graph of 64 calls, no host launch inside it
# and prints, per pair, the warm/cold ratio and the cold - warm difference per call by duration class, each run's
# empty-kernel floor, and compare's counts; tools/gpu/cold_pair.py PAIR --by-point lists the difference point by
# point in the run's order (where it starts). About 6 minutes on one GPU for every arm twice (the default; or
# `bash tools/gpu/cold_probe.sh "graph events" 1`); from the repository root on the GPU machine, .devwheels carried
# (tools/README.md); $OUT set.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/lead-site .devwheels/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/lead-site
say() { echo "$@" | tee -a "$OUT/cold-probe.txt"; }
pair() {  # pair ARM REP
  local arm=$1 rep=$2 extra=()
  [ "$arm" = cupti ] && extra=(--clock both)
  [ "$arm" = graph ] && extra=(--graph 64)
  export GPUBENCH_CACHE=/tmp/gb-cold-$arm-$rep
  rm -rf "$GPUBENCH_CACHE"
  for kind in cold warm; do
    local s=$SECONDS
    python3 -m gpubench run tools/gpu/lab-small.toml "${extra[@]}" -o "/tmp/cold-probe/$arm-$rep-$kind.json.gz" \
      >> "$OUT/cold-probe.log" 2>&1
    say "$arm $rep $kind: rc $?, $((SECONDS - s)) s"
  done
  python3 tools/gpu/cold_pair.py "/tmp/cold-probe/$arm-$rep-cold.json.gz" "/tmp/cold-probe/$arm-$rep-warm.json.gz" --around cudnn \
    | tee -a "$OUT/cold-probe.txt"
}
arms=${1:-events cupti graph} reps=${2:-2}  # e.g. bash tools/gpu/cold_probe.sh graph 1: one graph pair
mkdir -p /tmp/cold-probe
for rep in $(seq "$reps"); do
  for arm in $arms; do pair "$arm" "$rep"; done
done
tar czf "$OUT/cold-probe-runs.tgz" -C /tmp/cold-probe .
