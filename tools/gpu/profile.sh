#!/bin/bash
# `gpubench profile` against ncu run by hand on the same calls (docs/measuring/profiling.md), on one GPU (~4-5 min):
#   1. which of gpubench's metric names (gpubench/measure/ncu.py's METRICS) this ncu and GPU know;
#   2. gpubench profile gemm: the lab's GEMM at 4096 (global and shared at the lab's block size 16, tiled, cuBLAS);
#   3. gpubench profile conv: ResNet-50's 14² layer (N 128, C = K = 256, fp16 NHWC) of tools/gpu/tc-conv-14.toml,
#      cuDNN and every tc-wgmma-tma configuration;
#   4. ncu by hand, the same metrics, on the same calls (tools/gpu/profile_by_hand.py: one process a call, its raw
#      page as CSV): the GEMM's five, cuDNN and the H200's fixed 14² kernel (docs/evidence/tc-conv-14-rounds.md);
#   5. the two side by side with their difference in % (tools/gpu/profile_compare.py), and `gpubench show`'s table
#      of what limits each point.
#     bash tools/gpu/profile.sh
#     python3 -m pytest -q -m gpu tests/test_gpu_profile.py -p no:cacheprovider   # every kind of variant (~1-2 min)
# Writes under $OUT (7 files): profile-gemm.json, profile-conv.json (the saved runs), ncu-raw-gemm.csv and
# ncu-raw-conv.csv (ncu by hand: --csv --page raw), ncu-pages-gemm.txt and ncu-pages-conv.txt (the pages gpubench's
# ncu printed and gpubench read: GPUBENCH_NCU_LOGS), profile.log (everything printed). The ncu outputs are to become
# tests/fixtures/ncu/ files. OUT comes from the caller, and PYTHONPATH with the wheels (PyCUDA, the cuDNN frontend).
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
FIXED=${FIXED:-128x128x64 s6 c1 ping1 u1 d1 q1}  # the H200's 14² fp16 kernel (H100: FIXED="192x128x64 s4 c1 ...")
CONV="--sizes 14 --stride 1 --batch 128 --in-channels 256 --out-channels 256 --padding 1 --dtype fp16 --layout nhwc"
exec > >(tee "$OUT/profile.log") 2>&1
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
"$NCU" --version | tail -1
METRICS=$(python3 -c "from gpubench.measure import ncu; print(','.join(m.ncu for m in ncu.metrics_for('sm_90')))")

echo "== 1. metric names this ncu does not list for this GPU (each is left out of gpubench's set here)"
"$NCU" --query-metrics > /tmp/ncu-query.txt 2>&1
for m in ${METRICS//,/ }; do grep -q "^${m%%.*}\b" /tmp/ncu-query.txt || echo "   unknown: $m"; done

keep_pages() {  # $1: the folder gpubench kept its pages in; $2: the file they go to
  for f in "$1"/*.txt; do echo "# point $(basename "$f" .txt)"; cat "$f"; done > "$2"; rm -rf "$1"
}

echo "== 2. gpubench profile gemm ($(date -u +%T))"
GPUBENCH_NCU_LOGS=/tmp/pages-gemm python3 -m gpubench profile gemm --sizes 4096 --variants global,shared,tiled,cublas \
  --block-sizes 16 --reps 10 --budget 0.5 -o "$OUT/profile-gemm.json" --force
echo "exit $?"; keep_pages /tmp/pages-gemm "$OUT/ncu-pages-gemm.txt"

echo "== 3. gpubench profile conv ($(date -u +%T))"
GPUBENCH_NCU_LOGS=/tmp/pages-conv python3 -m gpubench profile conv --variants cudnn,tc-wgmma-tma $CONV \
  --reps 10 --budget 0.5 -o "$OUT/profile-conv.json" --force
echo "exit $?"; keep_pages /tmp/pages-conv "$OUT/ncu-pages-conv.txt"

by_hand() {  # $1: the file; $2 $3: gemm 4096 or conv14 fp16; then VARIANT[:LABEL] per call
  local file=$1 op=$2 arg=$3; shift 3
  : > "$file"
  for call in "$@"; do
    name=${call%%:*}; label=${call#*:}; [ "$label" = "$call" ] && label="-"
    echo "# call $name $label" >> "$file"
    "$NCU" --profile-from-start off --clock-control none --print-units base --csv --page raw --metrics "$METRICS" \
      --log-file /tmp/ncu-hand.csv python3 tools/gpu/profile_by_hand.py "$op" "$arg" "$call" > /tmp/ncu-hand.out 2>&1
    echo "   $call: exit $? $(tail -1 /tmp/ncu-hand.out)"
    cat /tmp/ncu-hand.csv /tmp/ncu-hand.out >> "$file"  # (the CSV is in the log file; the program's lines after it)
  done
}
echo "== 4. ncu by hand ($(date -u +%T))"
by_hand "$OUT/ncu-raw-gemm.csv" gemm 4096 global:16 shared:16 "tiled:128x128x8/8x8" "tiled:64x64x8/4x4" cublas
by_hand "$OUT/ncu-raw-conv.csv" conv14 fp16 cudnn "tc-wgmma-tma:$FIXED"

echo "== 5. side by side ($(date -u +%T))"
python3 tools/gpu/profile_compare.py "$OUT/profile-gemm.json" "$OUT/ncu-raw-gemm.csv" \
  "$OUT/profile-conv.json" "$OUT/ncu-raw-conv.csv"
python3 -m gpubench show "$OUT/profile-gemm.json" --format markdown | sed -n '/what limits each point/,$p'
python3 -m gpubench show "$OUT/profile-conv.json" --format markdown | sed -n '/what limits each point/,$p'
echo "== done ($(date -u +%T))"
