#!/bin/bash
# fp8-grouped's n1 (the next tile's first slot issued before the epilogue) and wgmma-grouped's bf16 bands of 16
# (g16) on a GPU, in one call of about five minutes, from the repository root ($OUT, GPUBENCH_COMMIT and the wheels'
# PYTHONPATH set by the caller):
#   1. their gpu tests (every layout, the ragged and masked sizes); nothing else runs unless they all pass
#   2. a quick pass of tools/gpu/grouped-fp8-next.toml (t1 and t1 n1, 128 x 128 and 128 x 160, the four block-scaled
#      shapes; not judged: a series needs its rule written first, docs/evidence/grouped-rounds.md)
#   3. a quick pass of tools/gpu/grouped-bf16-bands.toml (g8, g16 and c2 g8 beside the libraries at 4096 x 7168)
#   4. ncu (tools/gpu/grouped-next-profile.toml): t1 and t1 n1 at 7168 x 2048 (does the tensor pipe stay busier?),
#      bf16 g8 and g16 at 4096 x 7168 (fewer DRAM bytes?)
# Outputs: $OUT/next.txt (what each step said), next-tests.log, next-pass.json.gz and .log, bands.json.gz and .log,
# next-profile.json.gz and .log; exit 0 only if every step did.
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
S=$OUT/next.txt
timeout -k 5 150 python3 -m pytest -p no:cacheprovider -m gpu -n 8 tests/test_gpu_grouped_gemm.py \
  -k "(fp8-grouped and n1) or (wgmma-grouped and g16)" -q > "$OUT/next-tests.log" 2>&1
rc=$?
echo "tests: exit $rc, $(tail -1 "$OUT/next-tests.log")" | tee -a "$S"
[ $rc -eq 0 ] || exit 1
timeout -k 5 150 python3 -m gpubench run tools/gpu/grouped-fp8-next.toml -o "$OUT/next-pass.json.gz" \
  > "$OUT/next-pass.log" 2>&1
pass=$?
echo "pass: exit $pass" >> "$S"
COLUMNS=250 python3 -m gpubench show "$OUT/next-pass.json.gz" 2>&1 | grep -v "^\s*$" | head -40 >> "$S"
timeout -k 5 120 python3 -m gpubench run tools/gpu/grouped-bf16-bands.toml -o "$OUT/bands.json.gz" > "$OUT/bands.log" 2>&1
bands=$?
echo "bands: exit $bands" >> "$S"
COLUMNS=250 python3 -m gpubench show "$OUT/bands.json.gz" 2>&1 | grep -v "^\s*$" | head -30 >> "$S"
timeout -k 5 150 python3 -m gpubench profile run tools/gpu/grouped-next-profile.toml -o "$OUT/next-profile.json.gz" \
  > "$OUT/next-profile.log" 2>&1
profile=$?
echo "profile: exit $profile" >> "$S"
COLUMNS=250 python3 -m gpubench show "$OUT/next-profile.json.gz" 2>&1 | sed -n '/what limits/,$p' >> "$S"
cat "$S"
[ $pass -eq 0 ] && [ $bands -eq 0 ] && [ $profile -eq 0 ]
