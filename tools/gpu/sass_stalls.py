"""Where each kernel's warps wait, from ncu's source page (`ncu -i REP --page source --csv --print-source sass`, as
tools/gpu/fp8.sh stalls writes it): the warp-state samples of every kernel summed by kind of instruction, then its
instructions with the most samples and their leading stall reasons.

    python3 tools/gpu/sass_stalls.py stalls-4096-sass.csv [--top 20]

Kinds: the tensor cores' issue (HGMMA/QGMMA), the wait for a warpgroup's own wgmmas (WARPGROUP.DEPBAR), an
mbarrier wait (a try_wait's sample falls on it or on the branch after it; NANOSLEEP loops), the float32 adds (FADD),
barriers (BAR, the cluster's UCGABAR at the exit), everything else. A sample whose reason ncu does not break out
(the first wgmma of a slot, mostly) counts as "unlisted".
"""

import collections
import csv
import sys


def kernels(path: str):
    """(name, header, rows) per kernel of the source page."""
    name, header, rows = None, None, []
    for r in csv.reader(open(path)):
        if r and r[0] == "Kernel Name":
            if name:
                yield name, header, rows
            name, header, rows = r[1], None, []
        elif r and r[0] == "Address":
            header = r
        elif r and header:
            rows.append(r)
    if name:
        yield name, header, rows


def kind(sass: str, previous: str) -> str:
    op = sass.split()[1] if sass.startswith("@") else sass.split()[0]
    if "GMMA" in op:
        return "wgmma issue"
    if op.startswith("WARPGROUP.DEPBAR"):
        return "wgmma wait"
    if "TRYWAIT" in sass or op.startswith("NANOSLEEP") or (op == "BRA" and "TRYWAIT" in previous):
        return "mbarrier wait"
    if op == "FADD":
        return "float32 adds"
    if op.startswith(("BAR", "UCGABAR")):
        return "barrier"
    return "other"


def main(path: str, top: int) -> None:
    for name, h, rows in kernels(path):
        ix = {c: i for i, c in enumerate(h)}
        reasons = [c for c in h if c.startswith("stall_") and "Not Issued" not in c]
        total = sum(int(r[ix["Warp Stall Sampling (All Samples)"]] or 0) for r in rows)
        by_kind, listed = collections.Counter(), collections.Counter()
        lines, previous = [], ""
        for r in rows:
            samples = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
            sass = r[ix["Source"]].strip()
            per = {c[6:]: int(r[ix[c]] or 0) for c in reasons}
            listed.update(per)
            listed["unlisted"] += samples - sum(per.values())
            by_kind[kind(sass, previous)] += samples
            lines.append((samples, r[ix["Address"]][-5:], int(r[ix["Instructions Executed"]] or 0), sass, per))
            previous = sass
        print(f"== {name}: {total} samples, {len(rows)} instructions")
        print("   by kind: " + ", ".join(f"{k} {v / total:.1%}" for k, v in by_kind.most_common()))
        print("   by reason: " + ", ".join(f"{k} {v / total:.1%}" for k, v in listed.most_common(8)))
        for samples, addr, executed, sass, per in sorted(lines, reverse=True)[:top]:
            lead = " ".join(f"{k}={v}" for k, v in sorted(per.items(), key=lambda x: -x[1])[:2] if v)
            print(f"   {samples:6d} {samples / total:6.1%} {addr} x{executed:<8d} {sass[:58]:58s} {lead}")


if __name__ == "__main__":
    main(sys.argv[1], int(sys.argv[sys.argv.index("--top") + 1]) if "--top" in sys.argv else 20)
