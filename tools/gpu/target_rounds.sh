#!/bin/bash
# The rounds of the INT8/epilogue and attention targets, by the rule of docs/evidence/int8-attention-rounds.md, and of
# the grouped-GEMM targets (tools/gpu/grouped-explore.toml), by docs/evidence/grouped-rounds.md.
# Two steps, each one device call, from the repository root ($OUT set by the caller):
#   bash tools/gpu/target_rounds.sh pass0 tools/gpu/targets-explore.toml   # every configuration once; writes
#        $OUT/pass0.json.gz, $OUT/rounds.toml (the suite with each row's fastest configuration fixed) and
#        $OUT/fixed.txt: commit rounds.toml and fixed.txt under tools/gpu/rounds/ before any round runs
#   bash tools/gpu/target_rounds.sh rounds tools/gpu/rounds/targets.toml 5 [FIRST]   # rounds FIRST.. (default 1),
#        each its own process, back to back: $OUT/rounds.tgz holds round-K.json.gz and its log. With
#        SECONDS_LEFT=N set, a round is not started unless N seconds minus those spent still hold one more round as
#        long as the longest so far, or ROUND_GUESS before any has run (the call's ten minutes); the next call
#        starts at the first round not run.
# Then, here: python3 tools/gpu/judge_rounds.py PASS0 round-*.json.gz > the verdicts.
set -u
step=${1:?pass0 or rounds}
case $step in
  pass0)
    suite=${2:?the suite of pass 0}
    python3 -m gpubench run "$suite" -o "$OUT/pass0.json.gz" > "$OUT/pass0.log" 2>&1
    echo "pass 0: exit $?, $(tail -1 "$OUT/pass0.log")"
    # the step's exit is the fixing's: no rounds' suite is written where it fails
    python3 tools/gpu/fix_configs.py "$suite" "$OUT/pass0.json.gz" "$OUT/rounds.toml" | tee "$OUT/fixed.txt"
    exit "${PIPESTATUS[0]}" ;;
  rounds)
    suite=${2:?the rounds suite} n=${3:?how many rounds} first=${4:-1}
    longest=${ROUND_GUESS:-0}  # what a round is taken to need before one has run (seconds)
    for r in $(seq "$first" $((first + n - 1))); do
      if [ -n "${SECONDS_LEFT:-}" ] && [ $((SECONDS_LEFT - SECONDS)) -lt $((longest + 10)) ]; then
        echo "round $r not started: $((SECONDS_LEFT - SECONDS)) s left, a round taken to need up to $longest s"; break
      fi
      start=$SECONDS
      python3 -m gpubench run "$suite" -o "$OUT/round-$r.json.gz" > "$OUT/round-$r.log" 2>&1
      echo "round $r: exit $? ($(date -u +%T), $((SECONDS - start)) s): $(tail -1 "$OUT/round-$r.log")"
      longest=$(( SECONDS - start > longest ? SECONDS - start : longest ))
    done
    (cd "$OUT" && tar czf rounds.tgz round-* && rm -f round-*)
    # the step's exit: 0 only where every round asked for ran and saved its run
    for r in $(seq "$first" $((first + n - 1))); do
      tar tzf "$OUT/rounds.tgz" "round-$r.json.gz" > /dev/null 2>&1 || exit 1
    done ;;
  *) echo "unknown step $step: pass0 or rounds" >&2; exit 2 ;;
esac
