#!/bin/bash
# wgmma-tma's 16-bit loop with fp8's switches (the H100's last 0.4% at 4096; docs/perf-notes.md "The last
# 0.4%"): d1 (CARRY), d1 q1 (PEEK) and c1 (no cluster) beside c2 g8 u1, in two calls on the GPU machine.
#   bash tools/gpu/wgmma_carry.sh check    # the wgmma-tma gpu tests (the new d1/q1/c1 bit-for-bit test among them),
#                                          # the same test on a kernel broken on purpose (must fail), then ncu's
#                                          # warp-state samples per SASS instruction of cuBLAS, u1, u1 d1 q1 and
#                                          # c1 g8 u1 d1 q1 (bf16 nn 4096, one launch each, clocks as the card sets them)
#   bash tools/gpu/wgmma_carry.sh ab       # 2 screening rounds of the five configurations below, the screening rule
#                                          # (gpubench ab --screen, once tools/ab_rounds.py; fixed before), 5 rounds of cuBLAS, u1 and
#                                          # what passed
#   bash tools/gpu/wgmma_carry.sh follow   # 5 rounds of cuBLAS, u1 and c1 g8 u1 d1 q1, bf16 and fp16 nn only
#                                          # (tools/gpu/tc-gemm-ab-fastest.toml): a follow-up outside the rule
#   SUITE=tools/gpu/tc-gemm-ab-nn-tn.toml bash tools/gpu/wgmma_carry.sh follow   # the same in nn and tn (~2.5 min)
# The stage's spec list of wgmma-tma is replaced by SCREEN (this copy's cuda_src/gemm/variants.toml is rewritten:
# run it on a copy). OUT, GPUBENCH_COMMIT and PYTHONPATH (with the wheels) come from the caller.
set -u -o pipefail
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
U="BN = 256, BK = 64, STAGES = 4"
SCREEN=("{ $U, CLUSTER = 2, SWIZZLE = 8, UWG = 1 }" "{ $U, CLUSTER = 2, SWIZZLE = 8, UWG = 1, CARRY = 1 }"
        "{ $U, CLUSTER = 2, SWIZZLE = 8, UWG = 1, CARRY = 1, PEEK = 1 }" "{ $U, CLUSTER = 1, SWIZZLE = 8, UWG = 1 }"
        "{ $U, CLUSTER = 1, SWIZZLE = 8, UWG = 1, CARRY = 1, PEEK = 1 }")
REFERENCE="wgmma-tma 128x256x64 s4 c2 g8 u1"

# The wgmma-tma spec's configs = [...] replaced by the inline tables given, or by those of them whose label (as
# "wgmma-tma LABEL") is in KEEP (a ";"-separated list, as gpubench ab --screen prints it).
set_list() {
    KEEP="${KEEP:-}" python3 - "$@" <<'PY'
import os, sys
from pathlib import Path
path = Path("cuda_src/gemm/variants.toml")
text = path.read_text()
a = text.index("configs = [", text.index('family = "wgmma-tma"\nsummary = "FP16/BF16'))
b = text.index("}]\n", a) + 3
tables = sys.argv[1:]
keep = {k.strip() for k in os.environ["KEEP"].split(";") if k.strip()}
if keep:  # each table's own label (at 1bfb3bb the labels were read from the file's list, which `follow` had not
    # replaced: its rounds ran c1 g8 u1 d1 q1 alone, without u1)
    import tomllib
    from gpubench.specs import catalog
    v = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "wgmma-tma")
    tables = [t for t in tables if f"wgmma-tma {v.space.config(tomllib.loads('t = ' + t)['t']).label}" in keep]
path.write_text(text[:a] + "configs = [" + ",\n           ".join(tables) + "]\n" + text[b:])
print("wgmma-tma list:", *tables, sep="\n  ")
PY
}

case "${1:-}" in
check)
    nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv \
        | tee "$OUT/smi.txt"
    echo "== gpu tests ($(date -u +%T))"
    TESTS="(test_gemm and wgmma-tma) or overlapped or four_block or tall_tiles or 16bit_carried"
    { echo "# GPU tests of wgmma-tma, commit $GPUBENCH_COMMIT: pytest tests/test_gpu.py -k '$TESTS' -v"
      nvidia-smi --query-gpu=name,uuid --format=csv,noheader
      timeout 240 python3 -m pytest tests/test_gpu.py -k "$TESTS" -v -p no:cacheprovider 2>&1; } > "$OUT/gpu-tests.txt"
    tail -1 "$OUT/gpu-tests.txt"; grep "FAILED\|Error" "$OUT/gpu-tests.txt" | head -20
    echo "== the d1/q1 test on a broken kernel ($(date -u +%T))"
    # d1 issuing a slot's four k steps last to first: the same products, summed in another order (within the
    # tolerance, not bit for bit): the test must fail for every configuration with CARRY.
    bash tools/gpu/broken_kernel.sh cuda_src/gemm/10_wgmma_tma.cu \
        's/j \* A_KSTEP,/(CARRY ? KSTEPS - 1 - j : j) * A_KSTEP,/; s/db + j \* B_KSTEP,/db + (CARRY ? KSTEPS - 1 - j : j) * B_KSTEP,/' \
        16bit_carried "d1's k steps issued last to first" > "$OUT/broken-kernel-test.txt"
    tail -3 "$OUT/broken-kernel-test.txt"
    echo "== stalls ($(date -u +%T))"
    set_list "${SCREEN[@]}"
    CONFIGS=0,2,4 timeout 200 ncu --profile-from-start off --clock-control none --section SpeedOfLight \
        --section WarpStateStats --section SourceCounters --section MemoryWorkloadAnalysis --section LaunchStats \
        --metrics sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,lts__t_bytes.sum,smsp__inst_executed.sum,sm__cycles_active.avg \
        -f -o /tmp/stalls python3 tools/gpu/tc_profile.py 4096 bf16:nn > "$OUT/stalls.log" 2>&1
    echo "ncu exit $?"; tail -5 "$OUT/stalls.log"
    ncu -i /tmp/stalls.ncu-rep --page details > "$OUT/stalls-details.txt" 2>&1
    ncu -i /tmp/stalls.ncu-rep --page source --csv --print-source sass > "$OUT/stalls-sass.csv" 2>&1
    python3 tools/gpu/sass_stalls.py "$OUT/stalls-sass.csv" --top 25 | tee "$OUT/stalls-summary.txt"
    grep -E "^  [a-z]|Elapsed Cycles|SM Active Cycles|SM Frequency|Duration|L2 Cache Throughput|Warp Cycles Per Issued|tensor_op|lts__t_bytes|inst_executed" \
        "$OUT/stalls-details.txt" | head -60 ;;
ab)
    set_list "${SCREEN[@]}"
    python3 tools/precompile.py sm_90 --only wgmma-tma | tail -1
    echo "== screening: 2 rounds ($(date -u +%T))"
    OUT=/tmp/screen bash tools/gpu/gemm_ab.sh 2 > "$OUT/screen.log" 2>&1; grep "==\|exit" "$OUT/screen.log"
    mkdir -p /tmp/screen/runs && tar xzf /tmp/screen/ab-rounds.tgz -C /tmp/screen/runs
    cp /tmp/screen/ab-rounds.tgz "$OUT/screen-rounds.tgz"
    python3 -m gpubench ab /tmp/screen/runs/tc-gemm-ab-r1.json /tmp/screen/runs/tc-gemm-ab-r2.json --format markdown \
        --screen "$REFERENCE" --keep 2 > "$OUT/screen.md"
    sed -n '/^Screening/,$p' "$OUT/screen.md"
    PASSING=$(sed -n 's/^PASSING: //p' "$OUT/screen.md")
    KEEP="$REFERENCE;$PASSING" set_list "${SCREEN[@]}"
    echo "== 5 rounds ($(date -u +%T))"
    OUT=/tmp/rounds bash tools/gpu/gemm_ab.sh 5 > "$OUT/rounds.log" 2>&1; grep "==\|exit" "$OUT/rounds.log"
    cp /tmp/rounds/ab-rounds.tgz "$OUT/rounds.tgz"; cp /tmp/rounds/tc-gemm-ab.md "$OUT/rounds.md"
    head -30 "$OUT/rounds.md" ;;
follow)  # 5 rounds of cuBLAS, u1 and c1 g8 u1 d1 q1 in nn only (outside the screening rule)
    KEEP="$REFERENCE;wgmma-tma 128x256x64 s4 c1 g8 u1 d1 q1" set_list "${SCREEN[@]}"
    OUT=/tmp/follow bash tools/gpu/gemm_ab.sh 5 "${SUITE:-tools/gpu/tc-gemm-ab-fastest.toml}" > "$OUT/follow.log" 2>&1
    grep "==\|exit" "$OUT/follow.log"; cp /tmp/follow/ab-rounds.tgz "$OUT/follow.tgz"; cp /tmp/follow/tc-gemm-ab.md "$OUT/follow.md"
    head -12 "$OUT/follow.md" ;;
*)
    echo "usage: bash tools/gpu/wgmma_carry.sh check|ab|follow" >&2; exit 2 ;;
esac
echo "== done ($(date -u +%T))"
