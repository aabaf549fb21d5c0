#!/bin/bash
# One line per profiled kernel of fp8.sh ncu's output files: elapsed cycles, clock, tensor pipe, L2 sectors read by
# the SMs and across the partitions' fabric, SM active cycles, instructions, max active clusters.
#   bash tools/gpu/ncu_table.sh $OUT/ncu-fp8-4096.txt ...
for f in "$@"; do
  echo "== $f"
  awk '/^  (nvjet|gemm)/{k=$1} /Elapsed Cycles/{c=$NF} /SM Frequency/{g=$NF} /tensor_op_hmma/{t=$NF}
       /srcunit_tex_op_read/{r=$NF} /ltcfabric/{fab=$NF} /sm__cycles_active/{a=$NF} /smsp__inst_executed/{i=$NF}
       /Max Active Clusters/{mc=$NF}
       /Warp Cycles Per Issued/{printf "%-28s cyc %10s %5s GHz tensor %6s%% texread %12s fabric %11s active %12s inst %12s clusters %s\n", substr(k,1,28), c, g, t, r, fab, a, i, mc}' "$f"
  grep -E "TFLOP|promotion" "$f" | grep -v "^=="
done
