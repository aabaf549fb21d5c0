"""`gpubench profile`'s saved metrics beside ncu run by hand on the same calls (tools/gpu/profile.sh): per point and
metric, gpubench's value, ncu's, and their difference in %, then how many agree within 2%.

    python3 tools/gpu/profile_compare.py profile-gemm.json ncu-raw-gemm.csv [profile-conv.json ncu-raw-conv.csv ...]
    python3 tools/gpu/profile_compare.py profile-conv.json raw-1.csv+raw-2.csv+raw-3.csv   # ncu by hand, repeated

Where ncu ran by hand more than once on the same calls (files joined by +), gpubench's value is set beside the
median of those runs, and ncu's own spread (the runs' range, % of their median) is printed too: a metric agrees
when it is within 2% of that median, or within ncu's own spread where ncu does not agree with itself within 2%
(tools/gpu/profile_spread.sh; on a 45 µs convolution, L2 and DRAM-write bytes move by 3-30% between ncu runs).
DRAM bytes, read or written, are compared as a share of the call's DRAM traffic (both directions), since a call
whose output stays in L2 writes almost nothing and its few written bytes move most between runs.

The by-hand file holds one block per call, each headed "# call VARIANT LABEL" and followed by what `ncu --csv
--page raw` printed for it (its ==PROF== lines included). A block's launches are read from ncu's raw CSV: the header
row names the metrics, the row after it their units, then a row per launch. gpubench's rule is applied to them as
written in gpubench/measure/ncu.py (the longest launch's metrics; the additive ones summed over the call), but the
reading is this file's own, so that gpubench's parser is checked, not reused.
"""

import csv
import statistics
import sys

from gpubench import results
from gpubench.measure import ncu

SCALE = {"byte": 1, "Kbyte": 1e3, "Mbyte": 1e6, "Gbyte": 1e9, "nsecond": 1, "usecond": 1e3, "msecond": 1e6,
         "ns": 1, "us": 1e3, "ms": 1e6}
AGREE = 2.0  # %


def blocks(path: str) -> dict[tuple[str, str], list[dict]]:
    """(variant, label) -> the call's launches, each {ncu metric: value in base units}."""
    out, key, lines = {}, None, []

    def close():
        if key is not None:
            out[key] = launches(lines)

    for line in open(path, errors="replace"):
        if line.startswith("# call "):
            close()
            variant, _, label = line[len("# call "):].strip().partition(" ")
            key, lines = (variant, label), []
        elif not line.startswith("=="):
            lines.append(line)
    close()
    return out


def launches(lines: list[str]) -> list[dict]:
    rows = [r for r in csv.reader(lines) if r]
    head = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if head is None:
        return []
    names = rows[head]
    after = rows[head + 1:]
    units = after[0] if after and not after[0][0].strip().isdigit() else []  # ncu's units row, where printed
    found = []
    for r in after[1 if units else 0:]:
        if not r[0].strip().isdigit():
            continue
        values = {"Kernel Name": r[names.index("Kernel Name")]}
        for i, name in enumerate(names):
            if "__" in name and i < len(r):
                try:
                    values[name] = float(r[i].replace(",", "")) * SCALE.get(units[i] if i < len(units) else "", 1)
                except ValueError:
                    pass
        found.append(values)
    return found


def by_hand(calls: list[dict]) -> tuple[str, dict, dict]:
    """(kernel, the longest launch's metrics by key, the additive ones summed) by gpubench's rule."""
    top = max(calls, key=lambda la: la.get("gpu__time_duration.sum", 0.0))
    metrics = {m.key: top[m.ncu] for m in ncu.METRICS if m.ncu in top and not m.additive}
    metrics["duration_ns"] = top.get("gpu__time_duration.sum", 0.0)
    totals = {m.key: sum(la.get(m.ncu, 0.0) for la in calls) for m in ncu.METRICS if m.additive and m.ncu in top}
    return top["Kernel Name"], metrics, totals


def main(pairs: list[str]) -> int:
    agree = spread_only = total = 0
    for saved, raws in zip(pairs[::2], pairs[1::2]):
        hands = [blocks(raw) for raw in raws.split("+")]
        for p in results.load(saved).points:
            profile = p.details.profile
            runs = [h.get((p.variant, p.config)) for h in hands]
            if profile is None or any(calls is None for calls in runs):
                continue
            if not profile.taken or not all(runs):
                print(f"== {p.variant} {p.config} {p.problem.full_label}: gpubench: {profile.reason or 'profiled'}; "
                      f"by hand: {[len(calls or []) for calls in runs]} launch(es)")
                continue
            read = [by_hand(calls) for calls in runs]
            print(f"== {p.variant} {p.config} {p.problem.full_label}: gpubench {profile.kernel} "
                  f"({profile.launches} launches), by hand {read[0][0]} ({len(runs[0])} launches, {len(runs)} runs)")
            for source, mine, index in (("", profile.metrics, 1), ("total ", profile.totals, 2)):
                for key in sorted(set(mine).intersection(*(r[index] for r in read))):
                    a, values = mine[key], sorted(r[index][key] for r in read)
                    b = statistics.median(values)
                    scale = dram_traffic(profile.totals, read) if key in DRAM_BYTES else None
                    diff = percent(a, b, scale)
                    own = percent(values[-1], values[0], scale) if len(values) > 1 else 0.0
                    total += 1
                    mark = ""
                    if diff <= AGREE:
                        agree += 1
                    elif diff <= own:
                        spread_only += 1
                        mark = "  (within ncu's own spread)"
                    else:
                        mark = "  <-"
                    print(f"   {source + key:32} {a:16,.2f} {b:16,.2f} {diff:6.2f}%  ncu±{own:5.2f}%{mark}")
    print(f"{agree} of {total} metrics agree within {AGREE:g}%" +
          (f"; {spread_only} more within ncu's own spread between its by-hand runs" if spread_only else "") +
          f"; {total - agree - spread_only} outside both")
    return 0 if total and agree + spread_only == total else 1


DRAM_BYTES = ("dram_read_bytes", "dram_write_bytes")


def dram_traffic(totals: dict, read: list) -> float | None:
    """The call's DRAM bytes, read and written (the larger of gpubench's and ncu's by-hand runs'): what a difference
    in either direction's bytes is measured against. A 45 µs convolution reads 14 MB and writes 0.2 MB (its output
    stays in the 50 MB L2), and the written bytes alone move by 20% between ncu runs."""
    sums = [sum(t.get(k, 0.0) for k in DRAM_BYTES) for t in (totals, *(r[2] for r in read))]
    return max(sums) or None


def percent(a: float, b: float, scale: float | None = None) -> float:
    """|a - b| as a percentage of the larger, or of `scale` where given (0 where both are 0)."""
    return 0.0 if a == b else abs(a - b) / (scale or max(abs(a), abs(b))) * 100


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
