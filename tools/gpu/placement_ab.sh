# Whether more places tried per small buffer make runs agree: the lab's conv-small section (lab-small.toml) in
# alternating processes with placement.CANDIDATES as shipped and at the value given, three of each, then each kind
# compared with itself. Run from the repo root on the GPU machine, .devwheels carried:
#     bash tools/gpu/placement_ab.sh 8        (docs/evidence/whole-run-shift-h100.md)
more=${1:-8}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/lead-site .devwheels/*.whl 2>/dev/null
rm -rf /tmp/ab && mkdir -p /tmp/ab/more && cp -r gpubench /tmp/ab/more/
sed -i "s/^CANDIDATES = [0-9]*/CANDIDATES = $more/" /tmp/ab/more/gpubench/backends/cuda/placement.py
grep -n "^CANDIDATES" gpubench/backends/cuda/placement.py /tmp/ab/more/gpubench/backends/cuda/placement.py
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=/tmp/gb-x GPUBENCH_COMMIT=$(cat .commit 2>/dev/null || echo unknown)
for i in 1 2 3; do
  for kind in shipped more; do
    root=$PWD; [ $kind = more ] && root=/tmp/ab/more
    s=$(date +%s)
    PYTHONPATH=$root:/tmp/lead-site python3 -m gpubench run tools/gpu/lab-small.toml -o $OUT/$kind-$i.json >> $OUT/log.txt 2>&1
    echo "$kind $i rc=$? $(( $(date +%s) - s )) s"
  done
done
for kind in shipped more; do
  for p in "1 2" "2 3" "1 3"; do
    set -- $p
    echo "== $kind $1 -> $2: $(PYTHONPATH=$PWD:/tmp/lead-site python3 -m gpubench compare $OUT/$kind-$1.json $OUT/$kind-$2.json 2>&1 | grep -E 'threshold' | sed 's/.*threshold/threshold/')"
  done
done
