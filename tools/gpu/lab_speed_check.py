"""What the lab-speed evidence checks in two saved runs of the same suite: every ok point carries energy and an SM
clock, where each point's energy came from, and how far the two runs' energies per call are apart (and, for
windows, their two factors: the power read and the GPU time per call in the window).

    python3 tools/gpu/lab_speed_check.py A.json B.json
"""

from __future__ import annotations

import collections
import json
import statistics
import sys


def key(p: dict) -> tuple:
    return p["op"], p["variant"], p["config"], json.dumps(p["problem"], sort_keys=True)


def main(a_path: str, b_path: str) -> None:
    runs = [json.load(open(path)) for path in (a_path, b_path)]
    for path, run in zip((a_path, b_path), runs):
        ok = [p for p in run["points"] if p["status"] == "ok"]
        tel = [p.get("telemetry") or {} for p in ok]
        print(f"{path}: {len(run['points'])} points, {len(ok)} ok, {sum(1 for t in tel if t.get('joules_per_call'))} "
              f"with energy, {sum(1 for t in tel if t.get('sm_mhz'))} with SM clock, sweep {run['settings'].get('wall_s')} s; "
              f"energy from {dict(collections.Counter(t.get('energy_from') for t in tel))}")
    b = {key(p): p for p in runs[1]["points"]}
    ratios = collections.defaultdict(list)
    parts = collections.defaultdict(list)  # a window's energy per call is its power times its GPU time per call
    for p in runs[0]["points"]:
        q = b.get(key(p))
        ja, jb = ((x or {}).get("telemetry") or {} for x in (p, q))
        if q and ja.get("joules_per_call") and jb.get("joules_per_call"):
            ratios[ja.get("energy_from")].append(jb["joules_per_call"] / ja["joules_per_call"])
            if ja.get("energy_from") == jb.get("energy_from") == "instant power":
                parts["window power"].append(jb["window_power_w"] / ja["window_power_w"])
                parts["window time per call"].append(jb["joules_per_call"] / jb["window_power_w"]
                                                     / (ja["joules_per_call"] / ja["window_power_w"]))
    for what, r in [*((f"energy per call, B/A, from {source}", r) for source, r in ratios.items()),
                    *((f"{name}, B/A, both from instant power", r) for name, r in parts.items())]:
        r.sort()
        qs = [round(r[int(f * (len(r) - 1))], 3) for f in (0.05, 0.25, 0.5, 0.75, 0.95)]
        print(f"{what}: {len(r)} points, 5/25/50/75/95% {qs}, within 10%: {sum(1 for x in r if 0.9 <= x <= 1.1)}")
    print(f"energy per call, B/A, median over every point: {statistics.median(r for rs in ratios.values() for r in rs):.3f}")


if __name__ == "__main__":
    main(*sys.argv[1:3])
