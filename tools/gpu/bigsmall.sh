# The whole-run shift: the lab's conv-small section alone (lab-small.toml) and after a few of its largest points
# (lab-bigsmall.toml), three processes of each, alternating; then each kind compared with itself.
# Run from the repo root on the GPU machine with .devwheels carried (docs/evidence/whole-run-shift-h100.md).
set -x
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/lead-site .devwheels/*.whl 2>/dev/null
export PYTHONPATH=$PWD:/tmp/lead-site PYTHONUNBUFFERED=1 GPUBENCH_CACHE=/tmp/gb-x GPUBENCH_COMMIT=$(cat .commit)
gb() { python3 -m gpubench "$@"; }
for i in 1 2 3; do
  t0=$(date +%s.%N); gb run tools/gpu/lab-small.toml -o $OUT/small-$i.json >> $OUT/log.txt 2>&1; echo small $i rc=$? $(echo "$(date +%s.%N) - $t0" | bc)
  t0=$(date +%s.%N); gb run tools/gpu/lab-bigsmall.toml -o $OUT/bigsmall-$i.json >> $OUT/log.txt 2>&1; echo bigsmall $i rc=$? $(echo "$(date +%s.%N) - $t0" | bc)
done
for p in "small-1 small-2" "small-2 small-3" "small-1 small-3" "bigsmall-1 bigsmall-2" "bigsmall-2 bigsmall-3" "bigsmall-1 bigsmall-3"; do
  set -- $p; echo "== $1 -> $2"; gb compare $OUT/$1.json $OUT/$2.json --allow-partial 2>&1 | grep -E "slower|inconclusive|floor|shift" | head -5
done
