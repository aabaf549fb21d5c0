"""Condense an ncu text report of many launches: one block per distinct launch shape (kernel, grid, block, cluster
size and, where collected, the bytes delivered to the SMs, which tell problem sizes apart), the metrics of its
first launches, then the largest sub-metrics of any breakdown.

    python3 tools/ncu_digest.py report.txt [launches per shape, default 1]
"""

import re
import sys


def launches(text):
    """(header, {metric: value}) per profiled launch, in order."""
    head = re.compile(r"^  (\S+) \((\d+), (\d+), (\d+)\)x\((\d+), (\d+), (\d+)\), Context")
    row = re.compile(r"^    ([A-Za-z_][\w.:]*(?: [\w()/.%-]+)*?)\s{2,}(?:([\w/%-]+)\s+)?([\d,.]+)\s*$")
    out = []
    for line in text.splitlines():
        m = head.match(line)
        if m:
            out.append((f"{m[1][:60]} grid {m[2]} block {m[5]}", {}))
        elif out:
            r = row.match(line)
            if r:
                out[-1][1][r[1].strip()] = r[3]
    return out


def main(path, per_shape=1):
    seen = {}
    for header, metrics in launches(open(path, errors="replace").read()):
        key = f"{header} cluster {metrics.get('Cluster Size', '?')}"
        if "l1tex__m_xbar2l1tex_read_bytes.sum" in metrics:
            key += f" xbar {metrics['l1tex__m_xbar2l1tex_read_bytes.sum']}"
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > per_shape:
            continue
        print(f"== {key}")
        shown = [k for k in metrics if not k.startswith("lts__") or "sectors" in k]
        parts = sorted(((float(v.replace(",", "")), k) for k, v in metrics.items()
                        if k.startswith("lts__") and "pct" in k), reverse=True)[:6]
        for k in shown:
            if k in ("Block Size", "Grid Size", "Registers Per Thread", "Dynamic Shared Memory Per Block") or \
                    "__" in k:
                print(f"   {k:58} {metrics[k]}")
        for v, k in parts:
            print(f"   {k:58} {v:.1f}")


if __name__ == "__main__":
    main(sys.argv[1], *(int(a) for a in sys.argv[2:]))
