"""Plots of a saved run: GFLOPS against size for GEMM, GB/s against size for conv (with the device's measured
copy bandwidth as the ceiling). One line per variant at its best configuration for each size; the band is the
spread of the samples (the rate at the first and third quartiles of the time)."""

from __future__ import annotations

import os
import warnings
from contextlib import contextmanager
from pathlib import Path

from gpubench.core.errors import GpubenchError
from gpubench.views.run import best_points, definition, display_name
from gpubench.results import Run, Status

FORMATS = (".png", ".svg", ".pdf")  # what `gpubench plot -o` writes (checked before anything is drawn)


def _panel(p) -> str | None:
    """Which panel of its op a point goes in: one per series of problems that differ only in size (square GEMMs;
    a conv layer at one stride and channel count), so no line joins two different layers."""
    return p.problem.series


def _series(run: Run, op: str, panel: str | None):
    # problems outside any series (plot_x None: not square) are not drawn against size
    points = [p for p in run.points if p.op == op and p.status == Status.OK and panel is not None
              and _panel(p) == panel]
    series: dict[str, list] = {}
    for (_, name), p in best_points(points).items():
        series.setdefault(name, []).append(p)
    return {name: sorted(ps, key=lambda p: p.problem.plot_x) for name, ps in series.items()}


def by_flops(run: Run, op: str) -> bool:
    """What the op's panel plots (its op says): GFLOPS for compute-bound GEMM, GB/s for the lab's memory-bound
    convolutions."""
    return definition(run, op).by_flops


def axis(run: Run, op: str) -> str:
    """The x axis of the op's size plots."""
    return next(p.problem for p in run.points if p.op == op).PLOT_AXIS


def _rate(p, ms: float, flops: bool) -> float:
    return (p.flops if flops else p.min_bytes) / ms / 1e6  # GFLOPS or GB/s


def _pyplot():
    # gpubench draws files with Agg whatever MPLBACKEND says (matplotlib's import raises on a value it does not know)
    backend = os.environ.pop("MPLBACKEND", None)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise GpubenchError("matplotlib is not installed: pip install 'gpubench[plot]'") from None
    finally:
        if backend is not None:
            os.environ["MPLBACKEND"] = backend
    return plt


@contextmanager
def _without_glyph_warnings():
    """A name the font has no glyph for (an emoji in a variant's name) is drawn as a box, not warned about on
    stderr (four lines; a traceback under PYTHONWARNINGS=error)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Glyph .* missing from", category=UserWarning)
        yield


def _save(fig, plt, output) -> Path:
    """Write the image beside its name and rename it into place: a full disk never leaves half an image."""
    output = Path(output)
    tmp = output.with_name(f".{output.stem}.{os.getpid()}.tmp{output.suffix}")
    try:
        output.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(tmp, dpi=110)
        os.replace(tmp, output)
    except (OSError, ValueError) as e:
        tmp.unlink(missing_ok=True)
        raise GpubenchError(f"cannot write the plot to {output} ({e})") from None
    finally:
        plt.close(fig)
    return output


@_without_glyph_warnings()
def roofline_plot(run: Run, output: str | Path) -> Path:
    """Every ok point at its arithmetic intensity (FLOPs per minimum byte) and GFLOPS, under the roofs measured
    on the run's GPU: DRAM and L2 bandwidth slopes, the compute peak of each precision it measured."""
    from gpubench.analysis import roofline

    c = roofline.ceilings(run)
    if not c:
        raise GpubenchError("the run records no roofline ceilings (runs on a GPU with gpubench 0.2 or later do)")
    plt = _pyplot()
    points = [p for p in best_points([p for p in run.points if p.status == Status.OK]).values() if p.min_bytes]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    intensities = [roofline.intensity(p) for p in points] or [1.0]
    x = [min(intensities + [0.1]) / 2, max(intensities + [1e3]) * 2]
    for (name, peak), style in zip(roofline.peaks(run), ["-", ":", "--", "-.", (0, (1, 3)), (0, (5, 5))]):
        for bw, bw_name in ((c.get("copy_gbps"), "DRAM"), (c.get("l2_read_gbps"), "L2")):
            if peak and bw:
                knee = peak / bw
                ax.plot([x[0], knee, x[1]], [x[0] * bw, peak, peak], style, color="gray" if bw_name == "DRAM" else
                        "silver", linewidth=1)
        if peak:
            ax.annotate(f"{name} {peak:,.0f} GFLOPS", (x[1], peak), ha="right", va="bottom", fontsize=8)
    for name in dict.fromkeys(display_name(p) for p in points):
        mine = [p for p in points if display_name(p) == name]
        ax.scatter([roofline.intensity(p) for p in mine], [p.gflops for p in mine], s=14, label=name)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(roofline.intensity_label(points))
    ax.set_ylabel("GFLOPS")
    ax.set_title(f"roofline, {run.device} (DRAM {c.get('copy_gbps', 0):,} GB/s, L2 {c.get('l2_read_gbps', 0):,} GB/s)")
    ax.grid(True, which="both", alpha=0.2)
    ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    return _save(fig, plt, output)


@_without_glyph_warnings()
def plot(run: Run, output: str | Path) -> Path:
    plt = _pyplot()
    panels = [(op, s) for op in run.ops() for s in sorted({_panel(p) for p in run.points if p.op == op} - {None})]
    panels = [(op, s) for op, s in panels if _series(run, op, s)]
    if not panels:
        raise GpubenchError("the run has no measured square problems to plot")
    cols = min(2, len(panels))
    rows = -(-len(panels) // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(6.5 * cols, 4.6 * rows), squeeze=False)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    copy = run.environment.get("device", {}).get("copy_gbps")
    for ax, (op, series) in zip(axes.flat, panels):
        flops = by_flops(run, op)
        for name, ps in _series(run, op, series).items():
            x = [p.problem.plot_x for p in ps]
            mid = [_rate(p, p.timing.median, flops) for p in ps]
            lo = [_rate(p, p.timing.q3, flops) for p in ps]
            hi = [_rate(p, p.timing.q1, flops) for p in ps]
            (line,) = ax.plot(x, mid, marker="o", label=name)
            ax.fill_between(x, lo, hi, color=line.get_color(), alpha=0.2)
        if not flops and copy:
            ax.axhline(copy, color="gray", linestyle="--", label=f"device copy {copy:,.0f} GB/s")
        ax.set_xscale("log", base=2)
        sizes = sorted({p.problem.plot_x for ps in _series(run, op, series).values() for p in ps})
        ax.set_xticks(sizes, [str(s) for s in sizes])
        ax.minorticks_off()
        ax.set_xlabel(axis(run, op))
        ax.set_ylabel("GFLOPS" if flops else "GB/s of minimum bytes")
        ax.set_title(f"{op} {series} on {run.device}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    return _save(fig, plt, output)
