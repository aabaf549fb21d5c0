#!/bin/bash
# The GPU runs behind the tensor-core convolution (docs/perf-notes.md, results/<gpu>/tc-conv.json).
#   bash tools/gpu/tc_conv.sh check   # the gpu tests of tc-implicit, tc-wgmma, tc-wgmma-ws: every configuration,
#                                     # fp16 and bf16, ragged shapes
#   bash tools/gpu/tc_conv.sh sweep   # tools/gpu/tc-conv.toml: the three against cuDNN's best plan, ResNet-50 layers
#   bash tools/gpu/tc_conv.sh sweep-ws # tools/gpu/tc-conv-ws.toml: tc-wgmma-ws (one and two producers) against cuDNN
#   bash tools/gpu/tc_conv.sh check-tma # the gpu tests of tc-wgmma-tma alone (its split1 and PING tests included)
#   bash tools/gpu/tc_conv.sh sweep-tma # tools/gpu/tc-conv-tma.toml: tc-wgmma-tma against tc-wgmma-ws and cuDNN
#   bash tools/gpu/tc_conv.sh sweep-tma-28-14 # tools/gpu/tc-conv-tma-28-14.toml: cuDNN and tc-wgmma-tma, 28² and 14²
#   bash tools/gpu/tc_conv.sh ncu-tma   # gpubench profile (fp16) of tc-wgmma-tma on the 28², 14² and 7² layers (or
#                                       # LAYERS="14x256 7x512"): $OUT/profile-tma-<layer>.json and what limits each
#   bash tools/gpu/tc_conv.sh carry     # u1 d1 q1 on the conv loop (docs/perf-notes.md, "fp8's u1, d1 and q1 on the
#                                       # conv loop"), one device call of ~6-8 min: precompile, the variant's gpu
#                                       # tests (the new bit-for-bit test among them), that test on a kernel broken on
#                                       # purpose (must fail), then sweep-tma-28-14 (the three u1 d1 q1 configurations
#                                       # beside their plain twins, cuDNN, fp16 and bf16)
#   bash tools/gpu/tc_conv.sh ncu-carry # ncu-tma at 28² and 14²: the three u1 d1 q1 configurations and their plain
#                                       # twins among every configuration profiled
#   bash tools/gpu/tc_conv.sh targets   # every conv row of the tensor-core conv targets (four stride-1 layers, stride 2) in one
#                                       # saved run, $OUT/tc-conv-issue20$RUN.json (the log stays in /tmp: the device
#                                       # tool returns 8 files a call)
#   bash tools/gpu/tc_conv.sh ncu-power # 14² fp16 and bf16, cuDNN's best plan beside 14²'s best of ours, one bracketed
#                                       # call each under ncu: the counters a unit's energy follows (~2 min)
#   bash tools/gpu/tc_conv.sh check-halo # the gpu tests of tc-wgmma-halo alone (ragged shapes, walked tiles, the
#                                      # descriptors' base offset)
#   bash tools/gpu/tc_conv.sh sweep-halo # tools/gpu/tc-conv-halo.toml: tc-wgmma-halo against tc-wgmma-tma and cuDNN
#   bash tools/gpu/tc_conv.sh halo       # check-halo, then sweep-halo if the tests passed (one device call, ~2 min)
#   bash tools/gpu/tc_conv.sh halo56     # check-halo, then tools/gpu/tc-conv-halo-56.toml: the 56² layer alone
#                                        # (~1 min): cuDNN, tc-wgmma-tma and tc-wgmma-halo, fp16 and bf16
#   bash tools/gpu/tc_conv.sh ncu-halo   # ncu (fp16) of tc-wgmma-halo and tc-wgmma-tma on the 56² and 28² layers
#                                        # (or LAYERS=...; ONLY="label,label" to profile only those configurations:
#                                        # ~20 s a launch): L2 read sectors, tensor pipe, DRAM
#   bash tools/gpu/tc_conv.sh probe   # every configuration on the five layers, back to back (a quick look; EXTRA=...)
#   bash tools/gpu/tc_conv.sh where   # tc-wgmma-ws with parts switched off: copies only, products only, no proxy fence
#   bash tools/gpu/tc_conv.sh ncu     # gpubench profile (fp16) on the 56² and 14² layers, each configuration of the
#                                     # four tensor-core convolutions and cuDNN: $OUT/profile-<layer>.json
#   bash tools/gpu/tc_conv.sh all     # check, probe, sweep, ncu
# OUT and GPUBENCH_COMMIT come from the caller, and PYTHONPATH with the wheels (PyCUDA, the cuDNN frontend).
set -u -o pipefail
export PYTHONUNBUFFERED=1 GPUBENCH_CACHE=${GPUBENCH_CACHE:-/tmp/gpubench-cache}
# tensor pipe busy, shared-memory bank conflicts on ldmatrix and cp.async, DRAM and L2 traffic, achieved occupancy
METRICS=sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__inst_executed_pipe_tensor_op_hmma.avg.pct_of_peak_sustained_active,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,dram__bytes_read.sum,dram__bytes_write.sum,\
lts__t_sectors_op_read.sum,sm__warps_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum,\
sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed
step() {
  case "$1" in
  check)
    python3 -m pytest -q -m gpu tests/test_gpu.py -k "tc-implicit or tc-wgmma" -p no:cacheprovider 2>&1 \
      | tee "$OUT/gpu-tests-tc.txt" | tail -4 ;;
  sweep)
    python3 -m gpubench run tools/gpu/tc-conv.toml -o "$OUT/tc-conv.json" > "$OUT/tc-conv.log" 2>&1
    echo "sweep exit $?"; grep -E "tc-implicit|cudnn" "$OUT/tc-conv.log" | grep -v "compute" | head -60 ;;
  sweep-ws)  # tools/gpu/tc-conv-ws.toml: tc-wgmma-ws alone (with two producer warpgroups too) against cuDNN
    python3 -m gpubench run tools/gpu/tc-conv-ws.toml -o "$OUT/tc-conv-ws.json" > "$OUT/tc-conv-ws.log" 2>&1
    echo "sweep-ws exit $?" ;;
  check-tma)  # (a bounded wait: a kernel that hangs ends the step, not the device call)
    timeout ${CHECK_SECONDS:-300} python3 -m pytest -q -m gpu tests/test_gpu.py \
      -k "tc-wgmma-tma or split_last_wave or tma_ping" -p no:cacheprovider -rfs 2>&1 \
      | tee "$OUT/gpu-tests-tc-tma.txt" | tail -4 ;;
  sweep-tma)  # tools/gpu/tc-conv-tma.toml: tc-wgmma-tma against tc-wgmma-ws and cuDNN
    python3 -m gpubench run tools/gpu/tc-conv-tma.toml -o "$OUT/tc-conv-tma.json" > "$OUT/tc-conv-tma.log" 2>&1
    echo "sweep-tma exit $?" ;;
  sweep-tma-28-14)  # tools/gpu/tc-conv-tma-28-14.toml: the two layers tc-wgmma-tma's PING and TMA store are for
    python3 -m gpubench run tools/gpu/tc-conv-tma-28-14.toml -o "$OUT/tc-conv-tma-28-14.json" \
      > "$OUT/tc-conv-tma-28-14.log" 2>&1
    echo "sweep-tma-28-14 exit $?" ;;
  ncu-tma)  # gpubench profile: each configuration's one timed call under ncu, its counters saved with the point
    VARIANTS=tc-wgmma-tma step profile ${LAYERS:-28x128 14x256 7x512} ;;
  profile)  # (used by ncu and ncu-tma) gpubench profile conv of $VARIANTS on each layer given, fp16 NHWC, N = 128
    shift; for l in "$@"; do
      size=${l%x*}; c=${l#*x}
      python3 -m gpubench profile conv --variants "${VARIANTS:-cudnn,tc-implicit,tc-wgmma,tc-wgmma-ws,tc-wgmma-tma}" \
        --sizes "$size" --stride 1 --batch 128 --in-channels "$c" --out-channels "$c" --padding 1 --dtype fp16 \
        --layout nhwc --reps 10 --budget 0.5 -o "$OUT/profile${PREFIX:-}-$l.json" --force > "/tmp/profile-$l.log" 2>&1
      echo "profile $l: exit $?"
      python3 -m gpubench show "$OUT/profile${PREFIX:-}-$l.json" --format markdown | sed -n '/what limits each point/,$p'
    done ;;
  carry)
    nvidia-smi --query-gpu=name,uuid,driver_version,clocks.sm,clocks.max.sm,power.limit,temperature.gpu \
      --format=csv | tee "$OUT/smi.txt"
    echo "== precompile ($(date -u +%T))"; python3 tools/precompile.py sm_90 --only tc-wgmma-tma | tail -1
    echo "== gpu tests ($(date -u +%T))"
    timeout ${CHECK_SECONDS:-300} python3 -m pytest -q -m gpu tests/test_gpu.py \
      -k "tc-wgmma-tma or split_last_wave or tma_ping or tc_conv_carried" -p no:cacheprovider -rfs 2>&1 \
      | tee "$OUT/gpu-tests-tc-carry.txt" | tail -4
    echo "== the bit-for-bit test on a broken kernel ($(date -u +%T))"
    # d1 issuing a slice's four k steps last to first: the same products summed in another order (within the
    # tolerance, not bit for bit), so the test must fail for every configuration with CARRY
    bash tools/gpu/broken_kernel.sh cuda_src/conv/14_tc_wgmma_tma.cu \
      's/return da + i \* A_BLOCK + kk \* KSTEP;/return da + i * A_BLOCK + (BK \/ 16 - 1 - kk) * KSTEP;/; s/return db + kk \* KSTEP;/return db + (BK \/ 16 - 1 - kk) * KSTEP;/' \
      tc_conv_carried "d1's k steps issued last to first" > "$OUT/broken-kernel-test.txt"
    tail -3 "$OUT/broken-kernel-test.txt"
    echo "== sweep ($(date -u +%T))"; step sweep-tma-28-14
    grep -E "u1 d1 q1|s4 c1 |s6 c1 |tmastore0 |cudnn" "$OUT/tc-conv-tma-28-14.log" | grep -v "ping\|split\|p0" | head -40
    echo "== done ($(date -u +%T))" ;;
  ncu-carry)  # the three u1 d1 q1 configurations and their plain twins, 28² and 14² (fp16): ncu-tma, which profiles
    # every tc-wgmma-tma configuration, these six among them
    LAYERS="${LAYERS:-28x128 14x256}" step ncu-tma ;;
  ncu-power)  # 14² fp16 and bf16: cuDNN's best plan beside ours, one bracketed call each, the counters a unit's
    # energy follows (instructions issued, shared-memory wavefronts, L2 sectors and bytes to the SMs, DRAM bytes)
    for dt in fp16 bf16; do
      BRACKET=1 REPS=3 DTYPE=$dt VARIANTS=cudnn,tc-wgmma-tma ONLY="${ONLY:-192x128x64 s4 c1 tmastore0 u1 d1 q1,\
192x128x64 s4 c1 tmastore0,192x128x64 s4 c1 u1 d1 q1,128x128x64 s6 c1 u1 d1 q1}" ncu --profile-from-start off \
        --metrics "gpu__time_duration.sum,sm__cycles_active.avg,gpc__cycles_elapsed.max,smsp__inst_executed.sum,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,\
lts__t_sectors.sum,lts__t_sectors_op_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum,lts__t_sector_hit_rate.pct,\
dram__bytes_read.sum,dram__bytes_write.sum" --csv python3 tools/gpu/tc_conv_probe.py ${LAYERS:-14x256} \
        > "$OUT/ncu-power-$dt.csv" 2> "$OUT/ncu-power-$dt.err"
      echo "ncu-power $dt: exit $?, $(grep -c '"gpu__time_duration.sum"' "$OUT/ncu-power-$dt.csv") kernels"
    done ;;
  check-halo)
    # (a bounded wait: a kernel that hangs ends the step, not the device call)
    timeout ${CHECK_SECONDS:-240} python3 -m pytest -q -m gpu tests/test_gpu.py -k "tc-wgmma-halo or halo_" \
      -p no:cacheprovider -rfs -s 2>&1 \
      | tee "$OUT/gpu-tests-tc-halo.txt" | tail -4 ;;
  sweep-halo)  # tools/gpu/tc-conv-halo.toml: tc-wgmma-halo against tc-wgmma-tma and cuDNN, the stride-1 layers
    python3 -m gpubench run tools/gpu/tc-conv-halo.toml -o "$OUT/tc-conv-halo.json" > "$OUT/tc-conv-halo.log" 2>&1
    echo "sweep-halo exit $?" ;;
  targets)  # tools/gpu/tc-conv-issue20.toml: every conv row of the targets in one saved run (~1.5 min)
    python3 -m gpubench run tools/gpu/tc-conv-issue20.toml -o "$OUT/tc-conv-issue20${RUN:-}.json" \
      > "/tmp/tc-conv-issue20${RUN:-}.log" 2>&1
    echo "targets exit $?"; grep -A14 "best configuration per variant" "/tmp/tc-conv-issue20${RUN:-}.log" | cut -c1-150 ;;
  sweep-halo56)  # tools/gpu/tc-conv-halo-56.toml: the 56² layer alone
    python3 -m gpubench run tools/gpu/tc-conv-halo-56.toml -o "$OUT/tc-conv-halo-56.json" > "$OUT/tc-conv-halo-56.log" 2>&1
    echo "sweep-halo56 exit $?" ;;
  ncu-halo)  # one launch a configuration (REPS=1: a warm-up, then the profiled call), halo and tma side by side
    VARIANTS=tc-wgmma-halo,tc-wgmma-tma REPS=1 ONLY="${ONLY:-}" ncu --metrics "$METRICS,sm__cycles_active.avg,gpc__cycles_elapsed.max,\
lts__throughput.avg.pct_of_peak_sustained_elapsed" --csv python3 tools/gpu/tc_conv_probe.py ${LAYERS:-56x64 28x128} \
      > "$OUT/ncu-halo.csv" 2> "$OUT/ncu-halo.err"
    echo "ncu-halo: exit $?, $(grep -c conv_tc "$OUT/ncu-halo.csv") rows" ;;
  probe)  # every configuration back to back, L2 not flushed (tools/gpu/tc_conv_probe.py; EXTRA adds configurations)
    python3 tools/gpu/tc_conv_probe.py 56x64 28x128 14x256 7x512 56x128s2 2>&1 | tee "$OUT/probe.txt" ;;
  where)  # where tc-wgmma-ws's time goes: its best configurations with parts switched off (PROBE in 13_tc_wgmma_ws.cu)
    E=""; for c in "BM=128,BN=256,STAGES=4" "BM=256,BN=128,STAGES=4" "BM=256,BN=64,STAGES=5"; do for p in 1 2 3; do
      E="$E;tc-wgmma-ws:$c,PROBE=$p"; done; done
    VARIANTS=tc-wgmma-ws EXTRA="${E#;}" python3 tools/gpu/tc_conv_probe.py 56x64 28x128 7x512 2>&1 \
      | tee "$OUT/where.txt" ;;
  ncu)  # gpubench profile of every configuration and cuDNN on the 56² and 14² layers (what limits each, saved)
    step profile 56x64 14x256 ;;
  esac
}
if [ "$1" = all ]; then for s in check probe sweep ncu; do step $s; done
elif [ "$1" = halo ]; then step check-halo && step sweep-halo  # the sweep only where the tests passed
elif [ "$1" = halo56 ]; then step check-halo && step sweep-halo56
else step "$@"; fi
