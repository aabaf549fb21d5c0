# The A/A test and a back-to-back lab pair for verdicts at a few microseconds (docs/measuring/processes.md), on one
# GPU in about 7 minutes. Run from the repo root on the GPU machine, .devwheels carried:
#     bash tools/gpu/stability.sh            # steps aa and pair (the default)
#     bash tools/gpu/stability.sh default    # only the plain lab pair, cold then warm (~3 minutes)
# Steps:
#   aa       `gpubench stability` on the lab's conv-small section (tools/gpu/lab-small.toml, 132 points of 7-16 µs)
#            with R = 10 fresh processes: the false-verdict rate per duration class, the smallest change decided
#            with 95% power, a suggested threshold; then, from the same ten runs, pairs of them taken as runs of two
#            processes (1+2, 3+4, ...: processes one after another, not interleaved) compared as compare would
#   pair     two lab runs back to back, cold (an empty kernel cache) then warm, with the conv-small section measured
#            in two interleaved processes (tools/gpu/lab-processes.toml), compared as measured, and compared with
#            each run cut to its first process (a one-process run of the same points: the default settings' verdicts)
#   default  two plain lab runs (configs/lab.toml), cold then warm, compared
#   places   the A/A series twice, R = 6 each: each call on its own buffers (tools/gpu/lab-small-places1.toml), then on
#            eight sets of them (lab-small.toml, the default): does the spread narrow the runs' spread? (~5 minutes)
# Everything printed goes to $OUT/summary.txt too; runs are saved under $OUT (at most 7 files).
steps=${1:-aa,pair}
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/lead-site .devwheels/*.whl 2>/dev/null
export PYTHONUNBUFFERED=1 PYTHONPATH=$PWD:/tmp/lead-site GPUBENCH_COMMIT=$(cat .commit 2>/dev/null || git rev-parse --short HEAD 2>/dev/null || echo unknown)
say() { echo "$@" | tee -a $OUT/summary.txt; }
gb() { python3 -m gpubench "$@" >> $OUT/log.txt 2>&1; }

counts() {  # counts BASE NEW [first]: compare's verdict counts (first: each run cut to its first process)
python3 - "$@" <<'EOF'
import sys
from dataclasses import replace
from gpubench import results
from gpubench.analysis import compare
from gpubench.analysis.shift import shared_shift

base, new = (results.load(p) for p in sys.argv[1:3])
if sys.argv[3:] == ["first"]:
    for run in (base, new):
        run.points = [replace(p, samples_ms=p.process_samples[0], processes=()) if len(p.processes) > 1 else p
                      for p in run.points]
r = compare.compare(base, new)
short = [c for c in r.changes if c.base.median_ms < 0.02]
print(", ".join(f"{r.count(v)} {v}" for v in compare.Verdict), f"of {len(r.changes)};",
      f"inconclusive {100 * r.count(compare.Verdict.INCONCLUSIVE) / len(r.changes):.1f}%;",
      f"under 20 us: {sum(c.verdict != 'same' for c in short)} of {len(short)} not same;",
      f"intervals from processes: {sum(c.between for c in r.changes)}; wall {base.settings.get('wall_s')} s ->",
      f"{new.settings.get('wall_s')} s")
shift = shared_shift(r.changes)
if shift is not None:
    print(f"  shared shift: {shift.moved} of {shift.short} calls under 20 us {shift.direction}, median "
          f"{shift.per_call_us:+.2f} us a call ({shift.share:+.1%})")
EOF
}

lab_pair() {  # lab_pair SUITE NAME: cold (a fresh kernel cache) then warm, each timed
  for kind in cold warm; do
    [ $kind = cold ] && export GPUBENCH_CACHE=/tmp/gb-$2-$RANDOM
    s=$SECONDS; gb run $1 -o $OUT/$2-$kind.json.gz; rc=$?
    say "$2 $kind: rc=$rc, $(( SECONDS - s )) s"
  done
}

if [[ $steps == *places* ]]; then
  for suite in lab-small-places1 lab-small; do
    s=$SECONDS
    gb stability tools/gpu/$suite.toml -R 6 -o $OUT/stability-$suite.json.gz
    say "== places: gpubench stability $suite -R 6: rc=$?, $(( SECONDS - s )) s"
    python3 -c "
import sys
from gpubench import results
from gpubench.analysis import stability
from gpubench.views import stability as view
from gpubench.views.tables import to_markdown
print(to_markdown(view.classes_table(stability.analyse(results.load(sys.argv[1])))))" $OUT/stability-$suite.json.gz | tee -a $OUT/summary.txt
  done
fi

if [[ $steps == *aa* ]]; then
  s=$SECONDS
  gb stability tools/gpu/lab-small.toml -R 10 -o $OUT/stability-lab-small.json.gz
  say "== aa: gpubench stability lab-small -R 10: rc=$?, $(( SECONDS - s )) s"
  python3 - $OUT/stability-lab-small.json.gz <<'EOF' | tee -a $OUT/summary.txt
import sys
from itertools import combinations
from gpubench import results
from gpubench.analysis import compare, stability
from gpubench.results import Run
from gpubench.results.pooled import pooled
from gpubench.views import stability as view
from gpubench.views.tables import to_markdown

run = results.load(sys.argv[1])
print(to_markdown(view.classes_table(stability.analyse(run))))
runs = stability.split(run)
twos = []
for a, b in zip(runs[0::2], runs[1::2]):
    second = {p.key(): p for p in b.points}
    twos.append(Run(a.backend, a.environment, {}, points=[pooled([p, second[p.key()]]) for p in a.points]))
total = {v: 0 for v in compare.Verdict}
for x, y in combinations(twos, 2):
    r = compare.compare(x, y)
    for v in total:
        total[v] += r.count(v)
n = sum(total.values())
print(f"runs 1+2, 3+4, ... as {len(twos)} runs of two processes, {len(twos) * (len(twos) - 1) // 2} pairs:",
      ", ".join(f"{k} {v} ({100 * v / max(1, n):.1f}%)" for k, v in total.items()))
EOF
fi

if [[ $steps == *pair* ]]; then
  say "== pair: the lab with conv-small in two processes (tools/gpu/lab-processes.toml), cold then warm"
  lab_pair tools/gpu/lab-processes.toml lab-k2
  say "as measured:           $(counts $OUT/lab-k2-cold.json.gz $OUT/lab-k2-warm.json.gz)"
  say "first process alone:   $(counts $OUT/lab-k2-cold.json.gz $OUT/lab-k2-warm.json.gz first)"
fi

if [[ $steps == *default* ]]; then
  say "== default: configs/lab.toml, cold then warm"
  lab_pair lab lab
  say "default settings:      $(counts $OUT/lab-cold.json.gz $OUT/lab-warm.json.gz)"
fi
say "total $SECONDS s"
