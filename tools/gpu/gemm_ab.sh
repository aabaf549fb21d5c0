#!/bin/bash
# The repeated A/B of the 16-bit GEMM against cuBLAS: ROUNDS runs of tools/gpu/tc-gemm-ab.toml, each in its own
# process (its own context, cuBLAS handle and heuristics), back to back, every point kept; then the ratios over the
# rounds (`gpubench ab FILE...`, once tools/ab_rounds.py: the median of each kernel's ratio to cuBLAS and its interval, clock-unclamped pairs
# only). Inside a round every shape runs cuBLAS, then each configuration, each from a 1 s rest.
# Usage (repository root, on the GPU machine; OUT and GPUBENCH_COMMIT set by the caller):
#   bash tools/gpu/gemm_ab.sh [ROUNDS] [SUITE]     # default 5 rounds of tools/gpu/tc-gemm-ab.toml
#   BASELINE=cublaslt bash tools/gpu/gemm_ab.sh 3 tools/gpu/tc-gemm-fp8-ab.toml   # fp8 against cuBLASLt
# It leaves $OUT/tc-gemm-ab.md (the table) and $OUT/ab-rounds.tgz (tc-gemm-ab-r1.json ... and each round's log,
# for results/<gpu>/); a round that fails is reported and the others still run. The H200's run, for the lead:
#   bash tools/gpu/gemm_ab.sh 5      (then: tar xzf ab-rounds.tgz; cp tc-gemm-ab-r*.json results/nvidia-h200/)
set -u
ROUNDS=${1:-5}
SUITE=${2:-tools/gpu/tc-gemm-ab.toml}
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
runs=()
for r in $(seq 1 "$ROUNDS"); do
    echo "== round $r of $ROUNDS ($(date -u +%T))"
    python3 -m gpubench run "$SUITE" -o "$OUT/tc-gemm-ab-r$r.json" --force > "$OUT/tc-gemm-ab-r$r.log" 2>&1
    echo "   exit $? ($(date -u +%T)): $(tail -1 "$OUT/tc-gemm-ab-r$r.log")"
    [ -s "$OUT/tc-gemm-ab-r$r.json" ] && runs+=("$OUT/tc-gemm-ab-r$r.json")
done
python3 -m gpubench ab "${runs[@]}" --baseline "${BASELINE:-cublas}" --format markdown | tee "$OUT/tc-gemm-ab.md"
# The device tool brings back 8 files at most: the rounds and their logs travel as one archive.
(cd "$OUT" && tar czf ab-rounds.tgz tc-gemm-ab-r*.json tc-gemm-ab-r*.log && rm -f tc-gemm-ab-r*)
