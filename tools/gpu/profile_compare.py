"""`gpubench profile`'s saved metrics beside ncu run by hand on the same calls (tools/gpu/profile.sh): per point and
metric, gpubench's value, ncu's, and their difference in %, then how many agree within 2%.

    python3 tools/gpu/profile_compare.py profile-gemm.json ncu-raw-gemm.csv [profile-conv.json ncu-raw-conv.csv ...]

The by-hand file holds one block per call, each headed "# call VARIANT LABEL" and followed by what `ncu --csv
--page raw` printed for it (its ==PROF== lines included). A block's launches are read from ncu's raw CSV: the header
row names the metrics, the row after it their units, then a row per launch. gpubench's rule is applied to them as
written in gpubench/measure/ncu.py (the longest launch's metrics; the additive ones summed over the call), but the
reading is this file's own, so that gpubench's parser is checked, not reused.
"""

import csv
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
    agree = total = 0
    for saved, raw in zip(pairs[::2], pairs[1::2]):
        hand = blocks(raw)
        for p in results.load(saved).points:
            profile = p.details.profile
            calls = hand.get((p.variant, p.config))
            if profile is None or calls is None:
                continue
            if not profile.taken or not calls:
                print(f"== {p.variant} {p.config} {p.problem.full_label}: gpubench: {profile.reason or 'profiled'}; "
                      f"by hand: {len(calls)} launch(es)")
                continue
            kernel, metrics, totals = by_hand(calls)
            print(f"== {p.variant} {p.config} {p.problem.full_label}: gpubench {profile.kernel} "
                  f"({profile.launches} launches), by hand {kernel} ({len(calls)} launches)")
            for source, mine, theirs in (("", profile.metrics, metrics), ("total ", profile.totals, totals)):
                for key in sorted(set(mine) & set(theirs)):
                    a, b = mine[key], theirs[key]
                    diff = 0.0 if a == b else abs(a - b) / max(abs(a), abs(b)) * 100
                    total += 1
                    agree += diff <= AGREE
                    print(f"   {source + key:32} {a:16,.2f} {b:16,.2f} {diff:6.2f}%{'' if diff <= AGREE else '  <-'}")
    print(f"{agree} of {total} metrics agree within {AGREE:g}%")
    return 0 if total and agree == total else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
