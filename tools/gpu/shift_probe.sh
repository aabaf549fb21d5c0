#!/bin/bash
# Where the cold lab run's extra ~0.3 µs a call lives (docs/measuring/preheat.md): two lab runs back to back, cold (an
# empty kernel cache) then warm, both timed with both clocks, compared by the events and by CUPTI's kernel times.
# If the kernels agree where the events do not, the shift is in the launch path, outside the kernels.
#     bash tools/gpu/shift_probe.sh        # ~4 minutes on one GPU; run from the repo root, .devwheels carried
#                                          # (with cupti_python, pyelftools, cuda_bindings, cuda_pathfinder)
# Writes $OUT/shift.txt (both comparisons' summaries) and the two runs.
set -u
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
for kind in cold warm; do
  [ $kind = cold ] && export GPUBENCH_CACHE=/tmp/gb-shift-$RANDOM
  s=$SECONDS; python3 -m gpubench run lab --clock both -o "$OUT/shift-$kind.json.gz" > /dev/null 2>&1
  echo "lab $kind (both clocks): rc $?, $(( SECONDS - s )) s" | tee -a "$OUT/shift.txt"
done
for clock in events kernel; do
  echo "== compare by $clock" >> "$OUT/shift.txt"
  python3 -m gpubench compare "$OUT/shift-cold.json.gz" "$OUT/shift-warm.json.gz" --clock $clock --format markdown \
    | head -4 >> "$OUT/shift.txt"
done
cat "$OUT/shift.txt"
