"""The command line's options: click declarations shared by the commands (their defaults read from
gpubench/planning/plan.py's DEFAULTS, the one home of defaults), and the parsers of their comma-separated values (each bad
value becomes one line saying what is allowed)."""

from __future__ import annotations

import click

from gpubench.core.errors import GpubenchError
from gpubench.planning.plan import DEFAULTS
from gpubench.ops.problems import ARRAYS, DIMS, Op
from gpubench.specs.parse import MAX_BLOCK_SIZE
from gpubench.measure.timing import Pace


def group(opts):
    def wrap(f):
        for opt in reversed(opts):
            f = opt(f)
        return f

    return wrap


CONFIG = click.option("--config", "config", default=None, metavar="FILE",
                      help="Your project's gpubench.toml (default: found from here upwards, as pytest does).")
OUTPUT = [
    click.option("-o", "--output", default=None,
                 help="Results file, .json, or .json.gz to save it compressed "
                      "(default: results/<device>/<name>-<time>.json)."),
    click.option("--force", is_flag=True, help="Replace the -o file if it exists."),
]
DECIDING = [
    click.option("--decide", default=None, type=float, metavar="THRESHOLD",
                 help="Sample on (up to --max-time) until a comparison at this threshold could be decided "
                      "[default: 0.05 on the GPU, off on the CPU; 0 turns it off]."),
    click.option("--discard-throttled", is_flag=True,
                 help="Drop samples taken while the GPU was power- or thermally-throttled, and take others."),
]
PACING = [
    # The choices by value: click 8.2 and later match an enum's members by their NAMES (IDLE), not their values.
    click.option("--pace", type=click.Choice([p.value for p in Pace]), default=None,
                 help=f"{Pace.IDLE}: each call timed after the GPU waited for the host (a call from idle); "
                      f"{Pace.SUSTAINED}: calls back to back in a stream kept ahead of the GPU, timed once steady "
                      f"(under sustained load: power-limited clocks) [default: {Pace.IDLE}, or the suite's]."),
    click.option("--settle", default=None, type=float, metavar="SECONDS",
                 help=f"With --pace {Pace.SUSTAINED}: run the calls back to back at least this long, and until their "
                      f"time is steady, before sampling [default: {DEFAULTS.timing.settle_s:g}]."),
    click.option("--cooldown", default=None, type=float, metavar="SECONDS",
                 help="Idle the GPU this long before each point's first call, so that every point starts from a "
                      "rested card (at tensor-core rates the power limit the points before ran into otherwise carries "
                      "over) [default: 0, or the suite's]."),
]
MANY_GPUS = [
    click.option("--gpus", default=None, metavar="all|N|0,2|id:1",
                 help="Spread the sweep over several GPUs with Dask (one worker per GPU; pip install "
                      "'gpubench[cluster]'): all, the first N, or these indices; id:1 runs on that one GPU, no Dask. "
                      "With --backend cpu: N worker processes."),
    click.option("--scheduler", default=None, metavar="ADDRESS",
                 help="Run on an existing Dask cluster (e.g. tcp://host:8786), one GPU per worker."),
    click.option("--replicate", is_flag=True,
                 help="Every GPU runs every point; a GPU slower than the others is flagged (exit 4)."),
    click.option("--slow-threshold", default=None, type=float,
                 help=f"With --replicate: how much slower than the node's median a GPU may be "
                      f"[default: {DEFAULTS.slow_threshold:g}]."),
]
BACKEND_HELP = ("cuda: PyCUDA kernels + cuBLAS/cuDNN; cpu: NumPy (and your Python functions), no GPU needed "
                "[default: $GPUBENCH_BACKEND, else the project's backend, else cuda where PyCUDA and CuPy are "
                "installed, else cpu].")
RUNNING = [
    click.option("--backend", type=click.Choice(["cuda", "cpu"]), default=None, help=BACKEND_HELP),
    click.option("--seed", default=DEFAULTS.seed, show_default=True, type=int, help="Seed for the random inputs."),
    click.option("--tf32", is_flag=True, help="The old name of --dtype tf32: FP32 storage, TF32 tensor-core math."),
    click.option("--timeout", default=DEFAULTS.timeout_s, show_default=True, type=float,
                 help="Seconds a point may take before the watchdog ends it (recorded as timed out)."),
    CONFIG,
]


ADAPTIVE = [
    click.option("--max-noise", default=None, type=float,
                 help="Adaptive sampling for every sweep: sample until IQR/median is under this ..."),
    click.option("--max-time", default=None, type=float, help="... or until this many seconds went into the point."),
]
C = DEFAULTS.conv
CONV_SHAPE = [
    click.option("--stride", default=DEFAULTS.text(DEFAULTS.strides), show_default=True,
                 help="Strides, comma-separated."),
    click.option("--batch", default=C["batch"], show_default=True, type=int, help="Images per batch (N)."),
    click.option("--in-channels", default=C["in_channels"], show_default=True, type=int, help="Input channels (C)."),
    click.option("--out-channels", default=C["out_channels"], show_default=True, type=int, help="Filters (K)."),
    click.option("--kernel-size", default=C["kernel"], show_default=True, type=int,
                 help="Filter height = width (R = S)."),
    click.option("--padding", default=C["padding"], show_default=True, help="same (the lab's), valid, or an integer."),
]
FRACTION = click.FloatRange(0.0, min_open=True)
LEVEL = click.FloatRange(0.0, 1.0, min_open=True, max_open=True)
SHOWING = [
    click.argument("file", required=False),
    click.option("--example", is_flag=True, help="Show the H200 lab run shipped with gpubench (no FILE needed)."),
    click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
                 show_default=True),
    click.option("--threshold", default=DEFAULTS.threshold, show_default=True, type=FRACTION,
                 help="Flag (~) points whose IQR/median exceeds this: too noisy to support a comparison at it."),
]
COMPARING = [
    click.argument("base"),
    click.argument("new"),
    click.option("--threshold", default=DEFAULTS.threshold, show_default=True, type=FRACTION,
                 help="Smallest change that counts (0.05 = 5%)."),
    click.option("--alpha", default=DEFAULTS.alpha, show_default=True, type=LEVEL,
                 help="Family-wise error rate over all points compared."),
    click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table",
                 show_default=True),
    click.option("--strict-env", is_flag=True, help="Refuse runs from different GPUs, drivers or libraries (exit 2)."),
    click.option("--fail-on-inconclusive", is_flag=True,
                 help="Exit 3 when nothing regressed but some points could not be decided."),
    click.option("--across", is_flag=True, help="Two GPU models (or two paces) side by side: per-point ratios and "
                                                "geometric means, no regression verdict (exit 0)."),
    click.option("--allow-partial", is_flag=True,
                 help="Compare the points in common when a run is not complete (interrupted, or still running)."),
]
PLOTTING = [
    click.argument("file"),
    click.option("-o", "--output", required=True, help="Image file: .png, .svg or .pdf."),
    click.option("--force", is_flag=True, help="Replace the image if it exists."),
    click.option("--roofline", is_flag=True, help="Plot every point under the roofline measured on the run's GPU."),
]
REPORTING = [
    click.argument("runs", nargs=-1, required=True),
    click.option("-o", "--output", required=True, help="The HTML file to write (one self-contained page)."),
    click.option("--force", is_flag=True, help="Replace the file if it exists."),
    click.option("--threshold", default=DEFAULTS.threshold, show_default=True, type=FRACTION,
                 help="Smallest change the comparisons count (0.05 = 5%)."),
    click.option("--across", is_flag=True, help="Runs from two GPU models: the same points side by side."),
]
HISTORY = [
    click.argument("runs", nargs=-1, required=True),
    click.option("--threshold", default=DEFAULTS.threshold, show_default=True, type=FRACTION,
                 help="Fail (exit 1) when a point's latest change is a slowdown larger than this (0.05 = 5%)."),
    click.option("--alpha", default=DEFAULTS.alpha, show_default=True, type=LEVEL,
                 help="A change is kept where the runs before and after it differ at this level."),
    click.option("--html", default=None, help="Also write an HTML page with a chart per series that changed."),
    click.option("--force", is_flag=True, help="Replace the HTML file if it exists."),
    click.option("--all", "every", is_flag=True, help="List every series, not only those that changed."),
]


KERNEL_ARGS_HELP = {
    Op.GEMM: "--kernel's parameter order. Default a,b,c,m,n,k (the lab's: a is m×n, b is n×k); A,B,C,M,N,K is "
             "gpubench's C[M,N] = A[M,K]·B[K,N].",
    Op.CONV: f"--kernel's parameter order. Default {','.join(ARRAYS[Op.CONV] + DIMS[Op.CONV])} (x is N×C×H×W, w "
             "K×C×R×S, y N×K×OH×OW).",
}


def sweep_options(default_sizes: str, op: Op):
    """Options shared by `gemm` and `conv` (--args's help says the op's own default order)."""
    t = DEFAULTS.timing
    return group([
        click.option("--sizes", default=None, help=f"Square sizes, comma-separated [default: {default_sizes}]."),
        click.option("--dtype", default=None, metavar="fp32,bf16,...",
                     help="Precisions, comma-separated: fp32 (the lab's), tf32, fp16, bf16, fp8 (e4m3, scaled, bf16 "
                          "out), int8 [default: fp32]. Each variant runs those it takes."),
        click.option("--layout", default=None, metavar="nn,nt,...",
                     help="Memory layouts, comma-separated: GEMM nn, nt, tn (t: that operand stored transposed); "
                          "conv nchw, nhwc [default: nn / nchw]."),
        click.option("--block-sizes", default=DEFAULTS.text(DEFAULTS.block_sizes), show_default=True,
                     help="Thread-block edges B (B×B threads, 1..32) for the block-size variants."),
        click.option("--variants", default=None, help="Comma-separated variants (default: the lab's and your "
                                                      "project's; see `gpubench list`)."),
        click.option("--kernel", "kernels", multiple=True, metavar="[NAME=]FILE:SYMBOL",
                     help="Your kernel, with the lab's launch (B×B blocks, one thread per output; -DBLOCK_SIZE=B). "
                          "Repeatable."),
        click.option("--args", "kernel_args", default=None, metavar="NAMES", help=KERNEL_ARGS_HELP[op]),
        click.option("--warmup", default=t.warmup, show_default=True, type=int, help="Untimed calls."),
        click.option("--reps", default=t.reps, show_default=True, type=int,
                     help="Timed calls at most (at least 5; fewer than this once --budget is spent)."),
        click.option("--budget", default=t.budget_s, show_default=True, type=float,
                     help="Seconds of timed calls per point before stopping early."),
        click.option("--max-noise", default=None, type=float,
                     help="Adaptive: sample until IQR/median is under this (e.g. 0.02) ..."),
        click.option("--max-time", default=t.max_time_s, show_default=True, type=float,
                     help="... or until this many seconds went into the point."),
        click.option("--no-flush", is_flag=True, help="Do not flush L2 before each timed call."),
        *DECIDING, *PACING, *OUTPUT, *RUNNING, *MANY_GPUS,
    ])


# --- values ---------------------------------------------------------------------------------------------------


def int_list(text: str, what: str, *, lo: int = 1, hi: int | None = None, example: str = "512,1024") -> tuple[int, ...]:
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise GpubenchError(f"{what} is empty: give comma-separated integers such as {example}")
    values = []
    for item in items:
        try:
            if not item.isascii():  # int() takes any script's digits (٣ is 3); a typo here is not meant as one
                raise ValueError(item)
            v = int(item)
        except ValueError:
            raise GpubenchError(f"{what}: {item!r} is not an integer; give comma-separated integers such as "
                                f"{example}") from None
        if v < lo or (hi is not None and v > hi):
            allowed = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise GpubenchError(f"{what}: {v} is out of range; allowed: {allowed} (e.g. {example})")
        values.append(v)
    return tuple(dict.fromkeys(values))


def sizes(text: str) -> tuple[int, ...]:
    return int_list(text, "--sizes", example="512,1024,2048")


def block_sizes(text: str) -> tuple[int, ...]:
    return int_list(text, "--block-sizes", hi=MAX_BLOCK_SIZE, example="8,16,24,32")


def strides(text: str) -> tuple[int, ...]:
    return int_list(text, "--stride", example="1,2,3")


def mnk(text: str) -> tuple[int, int, int]:
    items = [t.strip() for t in str(text).split(",")]
    if len(items) != 3 or not all(items):
        raise GpubenchError(f"--mnk {text!r} needs exactly three positive integers M,N,K, e.g. --mnk 1000,1500,777")
    m, n, k = (int_list(item, "--mnk", example="1000,1500,777")[0] for item in items)
    return m, n, k


def names(text: str | None, what: str = "--variants") -> list[str] | None:
    if text is None:
        return None
    found = [t.strip() for t in text.split(",") if t.strip()]
    if not found:
        raise GpubenchError(f"{what} is empty: give comma-separated names (see `gpubench list`), or leave it out for "
                            "the default set")
    return found
