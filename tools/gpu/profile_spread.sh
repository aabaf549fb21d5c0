#!/bin/bash
# How far ncu agrees with itself on the 14² conv calls of tools/gpu/profile.sh: ncu by hand three times on cuDNN and
# the H200's fixed tc-wgmma-tma configuration, and `gpubench profile conv` twice, so that a difference between
# gpubench and ncu by hand is read against ncu's own run-to-run spread (docs/measuring/profiling.md).
#     bash tools/gpu/profile_spread.sh       # ~4 minutes on an H200; writes $OUT/spread.tgz and $OUT/spread.log
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
FIXED=${FIXED:-128x128x64 s6 c1 ping1 u1 d1 q1}
CONV="--sizes 14 --stride 1 --batch 128 --in-channels 256 --out-channels 256 --padding 1 --dtype fp16 --layout nhwc"
D=/tmp/spread; rm -rf $D; mkdir -p $D
exec > >(tee "$OUT/spread.log") 2>&1
METRICS=$(python3 -c "from gpubench.measure import ncu; print(','.join(m.ncu for m in ncu.metrics_for('sm_90')))")
for r in 1 2 3; do
  : > $D/ncu-raw-conv-$r.csv
  for call in cudnn "tc-wgmma-tma:$FIXED"; do
    name=${call%%:*}; label=${call#*:}; [ "$label" = "$call" ] && label="-"
    echo "# call $name $label" >> $D/ncu-raw-conv-$r.csv
    "$NCU" --profile-from-start off --clock-control none --print-units base --csv --page raw --metrics "$METRICS" \
      --log-file /tmp/ncu-hand.csv python3 tools/gpu/profile_by_hand.py conv14 fp16 "$call" > /tmp/ncu-hand.out 2>&1
    echo "by hand $r $call: exit $?"; cat /tmp/ncu-hand.csv /tmp/ncu-hand.out >> $D/ncu-raw-conv-$r.csv
  done
done
for r in 1 2; do
  GPUBENCH_NCU_LOGS=$D/pages-$r python3 -m gpubench profile conv --variants cudnn,tc-wgmma-tma $CONV \
    --reps 10 --budget 0.3 -o $D/profile-conv-$r.json --force > $D/profile-$r.log 2>&1
  echo "gpubench profile $r: exit $?"
done
for r in 1 2; do for h in 1 2 3; do
  echo "== gpubench $r against by hand $h"
  python3 tools/gpu/profile_compare.py $D/profile-conv-$r.json $D/ncu-raw-conv-$h.csv | grep -E "^==|<-|agree"
done; done
tar czf $OUT/spread.tgz -C /tmp spread
