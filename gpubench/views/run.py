"""The run's views: the lab's layouts of a saved run as tables (gpubench/views/tables.py writes them as rich or
Markdown), and the run as CSV.

Nothing here measures anything, so every view of a saved run (`gpubench show`) works without a GPU.
"""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass

from gpubench.measure import hierarchical
from gpubench.analysis import power_state
from gpubench.analysis import roofline
from gpubench.analysis.compare import point_label
from gpubench import ops
from gpubench.results import Point, Run, Status
from gpubench.measure.timing import Pace
from gpubench.views import clocks, modes, power
from gpubench.views import profile as profile_view
from gpubench.views.tables import Cell, Table


# --- grouping -------------------------------------------------------------------------------------------------


def display_name(p: Point) -> str:
    """The variant, and its problem's precision and layout where they are not the lab's: "cublas [BF16 NT]"."""
    return p.variant + (f" [{p.tag}]" if p.tag else "")


def row_key(p: Point) -> tuple[str, ...]:
    """What a table row stands for: the problem's own row key (GEMM: the size; conv: the shape and the stride)."""
    return p.problem.row_key()


def definition(run: Run, op: str):
    """The op a run's points of that name belong to (a project's own op travels in its points' records)."""
    return ops.of(next(p.problem for p in run.points if p.op == op))


def row_headers(run: Run, op: str) -> list[str]:
    """What a table row of the op stands for (GEMM: the size; conv: the size and the stride)."""
    return list(next(p.problem for p in run.points if p.op == op).ROW_HEADERS)


def _ordered(items):
    return list(dict.fromkeys(items))


def best_points(points: list[Point]) -> dict[tuple, Point]:
    """(row, variant) → the fastest passing configuration, or a representative failed/skipped point."""
    best: dict[tuple, Point] = {}
    for p in points:
        k = (row_key(p), display_name(p))
        cur = best.get(k)
        if cur is None or _rank(p) < _rank(cur):
            best[k] = p
    return best


def _rank(p: Point) -> tuple:
    return (list(Status).index(p.status), p.median_ms if p.median_ms is not None else float("inf"))


def _status_cell(p: Point) -> Cell:
    if p.status == Status.SKIPPED:
        return Cell("skipped", "skip")
    if p.status in (Status.ERROR, Status.TIMEOUT):
        return Cell("timed out" if p.status == Status.TIMEOUT else "error", "error")
    return Cell(f"FAIL {p.median_ms:.3f} ms", "fail")


NOISE_THRESHOLD = 0.05  # a point whose IQR/median exceeds the threshold cannot support it: marked "~"


def _noisy(p: Point, threshold: float = NOISE_THRESHOLD) -> bool:
    t = p.timing
    return t is not None and t.rel_iqr > threshold


def _flag(p: Point, threshold: float) -> str:
    """The mark beside a point's time: two modes (views/modes.py), else "~" for a spread over the threshold."""
    return modes.MARK if p.modes is not None else "~" if _noisy(p, threshold) else ""


def _ms_gflops(p: Point, threshold: float) -> Cell:
    if p.status != Status.OK:
        return _status_cell(p)
    flag = _flag(p, threshold)
    return Cell(f"{flag}{p.median_ms:.3f} / {p.gflops:,.0f}", "noisy" if flag else "")


def _baselines(best: dict, run: Run, op: str) -> dict[tuple, Point]:
    """(row, tag) → the library's point in that row and precision (cuBLAS/cuDNN for a GPU run, NumPy for a CPU run): one pass
    over the best points, so that a table's rows look their library up instead of searching (linear in points)."""
    libraries = set(run.baselines(op))
    found: dict[tuple, Point] = {}
    for (row, _), p in best.items():
        if p.variant in libraries and p.status == Status.OK:
            found.setdefault((row, p.tag), p)
    return found


# --- tables -----------------------------------------------------------------------------------------------------


def config_tables(run: Run, op: str, threshold: float = NOISE_THRESHOLD) -> list[Table]:
    """One table per variant: rows are sizes (× strides), columns its block sizes or tile configurations."""
    by_name: dict[str, list[Point]] = {}
    for p in run.points:
        if p.op == op:
            by_name.setdefault(display_name(p), []).append(p)
    tables = []
    for name, mine in by_name.items():
        configs = _ordered(p.config for p in mine)
        if definition(run, op).table.lab_tables and len(configs) == 1:
            continue  # single-configuration conv variants appear in the comparison table only
        headers = row_headers(run, op)
        table = Table(f"{op} · {name} — ms / GFLOPS", headers + [_config_header(c) for c in configs],
                      left=len(headers))
        rows: dict[tuple, dict[str, Point]] = {}
        for p in mine:
            rows.setdefault(row_key(p), {})[p.config] = p
        for row, cells in rows.items():
            fastest = min((p.median_ms for p in cells.values() if p.status == Status.OK), default=None)
            line = [Cell(x) for x in row]
            for c in configs:
                p = cells.get(c)
                cell = _ms_gflops(p, threshold) if p else Cell("")
                if p and p.status == Status.OK and len(configs) > 1 and p.median_ms == fastest:
                    cell.style = "best"
                line.append(cell)
            table.rows.append(line)
        tables.append(table)
    return tables


def _config_header(label: str) -> str:
    if label == "-":
        return "ms / GFLOPS"
    return f"block {label}" if label.isdigit() else label


def summary_table(run: Run, op: str, threshold: float = NOISE_THRESHOLD) -> Table:
    """Each variant's best configuration per size, with its share of the library's speed."""
    points = [p for p in run.points if p.op == op]
    best = best_points(points)
    layout = definition(run, op).table
    lib, rel = layout.library, layout.ratio_header
    rows = row_headers(run, op)
    headers = rows + ["variant", "best config", "ms", "GFLOPS", "GB/s", rel, "rel_err", "details"]
    table = Table(f"{op} · best configuration per variant", headers, left=len(rows) + 2,
                  caption=f"library = the baseline row ({lib} on a GPU, NumPy on the CPU), same precision and layout")
    baselines = _baselines(best, run, op)
    marked = []  # ratios between two power states: (point, ratio, states)
    for (row, name), p in best.items():
        base = baselines.get((row, p.tag))
        line = [Cell(x) for x in row] + [Cell(name), Cell(p.config)]
        if p.status != Status.OK:
            line += [_status_cell(p), Cell(""), Cell(""), Cell(""), Cell(_err(p)), Cell(p.reason)]
        else:
            share, flag = "", _flag(p, threshold)
            if flag:
                line[-1] = Cell(f"{p.config} {flag}", "noisy")
            if base is not None:
                ratio = base.median_ms / p.median_ms
                share = layout.ratio(ratio)
                states = power_state.apart(p, base)
                if states is not None:
                    share += f" {power.MARK}"
                    marked.append((point_label(p), ratio, states))
            line += [Cell(f"{p.median_ms:.3f}"), Cell(f"{p.gflops:,.0f}"), Cell(f"{p.gbps:,.0f}"), Cell(share),
                     Cell(_err(p)), Cell(details(p))]
        table.rows.append(line)
    if marked:
        table.caption += "\n" + power.caption(marked)
    return table


def details(p: Point) -> str:
    """What a row's extra record says worth reading: the cuDNN engine, sub-steps' own shares, TF32."""
    bits, d = [], p.details
    if d.engine is not None:
        bits.append(f"{d.engine} (of {d.plans if d.plans is not None else '?'} plans)")
    for name, ms in d.parts_ms.items():  # sub-steps timed on their own: im2col's unfold, a Winograd filter transform
        if p.median_ms:
            bits.append(f"{name} {ms:.3f} ms ({100 * ms / p.median_ms:.0f}%)")
    if p.tf32:
        bits.append("TF32 tensor cores allowed")
    if p.pace == Pace.SUSTAINED:
        settled = f" after {d.settled_s:.1f} s" if d.settled_s is not None else ""
        bits.append(f"timed {Pace.SUSTAINED}{settled}")
    between = hierarchical.spread(p.process_samples) if len(p.processes) >= 2 else None
    if between is not None:  # --processes K: how far apart its processes' medians lie
        bits.append(f"{len(p.processes)} processes: medians within {100 * between:.1f}%")
    if d.graph:
        bits.append(f"a graph of {d.graph} calls")
    bits.append(clocks.detail(p))
    return "; ".join(b for b in bits if b)


def _err(p: Point) -> str:
    return f"{p.rel_err:.1e}" if p.rel_err is not None else ""


def comparison_table(run: Run, op: str, threshold: float = NOISE_THRESHOLD) -> Table:
    """The lab's conv layout: rows = size × stride, columns = variants (best configuration, ms), fastest bold."""
    points = [p for p in run.points if p.op == op]
    best = best_points(points)
    names = _ordered(display_name(p) for p in points)
    rows = row_headers(run, op)
    table = Table(f"{op} · ms per variant (fastest in bold)", rows + names, left=len(rows))
    for row in _ordered(row_key(p) for p in points):
        cells = {name: best.get((row, name)) for name in names}
        fastest = min((p.median_ms for p in cells.values() if p and p.status == Status.OK), default=None)
        line = [Cell(x) for x in row]
        for name in names:
            p = cells[name]
            if p is None:
                line.append(Cell(""))
            elif p.status != Status.OK:
                line.append(_status_cell(p))
            else:
                flag = _flag(p, threshold)
                style = "best" if p.median_ms == fastest else "noisy" if flag else ""
                line.append(Cell(f"{flag}{p.median_ms:.3f}", style))
        table.rows.append(line)
    return table


def rates_table(run: Run, op: str) -> Table:
    """The lab's second conv table: per variant GFLOPS / GB/s of minimum bytes / speed relative to the library."""
    points = [p for p in run.points if p.op == op]
    best = best_points(points)
    names = _ordered(display_name(p) for p in points)
    baseline = run.baseline(op)
    against = f" / speed vs {definition(run, op).library_name(baseline)}" if baseline else ""
    rows = row_headers(run, op)
    table = Table(f"{op} · GFLOPS / GB/s{against}", rows + names, left=len(rows))
    baselines = _baselines(best, run, op)
    for row in _ordered(row_key(p) for p in points):
        line = [Cell(x) for x in row]
        for name in names:
            p = best.get((row, name))
            if p is None or p.status != Status.OK:
                line.append(_status_cell(p) if p else Cell(""))
                continue
            base = baselines.get((row, p.tag))
            speed = f" / {base.median_ms / p.median_ms:.2f}×" if base else ""
            line.append(Cell(f"{p.gflops:,.0f} / {p.gbps:,.0f}{speed}"))
        table.rows.append(line)
    return table


def hardware_table(run: Run, op: str) -> Table | None:
    """Each variant's best point against the hardware: its SM clock and throttling, power, energy per call and
    GFLOPS per watt (NVML), its share of the roofline bound, and whether it sits at the empty-kernel floor."""
    points = [p for p in best_points([p for p in run.points if p.op == op]).values() if p.status == Status.OK]
    if not any(p.telemetry for p in points) and not roofline.ceilings(run):
        return None
    floor = roofline.floor_ms(run)
    rows = row_headers(run, op)
    table = Table(f"{op} · against the hardware", rows + ["variant", "ms", "SM MHz", "throttled", "W",
                                                                     "mJ / call", "GFLOPS/W", "roofline", "note"],
                  left=len(rows) + 1,
                  caption=_hardware_caption(run, floor))
    for p in points:
        t = p.telemetry or {}
        b = roofline.bound(p, run)
        share = roofline.share(p, run)
        notes = []
        if roofline.near_floor(p, run):
            notes.append(f"≤2× the floor ({floor * 1e3:.1f} µs)")
        if t.get("reasons"):
            notes.append(", ".join(t["reasons"]))
        if p.pace == Pace.SUSTAINED:
            notes.append(f"timed {Pace.SUSTAINED}")
        table.rows.append([Cell(x) for x in row_key(p)] + [
            Cell(display_name(p)), Cell(f"{p.median_ms:.3f}"),
            Cell(_int(t.get("sm_mhz")) + (f" (≥{t['sm_mhz_min']})" if t.get("sm_mhz_min") not in (None, t.get("sm_mhz"))
                                          else "")),
            Cell(f"{t['throttled']}/{p.timing.n + t.get('discarded', 0)}" if "throttled" in t else "",
                 "noisy" if t.get("throttled") else ""),
            Cell(_int(p.kernel_power_w)),
            Cell(f"{t['joules_per_call'] * 1e3:.3g}" if t.get("joules_per_call") else ""),
            Cell(f"{t['gflops_per_w']:,.0f}" if t.get("gflops_per_w") else ""),
            Cell(f"{100 * share:.0f}% {b[1]}" if share else ""),
            Cell("; ".join(notes), "skip" if notes else ""),
        ])
    return table


def _hardware_caption(run: Run, floor: float | None) -> str:
    c = roofline.ceilings(run)
    bits = []
    if c:
        tensor = ", ".join(f"{name} {peak:,}" for name, peak in roofline.peaks(run)[1:])
        bits.append(f"roofline: FP32 {c.get('ffma_gflops', 0):,} GFLOPS (FFMA microbenchmark), {tensor} (the "
                    f"library at a large size), DRAM {c.get('copy_gbps', 0):,} GB/s (copy), L2 "
                    f"{c.get('l2_read_gbps', 0):,} GB/s")
    if floor:
        bits.append(f"floor = an empty kernel, {floor * 1e3:.1f} µs")
    t = run.environment.get("device", {}).get("telemetry") or {}
    if t and t.get("clocks_locked") is False:
        bits.append("SM clocks not locked")
    return "; ".join(bits)


def _titled(table: Table, suffix: str) -> Table:
    table.title += suffix
    return table


def _int(x) -> str:
    return "" if x is None else f"{x:,.0f}"


def replicate_table(run: Run, slow: float | None = None) -> Table | None:
    """A replicate run's GPUs against the node's median: each GPU's geometric-mean deviation, clocks and power."""
    from gpubench.analysis import fleet

    slow = run.settings.get("slow_threshold", fleet.SLOW) if slow is None else slow
    rows = fleet.health(run, slow)
    if not rows:
        return None
    table = Table("GPUs against the node's median (replicate)",
                  ["GPU", "points", "deviation", "SM MHz", "W", "verdict"],
                  caption=f"deviation = geometric mean of the GPU's median / the node's median, over the points every "
                          f"GPU measured; slow = over {slow:.0%}")
    for h in rows:
        table.rows.append([Cell(h.device), Cell(str(h.points)), Cell(f"{(h.deviation - 1) * 100:+.1f}%"),
                           Cell(_int(h.sm_mhz)), Cell(_int(h.power_w)),
                           Cell("SLOW" if h.slow else "ok", "fail" if h.slow else "")])
    return table


def run_tables(run: Run, threshold: float = NOISE_THRESHOLD) -> list[Table]:
    """Every table for a run; points whose spread exceeds `threshold` (IQR/median) are flagged with "~".
    A replicate run (every GPU ran everything) shows its GPUs against each other, then the first GPU's tables."""
    if run.settings.get("replicate"):
        first = next((p.device for p in run.points if p.device), None)
        table = replicate_table(run)
        view = Run(run.backend, run.environment, {}, points=[p for p in run.points if p.device == first],
                   variants=run.variants)
        return ([table] if table else []) + [_titled(t, f" (on {first})") for t in run_tables(view, threshold)]
    tables = []
    for op in run.ops():
        tables += config_tables(run, op, threshold)
        if definition(run, op).table.lab_tables:
            tables += [comparison_table(run, op, threshold), rates_table(run, op)]
        tables.append(summary_table(run, op, threshold))
        hardware = hardware_table(run, op)
        if hardware is not None:
            tables.append(hardware)
    if any(_noisy(p, threshold) and p.modes is None for p in run.points if p.status == Status.OK):
        tables[-1].caption += (f"; ~ marks a spread (IQR/median) over {threshold:.0%}, too wide to support a "
                               f"{threshold:.0%} comparison")
    for extra in (modes.caption(run.points), clocks.caption(run), processes_caption(run.points)):
        if extra and tables:
            tables[-1].caption += ("\n" if tables[-1].caption else "") + extra
    limits = profile_view.limits_table(run)  # only where points were profiled (gpubench profile, --profile)
    return tables + ([limits] if limits else [])


def processes_caption(points: list[Point]) -> str:
    """Where points were measured in several worker processes (--processes K): how far apart their processes'
    medians lay, the median point's and the widest (the spread compare's intervals come from); "" where none was."""
    spreads = sorted(((hierarchical.spread(p.process_samples), p) for p in points
                      if p.status == Status.OK and len(p.processes) >= 2), key=lambda x: x[0])
    if not spreads:
        return ""
    k = sorted({len(p.processes) for _, p in spreads})
    widest, p = spreads[-1]
    return (f"{len(spreads)} point(s) measured in {'/'.join(map(str, k))} processes: their processes' medians within "
            f"{100 * spreads[len(spreads) // 2][0]:.1f}% of each other at the median point, {100 * widest:.1f}% at "
            f"the widest ({point_label(p)})")


# --- the run as CSV ----------------------------------------------------------------------------------------

MEASURE_COLUMNS = ["block", "tf32", "median_ms", "min_ms", "iqr_ms", "reps", "fast_mode_ms", "slow_mode_ms",
                   "fast_mode_share", "gflops", "gbps", "rel_err", "tolerance", "status", "reason", "device"]


def csv_columns(run: Run) -> list[str]:
    """The op and variant, every built-in op's problem keys (and a project's own ops' present in the run), then
    the measurement's columns."""
    keys = [k for op in ops.builtin() for k in op.shape.KEYS]
    keys += [k for p in run.points for k in p.problem.record() if k != "declaration"]
    return list(dict.fromkeys(["op", "variant", *keys, *MEASURE_COLUMNS]))


def to_csv(run: Run) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, csv_columns(run), lineterminator="\n")
    writer.writeheader()
    for p in run.points:
        t, m = p.timing, p.modes
        writer.writerow({
            "op": p.op, "variant": p.variant,
            **{k: v for k, v in p.problem.record().items() if k != "declaration"},
            "block": p.config, "tf32": int(p.tf32),
            "median_ms": _num(t.median if t else None), "min_ms": _num(t.min if t else None),
            "iqr_ms": _num(t.iqr if t else None), "reps": t.n if t else 0,
            "fast_mode_ms": _num(m and m.fast_ms), "slow_mode_ms": _num(m and m.slow_ms),
            "fast_mode_share": _num(m and m.fast_share),
            "gflops": _num(p.gflops), "gbps": _num(p.gbps), "rel_err": _num(p.rel_err), "tolerance": _num(p.tolerance),
            "status": p.status, "reason": p.reason, "device": run.device,
        })
    return buf.getvalue()


def _num(x) -> str:
    return "" if x is None else f"{x:.6g}"
