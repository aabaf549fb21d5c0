"""The command line's options: click declarations shared by the commands (their defaults read from
gpubench/planning/plan.py's DEFAULTS, the one home of defaults), and the parsers of their comma-separated values (each bad
value becomes one line saying what is allowed)."""

from __future__ import annotations

import click

from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError
from gpubench.planning.plan import DEFAULTS, PLACES, PREHEAT_S
from gpubench.ops import params as op_params
from gpubench.ops.base import OpDef, ParamKind
from gpubench.planning.settings import Selection, Settings
from gpubench.specs.parse import MAX_BLOCK_SIZE
from gpubench.measure.kernel_clock import Clocks, CompareClock
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
CLOCK = click.option("--clock", type=click.Choice([c.value for c in Clocks]), default=None,
                     help=f"{Clocks.EVENTS}: CUDA events time each call; {Clocks.BOTH}: CUPTI's records of its "
                          "kernels too (pip install cupti-python), saved beside the samples with the kernels' names "
                          "[default: events, or the suite's].")
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
    click.option("--preheat", default=None, type=float, metavar="SECONDS",
                 help="Burn the GPU this long (matmuls and copies) before timing, where it idled: a process's first "
                      "point, or one after a compile, so that every process measures a GPU in its working state "
                      f"(0: off) [default: {PREHEAT_S:g} on a GPU, 0 on the CPU, or the suite's]."),
    click.option("--places", default=None, type=int, metavar="N",
                 help="Time a call whose buffers are small (4 MiB at most) on N sets of them in turn, its own and "
                      "copies at other places: on an H200 where they lie moves a call of a few microseconds by up to "
                      f"9% (1: its own only) [default: {PLACES} on a GPU, 1 on the CPU, or the suite's]."),
    CLOCK,
    click.option("--graph", default=None, type=click.IntRange(0, 10_000), metavar="N",
                 help="Time each call as one launch of a CUDA graph of N captured calls (a sample is the graph's "
                      "time over N): for calls whose launch costs more than they run [default: 0, none]."),
]
PROCESSES = [
    click.option("--processes", default=None, type=int, metavar="K",
                 help="Measure every point in K worker processes on the one device, interleaved shape by shape; "
                      "compare then takes its interval from the spread between them. Takes about K times as long "
                      "[default: 1, or the suite's]."),
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
PROFILE = click.option("--profile", "profile", is_flag=True,
                       help="Then run each timed point's call once more under Nsight Compute (ncu) and save its "
                            "counters with the point (`gpubench profile` is the same, and refuses where ncu cannot "
                            "run).")
BACKEND_HELP = ("cuda: PyCUDA kernels + cuBLAS/cuDNN; cpu: NumPy (and your Python functions), no GPU needed "
                "[default: $GPUBENCH_BACKEND, else the project's backend, else cuda where PyCUDA and CuPy are "
                "installed, else cpu].")
RUNNING = [
    click.option("--backend", type=click.Choice([k.value for k in BackendKind]), default=None, help=BACKEND_HELP),
    click.option("--seed", default=DEFAULTS.seed, show_default=True, type=int, help="Seed for the random inputs."),
    click.option("--tf32", is_flag=True, help="The old name of --dtype tf32: FP32 storage, TF32 tensor-core math."),
    click.option("--timeout", default=None, type=float,
                 help="Seconds a point may take before the watchdog ends it (recorded as timed out) "
                      f"[default: {DEFAULTS.timeout_s:g}, or the suite's]."),
    CONFIG,
]


ADAPTIVE = [
    click.option("--max-noise", default=None, type=float,
                 help="Adaptive sampling for every sweep: sample until IQR/median is under this ..."),
    click.option("--max-time", default=None, type=float, help="... or until this many seconds went into the point."),
]


def problem_options(op: OpDef, defaults: dict | None = None):
    """The op's own problem parameters as options (gpubench/ops/<op>.py declares them): a list of sizes is
    None when not given, so that the op applies its default; `defaults` overrides what the help shows."""
    opts = []
    for p in op.params:
        default = (defaults or {}).get(p.name, p.default)
        if p.kind == ParamKind.INTS:
            shown = f" [default: {DEFAULTS.text(default)}{p.note}]" if default is not None else ""
            opts.append(click.option(p.flag, p.name, default=None, metavar=p.metavar,
                                     help=p.help.rstrip(".") + f"{shown}."))
        elif p.kind == ParamKind.TRIPLES:
            opts.append(click.option(p.flag, p.name, multiple=True, help=p.help))
        elif p.kind == ParamKind.FLAG:
            opts.append(click.option(p.flag, p.name, is_flag=True, help=p.help))
        elif p.kind == ParamKind.FLOAT:
            opts.append(click.option(p.flag, p.name, default=default, show_default=default is not None, type=float,
                                     help=p.help))
        else:
            opts.append(click.option(p.flag, p.name, default=default, show_default=True,
                                     type=int if p.kind == ParamKind.INT else str, help=p.help))
    return group(opts)


def problem_values(op: OpDef, kw: dict) -> dict:
    """The op's parameters taken out of a command's keyword arguments, those not given left out."""
    values = {p.name: kw.pop(p.name) for p in op.params}
    return {k: v for k, v in values.items() if v is not None and v != ()}
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
    click.option("--clock", type=click.Choice([c.value for c in CompareClock]), default=CompareClock.EVENTS.value,
                 show_default=True,
                 help="The samples compared: the events', or CUPTI's kernel times of the same calls (runs timed with "
                      "--clock both): the kernels alone, without the launch path's few microseconds a call."),
    click.option("--thresholds", "thresholds", metavar="STABILITY_RUN", default=None,
                 help="A run saved by gpubench stability: each duration class it measured is judged by the "
                      "threshold it suggests for that class (never below --threshold); the others by --threshold."),
]
STABILITY = [
    click.argument("suite"),
    click.option("-R", "--runs", default=5, show_default=True, type=int,
                 help="How many times the suite runs, each in fresh worker processes (2 to 100)."),
    click.option("--threshold", default=DEFAULTS.threshold, show_default=True, type=FRACTION,
                 help="The threshold the runs are compared at, pair by pair (compare's)."),
    click.option("--alpha", default=DEFAULTS.alpha, show_default=True, type=LEVEL,
                 help="compare's family-wise error rate over all points."),
    click.option("--keep-runs", default=None, metavar="DIR",
                 help="Keep each run's own results file in DIR (default: removed once the stability run holds "
                      "their samples)."),
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


def sweep_options(op: OpDef):
    """Options every op's sweep command shares (--args's help says the op's own default order)."""
    t = DEFAULTS.timing
    return group([
        click.option("--dtype", default=None, metavar="fp32,bf16,...",
                     help="Precisions, comma-separated: fp32 (the lab's), tf32, fp16, bf16, fp8 (e4m3, scaled, bf16 "
                          "out), int8 (int32 out), int8-fp32, int8-int8 (requantised) [default: fp32]. Each variant "
                          "runs those it takes."),
        click.option("--layout", default=None, metavar=",".join(list(op.shape.LAYOUT)[:2]) + ",...",
                     help=f"Memory layouts, comma-separated: {', '.join(op.shape.LAYOUT)} [default: "
                          f"{op.shape.DEFAULT_LAYOUT}]."),
        click.option("--block-sizes", default=DEFAULTS.text(DEFAULTS.block_sizes), show_default=True,
                     help="Thread-block edges B (B×B threads, 1..32) for the block-size variants."),
        click.option("--variants", default=None, help="Comma-separated variants (default: the lab's and your "
                                                      "project's; see `gpubench list`)."),
        click.option("--kernel", "kernels", multiple=True, metavar="[NAME=]FILE:SYMBOL",
                     help="Your kernel, with the lab's launch (B×B blocks, one thread per output; -DBLOCK_SIZE=B). "
                          "Repeatable."),
        click.option("--args", "kernel_args", default=None, metavar="NAMES",
                     help=op.kernel_args_help or f"--kernel's parameter order. Default "
                                                 f"{','.join(op.array_names + op.dims)}."),
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
        *DECIDING, *PACING, *PROCESSES, *OUTPUT, *RUNNING, *MANY_GPUS, PROFILE,
    ])


# --- settings -------------------------------------------------------------------------------------------------


def settings(kw: dict, whole: bool = False) -> Settings:
    """The run's settings records from click's keyword arguments, taken out of `kw` by their options' names (a new
    option of a record is its click option here and its field there). whole: every argument is a setting."""
    found = Settings.taken_from(kw)
    if whole and kw:
        raise TypeError(f"option(s) {', '.join(sorted(kw))} belong to no settings record")
    return found


def selection(kw: dict, block_sizes_given: bool) -> Selection:
    """What `gemm`/`conv` run besides their shapes, from what click's keyword arguments hold after `settings`."""
    return Selection(variants=names(kw.pop("variants")), block_sizes=block_sizes(kw.pop("block_sizes")),
                     block_sizes_given=block_sizes_given, **kw)


# --- values ---------------------------------------------------------------------------------------------------


int_list = op_params.int_list


def sizes(text: str) -> tuple[int, ...]:
    return int_list(text, "--sizes", example="512,1024,2048")


def block_sizes(text: str) -> tuple[int, ...]:
    return int_list(text, "--block-sizes", hi=MAX_BLOCK_SIZE, example="8,16,24,32")


def strides(text: str) -> tuple[int, ...]:
    return int_list(text, "--stride", example="1,2,3")




def names(text: str | None, what: str = "--variants") -> list[str] | None:
    if text is None:
        return None
    found = [t.strip() for t in text.split(",") if t.strip()]
    if not found:
        raise GpubenchError(f"{what} is empty: give comma-separated names (see `gpubench list`), or leave it out for "
                            "the default set")
    return found


def ab_options():
    """`gpubench ab`'s options (its defaults are gpubench/usecases/ab.py's: an A/B in one process decides far
    smaller changes than a comparison of two runs), and those of its reading of saved rounds."""
    from gpubench.usecases import ab

    return group([
        click.argument("sides", nargs=-1),
        click.option("--kernel", "kernels", multiple=True, metavar="[NAME=]FILE:SYMBOL",
                     help="A kernel source, with the lab's launch: give it twice (A, then B)."),
        click.option("--rev", "revs", multiple=True, metavar="REV",
                     help="A git revision of FILE:SYMBOL (the one argument): give it twice (A, then B)."),
        click.option("--op", default=None, metavar="OP",
                     help="The op (gemm, conv, or your project's) [default: the op of the two variants named; gemm "
                          "for --kernel/--rev]."),
        click.option("--size", default=1024, show_default=True, type=click.IntRange(1),
                     help="The problem: a square GEMM, or a convolution of this input size."),
        click.option("--stride", default=1, show_default=True, type=click.IntRange(1), help="Conv stride."),
        click.option("--dtype", default=None, metavar="fp32|bf16|...", help="The precision [default: fp32]."),
        click.option("--layout", default=None, metavar="nn|nchw|...", help="The memory layout [default: nn / nchw]."),
        click.option("--block-size", default=16, show_default=True, type=click.IntRange(1, MAX_BLOCK_SIZE),
                     help="The block size of a block-axis variant (or name a configuration as NAME@LABEL)."),
        click.option("--args", "kernel_args", default=None, metavar="NAMES", help="--kernel's parameter order."),
        click.option("--rounds", default=ab.ROUNDS, show_default=True, type=click.IntRange(1, 10_000),
                     help="Rounds at most: each times A's and B's calls in turn, call by call, counterbalanced (A B B A "
                          "..., then B A A B ...)."),
        click.option("--max-time", default=ab.MAX_TIME_S, show_default=True, type=click.FloatRange(0, 3600),
                     help="Seconds of rounds at most (at least 6 rounds are run)."),
        click.option("--reps", default=ab.ROUND_REPS, show_default=True, type=click.IntRange(5, 10_000),
                     help="Timed calls per side per round, at most ..."),
        click.option("--budget", default=ab.ROUND_BUDGET_S, show_default=True, type=click.FloatRange(0, 60),
                     help="... or, after 5 each, this many seconds per side per round."),
        click.option("--no-flush", is_flag=True, help="Do not flush L2 before each timed call."),
        click.option("--clock", type=click.Choice([c.value for c in Clocks]), default=Clocks.EVENTS.value,
                     show_default=True, help="both: CUPTI's kernel times too, and their rounds' test beside the "
                                             "events' (the verdict stays the events')."),
        click.option("--graph", default=0, type=click.IntRange(0, 10_000), hidden=True,
                     help="Refused: a round times A's and B's calls in turn, which a graph of one side cannot."),
        click.option("--threshold", default=ab.THRESHOLD, show_default=True, type=FRACTION,
                     help="Smallest change that counts (0.005 = 0.5%)."),
        click.option("--level", default=None, type=LEVEL,
                     help=f"The interval's confidence level [default: {ab.LEVEL:g}; over saved rounds "
                          f"{ab.ROUNDS_LEVEL:g}]."),
        click.option("--format", "fmt", type=click.Choice(["text", "markdown", "json"]), default="text",
                     show_default=True),
        click.option("--baseline", default="cublas", show_default=True,
                     help="Saved rounds (FILE...): the variant every other is divided by."),
        click.option("--screen", default=None, metavar="KERNEL",
                     help="Saved rounds: the screening rule against this kernel (VARIANT CONFIG)."),
        click.option("--keep", default=2, show_default=True, type=click.IntRange(1),
                     help="With --screen: how many kernels may pass at most."),
        click.option("--any-power-state", is_flag=True,
                     help="Saved rounds: count every pair whatever its clocks (a layer where one side is always "
                          "power-capped)."),
        *RUNNING,
    ])


def ab_request(kw: dict):
    """`gpubench ab`'s options as the use case's one record (usecases/ab.py's ABRequest), every value checked: with
    --rev, the one argument is the kernel file."""
    from gpubench.planning import plan
    from gpubench.usecases import ab

    sides, file = list(kw["sides"]), None
    if kw["revs"]:
        if len(sides) != 1:
            raise GpubenchError("ab --rev REV --rev REV FILE:SYMBOL: give the kernel file as the one argument, got "
                                f"{len(sides)}")
        file, sides = sides[0], []
    ab.refuse_graph(kw["graph"])
    policy = plan.policy(reps=kw["reps"], budget=kw["budget"], flush=not kw["no_flush"], decide=0, clock=kw["clock"],
                         preheat=plan.default_preheat(kw["backend"]))
    size, stride, dtype, layout, tf32 = kw["size"], kw["stride"], kw["dtype"], kw["layout"], kw["tf32"]
    return ab.ABRequest(names=sides, kernels=list(kw["kernels"]), revs=list(kw["revs"]), file=file, op=kw["op"],
                        shape_of=lambda o: ab.problem(o, size, stride, dtype, layout, tf32), backend=kw["backend"],
                        args=kw["kernel_args"], block=kw["block_size"], rounds=kw["rounds"],
                        max_time_s=kw["max_time"], policy=policy, threshold=kw["threshold"],
                        level=ab.LEVEL if kw["level"] is None else kw["level"], seed=plan.check_seed(kw["seed"]),
                        timeout_s=plan.check_timeout(kw["timeout"]), config=kw["config"])
