#!/bin/bash
# The ops-as-plugins checks on a GPU: the two example projects (each op declared in its gpubench.toml) run from a
# wheel installed outside the repository, a planted wrong kernel, and the lab run by the code before the redesign
# (OLD, a copy of its gpubench/, cuda_src/ and configs/) and after it, back to back, then compared.
#   bash tools/gpu/plugins.sh OLD_DIR      (writes under $OUT)
set -uo pipefail
old=${1:?give the pre-redesign source copy}
repo=$PWD
site=${PYTHONPATH%%:*}  # the staged wheels (.devwheels), first on the path
python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/wh "$repo" >/dev/null || exit 1
python3 -m pip install -q --no-index --no-deps --target /tmp/gb /tmp/wh/gpubench-*.whl || exit 1
export PYTHONPATH=$site:/tmp/gb
mkdir -p /tmp/ex && cp -r "$repo/examples/softmax" "$repo/examples/attention" /tmp/ex/
cd /tmp/ex/softmax
python3 -m gpubench sweep softmax --rows 4096 --cols 1000,4096,16384 --dtype fp32,bf16 -o "$OUT/softmax.json.gz" \
  2>&1 | tail -14; echo "softmax exit ${PIPESTATUS[0]}"
python3 -m gpubench sweep softmax --config planted.toml --rows 4096 --cols 1000 --dtype fp16 -o /tmp/planted.json \
  2>&1 | tail -3; echo "planted exit ${PIPESTATUS[0]}"
cd /tmp/ex/attention
python3 -m gpubench sweep my-attention --B 1 --H 16 --S 1024,4096 --D 128 --causal 0,1 --dtype fp16,bf16 \
  -o "$OUT/attention.json.gz" 2>&1 | tail -14; echo "attention exit ${PIPESTATUS[0]}"
cd /tmp
PYTHONPATH=$site:$old python3 -m gpubench run lab -o "$OUT/lab-before.json.gz" 2>&1 | tail -2
python3 -m gpubench run lab -o "$OUT/lab-after.json.gz" 2>&1 | tail -2
python3 -m gpubench compare "$OUT/lab-before.json.gz" "$OUT/lab-after.json.gz" > "$OUT/lab-compare.txt" 2>&1
echo "compare exit $?"; tail -4 "$OUT/lab-compare.txt"
