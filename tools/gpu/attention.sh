#!/bin/bash
# Attention and grouped GEMM on a GPU, from the repository root ($OUT set by the caller):
#   tests   the gpu tests: every attention variant (naive, flash-mma, cuDNN SDPA, PyTorch's SDPA backends) and every
#           grouped GEMM library on ragged shapes, the 16k problem against the chunked reference, large logits
#   smoke   one short sweep of each op (a few minutes at most)
#   attention | grouped-gemm   the shipped suite of that name (each may take several minutes)
#   bash tools/gpu/attention.sh tests|smoke|attention|grouped-gemm
set -uo pipefail
step=${1:?tests, smoke, attention or grouped-gemm}
case $step in
  tests)
    python3 -m pytest -m gpu -p no:cacheprovider -n 0 -q -rs tests/test_gpu_attention.py tests/test_gpu_grouped_gemm.py \
      2>&1 | tee "$OUT/gpu-tests-attention.txt" | tail -60 ;;
  smoke)
    python3 -m gpubench attention --seq 1000,4096 --heads 16 --causal 0,1 --dtype fp16,bf16,fp8 \
      --variants cudnn-sdpa,torch-flash,flash-mma,naive -o "$OUT/attention-smoke.json.gz" 2>&1 | tail -40
    echo "attention exit ${PIPESTATUS[0]}"
    python3 -m gpubench grouped-gemm --group-m 1000,0,3000,2048 --n 4096 --k 7168 --dtype bf16,fp8 \
      --layout contiguous,masked --variants library,torch-grouped-mm,cublas-loop -o "$OUT/grouped-smoke.json.gz" \
      2>&1 | tail -40
    echo "grouped-gemm exit ${PIPESTATUS[0]}" ;;
  attention|grouped-gemm)
    python3 -m gpubench run "$step" -o "$OUT/$step.json.gz" 2>&1 | tail -60
    echo "$step exit ${PIPESTATUS[0]}" ;;
  *) echo "unknown step $step: tests, smoke, attention or grouped-gemm" >&2; exit 2 ;;
esac
