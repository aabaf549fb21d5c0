"""The command line: click parses, gpubench/plan.py checks, gpubench/app.py does the work.

Every command returns an exit code from gpubench/exit_codes.py; every GpubenchError becomes one line on
stderr with exit code 2.
"""

from __future__ import annotations

import sys

import click

from gpubench import __version__, options
from gpubench.errors import GpubenchError
from gpubench.exit_codes import Exit

LAB_SIZES = "512,1024,2048,4096,8192"
LAB_BLOCKS = "8,16,24,32"


class OneLineErrors(click.Group):
    """Every user error becomes one line on stderr and exit code 2; commands return their own exit code."""

    def main(self, args=None, prog_name=None, **extra):
        try:
            rc = super().main(args=args, prog_name=prog_name or "gpubench", standalone_mode=False, **extra)
        except GpubenchError as e:
            click.echo(f"gpubench: error: {_one_line(str(e))}", err=True)
            sys.exit(Exit.USAGE)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `gpubench`: help, not an error
            click.echo(e.ctx.get_help())
            sys.exit(Exit.OK)
        except click.ClickException as e:
            click.echo(f"gpubench: error: {_one_line(e.format_message())}", err=True)
            sys.exit(Exit.USAGE)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except OSError as e:  # a path or directory the OS refuses (too long, read-only, unwritable cache...)
            where = f"{e.filename}: " if getattr(e, "filename", None) else ""
            click.echo(f"gpubench: error: {where}{e.strerror or e}", err=True)
            sys.exit(Exit.USAGE)
        except (click.Abort, KeyboardInterrupt):
            click.echo("gpubench: interrupted", err=True)
            sys.exit(Exit.INTERRUPTED)
        sys.exit(int(rc) if isinstance(rc, int) else Exit.OK)


def _one_line(text: str) -> str:
    return " ".join(text.split())


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpubench")
def cli():
    """Hand-written CUDA GEMM and convolution kernels (the lab's, gpubench's and yours), verified and timed
    against cuBLAS and cuDNN.

    \b
      gpubench gemm --sizes 512,1024,2048
      gpubench gemm --kernel my_lab.cu:gpu_matrix_mult_sm --sizes 1024
      gpubench conv --stride 1,2,3
      gpubench run lab
      gpubench compare baseline.json new.json
    """


def main():
    cli()


# --- shared options -------------------------------------------------------------------------------------------


def _options(opts):
    def wrap(f):
        for opt in reversed(opts):
            f = opt(f)
        return f

    return wrap


CONFIG = click.option("--config", "config", default=None, metavar="FILE",
                      help="Your project's gpubench.toml (default: found from here upwards, as pytest does).")
OUTPUT = [
    click.option("-o", "--output", default=None,
                 help="Results file, .json (default: results/<device>/<name>-<time>.json)."),
    click.option("--force", is_flag=True, help="Replace the -o file if it exists."),
]
DECIDING = [
    click.option("--decide", default=None, type=float, metavar="THRESHOLD",
                 help="Sample on (up to --max-time) until a comparison at this threshold could be decided "
                      "[default: 0.05 on the GPU, off on the CPU; 0 turns it off]."),
    click.option("--discard-throttled", is_flag=True,
                 help="Drop samples taken while the GPU was power- or thermally-throttled, and take others."),
]
MANY_GPUS = [
    click.option("--gpus", default=None, metavar="all|N|0,2",
                 help="Spread the sweep over several GPUs with Dask (one worker per GPU; pip install "
                      "'gpubench[cluster]'). With --backend cpu: N worker processes."),
    click.option("--scheduler", default=None, metavar="ADDRESS",
                 help="Run on an existing Dask cluster (e.g. tcp://host:8786), one GPU per worker."),
    click.option("--replicate", is_flag=True,
                 help="Every GPU runs every point; a GPU slower than the others is flagged (exit 4)."),
    click.option("--slow-threshold", default=0.05, show_default=True, type=float,
                 help="With --replicate: how much slower than the node's median a GPU may be."),
]
RUNNING = [
    click.option("--backend", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
                 help="cuda: PyCUDA kernels + cuBLAS/cuDNN; cpu: NumPy (and your Python functions), no GPU needed."),
    click.option("--seed", default=0, show_default=True, type=int, help="Seed for the random inputs."),
    click.option("--tf32", is_flag=True, help="Allow TF32 tensor cores in cuBLAS/cuDNN (marked [TF32])."),
    click.option("--timeout", default=300.0, show_default=True, type=float,
                 help="Seconds a point may take before the watchdog ends it (recorded as timed out)."),
    CONFIG,
]


def sweep_options(default_sizes: str):
    """Options shared by `gemm` and `conv`."""
    return _options([
        click.option("--sizes", default=None, help=f"Square sizes, comma-separated [default: {default_sizes}]."),
        click.option("--block-sizes", default=LAB_BLOCKS, show_default=True,
                     help="Thread-block edges B (B×B threads, 1..32) for the block-size variants."),
        click.option("--variants", default=None, help="Comma-separated variants (default: the lab's and your "
                                                      "project's; see `gpubench list`)."),
        click.option("--kernel", "kernels", multiple=True, metavar="[NAME=]FILE:SYMBOL",
                     help="Your kernel, with the lab's launch (B×B blocks, one thread per output; -DBLOCK_SIZE=B). "
                          "Repeatable."),
        click.option("--args", "kernel_args", default=None, metavar="NAMES",
                     help="--kernel's parameter order. gemm default a,b,c,m,n,k (the lab's: a is m×n, b is n×k); "
                          "A,B,C,M,N,K is gpubench's C[M,N] = A[M,K]·B[K,N]."),
        click.option("--warmup", default=3, show_default=True, type=int, help="Untimed calls."),
        click.option("--reps", default=50, show_default=True, type=int,
                     help="Timed calls at most (at least 5; fewer than this once --budget is spent)."),
        click.option("--budget", default=1.0, show_default=True, type=float,
                     help="Seconds of timed calls per point before stopping early."),
        click.option("--max-noise", default=None, type=float,
                     help="Adaptive: sample until IQR/median is under this (e.g. 0.02) ..."),
        click.option("--max-time", default=10.0, show_default=True, type=float,
                     help="... or until this many seconds went into the point."),
        click.option("--no-flush", is_flag=True, help="Do not flush L2 before each timed call."),
        *DECIDING, *OUTPUT, *RUNNING, *MANY_GPUS,
    ])


def _project(config):
    from gpubench import project

    return project.load(config)


def _catalog(proj):
    from gpubench.registry import Catalog

    return Catalog.with_user(proj.variants)


def _sweep_request(ctx, op: str, kw: dict, shapes):
    """The checked request of `gemm` or `conv`: variants, block sizes, timing, then the app runs it."""
    from gpubench import app, plan, registry

    proj = _project(kw["config"])
    catalog = _catalog(proj)
    mine = [registry.lab_kernel(op, k, kw["kernel_args"]) for k in kw["kernels"]]
    if kw["kernel_args"] and not mine:
        raise GpubenchError("--args gives the parameter order of a --kernel: add --kernel FILE:SYMBOL")
    for v in mine:
        if v.backend != kw["backend"]:
            raise GpubenchError(f"--kernel {v.source.name}:{v.kernel} runs on the {v.backend} backend (a "
                                f"{v.source.suffix} file), not on --backend {kw['backend']}")
    names = [v.name for v in mine]
    if len(set(names)) < len(names) or any(n in {v.name for v in catalog.variants(op, kw["backend"])} for n in names):
        raise GpubenchError(f"--kernel: the names {', '.join(names)} must differ from each other and from the "
                            f"variants already known (give one as NAME=FILE:SYMBOL)")
    chosen = plan.variants(catalog, op, kw["backend"], options.names(kw["variants"]), "--variants", mine)
    blocks = options.block_sizes(kw["block_sizes"])
    if ctx.get_parameter_source("block_sizes") == click.core.ParameterSource.COMMANDLINE:
        plan.check_block_option(chosen, "--block-sizes")
    if kw["tf32"] and kw["backend"] != "cuda":
        raise GpubenchError("--tf32 allows TF32 tensor cores in cuBLAS and cuDNN: the cpu backend has neither")
    decide = kw["decide"] if kw["decide"] is not None else plan.default_decide(kw["backend"])
    timing = plan.policy(warmup=kw["warmup"], reps=kw["reps"], budget=kw["budget"], max_noise=kw["max_noise"],
                         max_time=kw["max_time"], flush=not kw["no_flush"], decide=decide,
                         discard_throttled=kw["discard_throttled"])
    _check_timeout(kw["timeout"])
    _check_seed(kw["seed"])
    sweep = plan.sweep(op, op, chosen, shapes, blocks, timing)
    return app.run_sweeps(app.RunRequest([sweep], op, kw["backend"], kw["tf32"], kw["seed"], kw["output"],
                                         kw["force"], kw["timeout"], proj, **_many(kw)))


def _many(kw) -> dict:
    """--gpus, --scheduler, --replicate and --slow-threshold, checked."""
    import math

    from gpubench.cluster import parse_gpus

    slow = kw["slow_threshold"]
    if not math.isfinite(slow) or slow <= 0:
        raise GpubenchError(f"--slow-threshold must be a positive fraction such as 0.05, got {slow}")
    return {"gpus": parse_gpus(kw["gpus"]) if kw["gpus"] is not None else None, "scheduler": kw["scheduler"],
            "replicate": kw["replicate"], "slow_threshold": slow}


MAX_TIMEOUT_S = 7 * 24 * 3600  # a week: past this a watchdog means nothing (and the OS's timers overflow)


def _check_timeout(value: float) -> None:
    import math

    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise GpubenchError(f"--timeout must be a number of seconds from 0 to {MAX_TIMEOUT_S} (a week), got {value}")


def _check_seed(value: int) -> None:
    if not 0 <= value < 2**63:
        raise GpubenchError(f"--seed must be from 0 to 2**63 - 1, got {value}")


# --- sweeps ---------------------------------------------------------------------------------------------------


@cli.command()
@sweep_options(LAB_SIZES + " (none with --mnk)")
@click.option("--mnk", multiple=True, help="A non-square M,N,K (repeatable).")
@click.pass_context
def gemm(ctx, **kw):
    """Sweep GEMM variants over sizes and block sizes; verify, time, tabulate, save.

    \b
    Examples:
      gpubench gemm --sizes 512,1024,2048
      gpubench gemm --mnk 1000,1500,777 --variants tiled,cublas
      gpubench gemm --kernel my_lab.cu:gpu_matrix_mult_sm --sizes 1024,2048
      gpubench gemm --backend cpu --sizes 256
    """
    from gpubench import plan

    sizes = kw["sizes"] if kw["sizes"] is not None else ("" if kw["mnk"] else LAB_SIZES)
    shapes = plan.gemm_shapes(list(options.sizes(sizes)) if sizes or not kw["mnk"] else [],
                              [options.mnk(t) for t in kw["mnk"]])
    return _sweep_request(ctx, "gemm", kw, shapes)


@cli.command()
@sweep_options(LAB_SIZES)
@click.option("--stride", default="1,2,3", show_default=True, help="Strides, comma-separated.")
@click.option("--batch", default=1, show_default=True, type=int, help="Images per batch (N).")
@click.option("--in-channels", default=3, show_default=True, type=int, help="Input channels (C).")
@click.option("--out-channels", default=1, show_default=True, type=int, help="Filters (K).")
@click.option("--kernel-size", default=3, show_default=True, type=int, help="Filter height = width (R = S).")
@click.option("--padding", default="same", show_default=True, help="same (the lab's), valid, or an integer.")
@click.pass_context
def conv(ctx, **kw):
    """Sweep convolution variants over input sizes and strides; verify, time, tabulate, save.

    \b
    Examples:
      gpubench conv --stride 1,2,3
      gpubench conv --sizes 56 --batch 32 --in-channels 64 --out-channels 64 --padding 1 --stride 1
      gpubench conv --kernel my_conv.cu:conv_lab --args x,w,y,H,W,C,R,stride,pad,OH,OW --sizes 1024
      gpubench conv --backend cpu --sizes 64,100 --stride 1,2,3
    """
    from gpubench import plan

    shapes, _ = plan.conv_shapes(options.sizes(kw["sizes"] if kw["sizes"] is not None else LAB_SIZES),
                                 options.strides(kw["stride"]), batch=kw["batch"], in_channels=kw["in_channels"],
                                 out_channels=kw["out_channels"], kernel=kw["kernel_size"], padding=kw["padding"],
                                 name="conv", strict=True)
    return _sweep_request(ctx, "conv", kw, shapes)


@cli.command()
@click.argument("suite")
@_options(OUTPUT + RUNNING)
@click.option("--max-noise", default=None, type=float,
              help="Adaptive sampling for every sweep: sample until IQR/median is under this ...")
@click.option("--max-time", default=None, type=float, help="... or until this many seconds went into the point.")
@_options(DECIDING + MANY_GPUS)
def run(suite, output, force, backend, seed, tf32, timeout, config, max_noise, max_time, decide, discard_throttled,
        **many):
    """Run a suite of sweeps (a shipped one by name, or a TOML file) into one results file.

    \b
    Examples:
      gpubench run lab
      gpubench run my-suite.toml --backend cpu
      gpubench run ci -o ci-new.json && gpubench compare results/nvidia-h100-80gb-hbm3/ci.json ci-new.json
      gpubench run lab --gpus all                      # the suite shared out over every GPU (Dask)
      gpubench run ci --gpus all --replicate           # every GPU runs it: exit 4 names a slow one
    """
    from gpubench import app, plan, suites

    proj = _project(config)
    s = suites.load(suite, backend, _catalog(proj))
    _check_timeout(timeout)
    _check_seed(seed)
    for sweep in s.sweeps:
        if max_noise is not None or max_time is not None or decide is not None or discard_throttled:
            p = sweep.policy
            sweep.policy = plan.policy(warmup=p.warmup, reps=p.reps, budget=p.budget_s, flush=p.flush,
                                       max_noise=max_noise if max_noise is not None else p.max_noise,
                                       max_time=max_time if max_time is not None else p.max_time_s,
                                       decide=decide if decide is not None else p.decide,
                                       discard_throttled=discard_throttled or p.discard_throttled)
    return app.run_sweeps(app.RunRequest(s.sweeps, s.name, backend, tf32 or s.tf32, seed, output, force, timeout,
                                         proj, **_many(many)))


# --- saved runs -----------------------------------------------------------------------------------------------


@cli.command()
@click.argument("file")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "csv", "json"]), default="table",
              show_default=True)
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0.0, min_open=True),
              help="Flag (~) points whose IQR/median exceeds this: too noisy to support a comparison at it.")
def show(file, fmt, threshold):
    """Re-render a saved run (no GPU needed).

    \b
    Examples:
      gpubench show results/nvidia-h200/lab.json
      gpubench show run.json --format csv > run.csv
    """
    import math

    from gpubench import app, results
    from gpubench.views import run as run_view
    from gpubench.views.tables import escape, to_markdown

    if not math.isfinite(threshold):
        raise GpubenchError(f"--threshold must be a finite fraction such as 0.05, got {threshold}")
    run = results.load(file)
    if fmt == "json":
        click.echo(run.to_json())
    elif fmt == "csv":
        click.echo(run_view.to_csv(run), nl=False)
    elif fmt == "markdown":
        click.echo("\n".join(to_markdown(t) for t in run_view.run_tables(run, threshold)))
    else:
        out = app.console()
        out.print(escape(f"{file}: {run.device}, {len(run.points)} points, {run.status}, {run.created}"),
                  style="bold")
        app.print_run(run, out, threshold)
    return Exit.OK


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("base")
@click.argument("new")
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0.0, min_open=True),
              help="Smallest change that counts (0.05 = 5%).")
@click.option("--alpha", default=0.05, show_default=True,
              type=click.FloatRange(0.0, 1.0, min_open=True, max_open=True),
              help="Family-wise error rate over all points compared.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table",
              show_default=True)
@click.option("--strict-env", is_flag=True, help="Refuse runs from different GPUs, drivers or libraries (exit 2).")
@click.option("--fail-on-inconclusive", is_flag=True, help="Exit 3 when nothing regressed but some points "
                                                           "could not be decided.")
@click.option("--across", is_flag=True, help="Two GPU models side by side: per-point ratios and geometric means, "
                                             "no regression verdict (exit 0).")
def compare(base, new, threshold, alpha, fmt, strict_env, fail_on_inconclusive, across):
    """Compare two saved runs point by point and fail only on a real regression.

    \b
    Exit codes:
      0  no significant regression (improvements never fail)
      1  at least one point significantly slower by more than --threshold
      2  usage error, unreadable or incompatible files (--strict-env: environments differ)
      3  only inconclusive results, with --fail-on-inconclusive
    \b
    Examples:
      gpubench compare results/baseline.json new.json
      gpubench compare base.json new.json --format markdown > comment.md
      gpubench compare h100.json h200.json --across      # two GPU models, side by side
    """
    import math

    from gpubench import app
    from gpubench import compare as cmp
    from gpubench import results
    from gpubench.views import compare as compare_view

    if not math.isfinite(threshold) or not 1e-9 <= alpha < 1 or not math.isfinite(alpha):
        raise GpubenchError(f"--threshold must be a finite fraction (got {threshold}) and --alpha within [1e-9, 1) "
                            f"(got {alpha})")
    base_run, new_run = results.load(base), results.load(new)
    report = cmp.compare(base_run, new_run, threshold, alpha)
    if strict_env and report.env_diffs:
        name, a, b = report.env_diffs[0]
        raise GpubenchError(f"--strict-env: the runs' environments differ ({name}: {a} vs {b}"
                            f"{f' and {len(report.env_diffs) - 1} more' if len(report.env_diffs) > 1 else ''})")
    if not report.changes and not report.not_measured:
        raise GpubenchError(f"{base} and {new} have no points in common: nothing to compare")
    if across:
        from gpubench.views.tables import to_markdown, to_rich

        tables = compare_view.across_tables(report, base_run.device, new_run.device)
        if fmt == "json":
            click.echo(compare_view.to_json_report(report, Exit.OK))
        elif fmt == "markdown":
            click.echo("\n".join(to_markdown(t) for t in tables))
        else:
            for t in tables:
                app.console().print(to_rich(t))
        return Exit.OK
    code = report.exit_code(fail_on_inconclusive)
    if fmt == "json":
        click.echo(compare_view.to_json_report(report, code))
    elif fmt == "markdown":
        click.echo(compare_view.to_markdown_report(report, base, new))
    else:
        compare_view.print_rich(report, app.console(), base, new)
    return code


@cli.command()
@click.argument("file")
@click.option("-o", "--output", required=True, help="Image file: .png, .svg or .pdf.")
@click.option("--force", is_flag=True, help="Replace the image if it exists.")
@click.option("--roofline", is_flag=True, help="Plot every point under the roofline measured on the run's GPU.")
def plot(file, output, force, roofline):
    """Plot a saved run: GFLOPS (GEMM) or GB/s (conv) against size, one line per variant, bands from the spread;
    or, with --roofline, GFLOPS against arithmetic intensity under the GPU's measured ceilings.

    \b
    Examples:
      gpubench plot results/nvidia-h200/lab.json -o lab.png
      gpubench plot run.json --roofline -o roofline.svg
    """
    from gpubench import app
    from gpubench.views import plot as plotting
    from gpubench import results

    path = app.check_output(output, force, "plot", plotting.FORMATS)
    run = results.load(file)
    draw = plotting.roofline_plot if roofline else plotting.plot
    click.echo(f"wrote {draw(run, path)}")
    return Exit.OK


# --- the machine and the catalog ------------------------------------------------------------------------------


@cli.command()
@click.option("--backend", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True)
def env(backend):
    """Print the GPU and software environment that runs record.

    \b
    Example:
      gpubench env
    """
    import json

    from gpubench import app

    click.echo(json.dumps(app.environment(backend), indent=2))
    return Exit.OK


@cli.command(name="list")
@CONFIG
def list_variants(config):
    """List every variant (built-in and your project's) and the shipped suites.

    \b
    Example:
      gpubench list
    """
    from rich.table import Table

    from gpubench import app, suites
    from gpubench.views.tables import escape

    proj = _project(config)
    table = Table("op", "backend", "variant", "configurations", "what it is", "from", title="variants",
                  title_justify="left")
    for v in _catalog(proj).all:
        axis = {"block": "block sizes", "configs": ", ".join(c.label for c in v.configs), "none": "-",
                "tuned": "per shape, from `gpubench tune`"}[v.axis]
        where = "gpubench" if v.builtin else str(v.origin)
        table.add_row(*(escape(x) for x in (v.op, v.backend, v.name + ("" if v.lab or not v.builtin else " (extra)"),
                                            axis, v.summary, where)))
    out = app.console()
    out.print(table)
    shipped = Table("suite", "what it runs", title="suites (gpubench run NAME)", title_justify="left")
    for name, description in suites.shipped():
        shipped.add_row(escape(name), escape(description))
    out.print(shipped)
    if proj.path:
        out.print(escape(f"project: {proj.path}"))
    return Exit.OK


@cli.command()
@CONFIG
@click.option("--arch", default="sm_80,sm_90", show_default=True, help="Architectures to compile for.")
@click.option("--builtin", is_flag=True, help="Also compile gpubench's own kernels.")
@click.option("--block-sizes", default=LAB_BLOCKS, show_default=True, help="Block sizes for block-axis variants.")
def check(config, arch, builtin, block_sizes):
    """Check your project's kernel specs and compile every kernel configuration (needs nvcc, not a GPU).

    \b
    Examples:
      gpubench check
      gpubench check --arch sm_90 --config path/to/gpubench.toml
    """
    from gpubench import app, nvcc
    from gpubench.views.tables import escape

    proj = _project(config)
    archs, blocks = app.arch_list(arch), options.block_sizes(block_sizes)
    variants = [v for v in _catalog(proj).all if v.backend == "cuda" and v.source and (builtin or not v.builtin)]
    out = app.console()
    out.print(escape(f"project: {proj.path or 'none found'}; {len(proj.variants)} variant(s) of your own, specs valid"))
    if not variants:
        return Exit.OK
    if nvcc.find_nvcc() is None:
        raise GpubenchError("nvcc not found: install the CUDA toolkit or put nvcc on PATH (or set CUDA_HOME)")
    rows = app.check_kernels(variants, archs, blocks)
    for v, c, a, error in rows:
        status = "[green]ok[/]" if error is None else "[red]failed[/]"
        out.print(f"{status} {escape(f'{v.op} {v.name} {c.label} {a}')}")
    failed = [e for *_, e in rows if e is not None]
    if failed:
        raise failed[0]
    out.print(f"{len(rows)} builds compiled")
    return Exit.OK


# --- tuning ---------------------------------------------------------------------------------------------------


@cli.group()
def tune():
    """Search kernel parameters for this GPU and keep the winners."""


@tune.command(name="gemm")
@click.option("--variant", default="tuned", show_default=True, help="A gemm variant with a [variant.search] space.")
@click.option("--sizes", default="2048,4096,8192", show_default=True, help="Square sizes to tune for.")
@click.option("--mnk", multiple=True, help="A non-square M,N,K to tune for (repeatable).")
@click.option("--candidates", default=48, show_default=True, type=click.IntRange(1),
              help="How many configurations of the search space to try (the variant's own first among them).")
@click.option("--refine", default=1, show_default=True, type=click.IntRange(0),
              help="Rounds of local search: try every one-parameter change of the best two so far.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for sampling the space and inputs.")
@click.option("--timeout", default=300.0, show_default=True, type=float, help="Watchdog per candidate, seconds.")
@click.option("--gpus", default=None, metavar="all|N|0,2", help="Spread the candidates over several GPUs of one model.")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Spread them over an existing Dask cluster.")
@CONFIG
def tune_gemm(variant, sizes, mnk, candidates, refine, seed, timeout, gpus, scheduler, config):
    """Autotune a GEMM variant's parameters per shape (for `tuned`: tiles, warp tiles, swizzle, registers).

    Winners go to your project's tuned directory (gpubench.toml: tuned = "DIR") or else to the user's config
    directory (~/.config/gpubench/tuned); the variant's `tuned` axis then uses them.

    \b
    Example:
      gpubench tune gemm --sizes 4096,8192 --mnk 8192,2048,4096
      gpubench tune gemm --sizes 4096 --candidates 200 --gpus all
      gpubench gemm --variants tuned,cublas --sizes 4096,8192
    """
    from gpubench import app, plan
    from gpubench.views.tables import escape
    from gpubench import tune as tuner

    proj = _project(config)
    target = _catalog(proj).get("gemm", "cuda", variant)
    shapes = plan.gemm_shapes(list(options.sizes(sizes)), [options.mnk(t) for t in mnk])
    _check_timeout(timeout)
    _check_seed(seed)
    out = app.console()
    from gpubench.cluster import parse_gpus

    path = tuner.run(target, shapes, candidates, refine, seed, timeout, proj.tuned_dir, out,
                     gpus=parse_gpus(gpus) if gpus is not None else None, scheduler=scheduler)
    out.print(escape(f"saved the winners to {path}"))
    return Exit.OK
