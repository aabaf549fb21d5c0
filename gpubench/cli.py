"""The command line: thin click commands over the core package (sweep, results, render, compare)."""

from __future__ import annotations

import sys

import click

from gpubench import __version__, options, registry
from gpubench.errors import GpubenchError
from gpubench.problems import GemmShape, conv_shape
from gpubench.timing import TimingPolicy

LAB_SIZES = "512,1024,2048,4096,8192"
LAB_BLOCKS = ",".join(map(str, registry.LAB_BLOCK_SIZES))


class OneLineErrors(click.Group):
    """Every user error becomes one line on stderr and exit code 2; commands return their own exit code."""

    def main(self, args=None, prog_name=None, **extra):
        try:
            rc = super().main(args=args, prog_name=prog_name or "gpubench", standalone_mode=False, **extra)
        except GpubenchError as e:
            click.echo(f"gpubench: error: {e}", err=True)
            sys.exit(2)
        except click.exceptions.NoArgsIsHelpError as e:  # bare `gpubench`: help, not an error
            click.echo(e.ctx.get_help())
            sys.exit(0)
        except click.ClickException as e:
            click.echo(f"gpubench: error: {e.format_message()}", err=True)
            sys.exit(e.exit_code if e.exit_code else 2)
        except click.exceptions.Exit as e:
            sys.exit(e.exit_code)
        except (click.Abort, KeyboardInterrupt):
            click.echo("gpubench: interrupted", err=True)
            sys.exit(130)
        sys.exit(rc if isinstance(rc, int) else 0)


@click.group(cls=OneLineErrors, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gpubench")
def cli():
    """Hand-written CUDA GEMM and convolution kernels, verified and timed against cuBLAS and cuDNN.

    \b
      gpubench gemm --sizes 512,1024,2048
      gpubench conv --stride 1,2,3
      gpubench show results/<device>/gemm-<time>.json
    """


def sweep_options(default_sizes: str):
    """Options shared by every sweep command (sizes, variants, timing, output, backend)."""

    def wrap(f):
        for opt in reversed([
            click.option("--sizes", default=None, help=f"Square sizes, comma-separated [default: {default_sizes}]."),
            click.option("--block-sizes", default=LAB_BLOCKS, show_default=True,
                         help="Thread-block edges B (B×B threads, 1..32) for the block-size variants."),
            click.option("--variants", default=None, help="Comma-separated variants (default: the lab's; see "
                                                          "`gpubench list`)."),
            click.option("--warmup", default=3, show_default=True, type=click.IntRange(0), help="Untimed calls."),
            click.option("--reps", default=50, show_default=True, type=click.IntRange(1),
                         help="Timed calls at most (fewer once --budget is spent, never fewer than 5)."),
            click.option("--budget", default=1.0, show_default=True, type=click.FloatRange(0.0),
                         help="Seconds of timed calls per point before stopping early."),
            click.option("--max-noise", default=None, type=click.FloatRange(0.0, min_open=True),
                         help="Adaptive: sample until IQR/median is under this (e.g. 0.02) ..."),
            click.option("--max-time", default=10.0, show_default=True, type=click.FloatRange(0.0, min_open=True),
                         help="... or until this many seconds went into the point."),
            click.option("--seed", default=0, show_default=True, type=int, help="Seed for the random inputs."),
            click.option("--no-flush", is_flag=True, help="Do not flush L2 before each timed call."),
            click.option("--tf32", is_flag=True, help="Allow TF32 tensor cores in cuBLAS/cuDNN (marked [TF32])."),
            click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
                         help="Results file (default: results/<device>/<op>-<time>.json)."),
            click.option("--backend", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True,
                         help="cuda: PyCUDA kernels + cuBLAS/cuDNN; cpu: NumPy, no GPU needed."),
        ]):
            f = opt(f)
        return f

    return wrap


def policy_from(kw) -> TimingPolicy:
    min_reps = min(5, kw["reps"])
    return TimingPolicy(warmup=kw["warmup"], reps=kw["reps"], min_reps=min_reps, budget_s=kw["budget"],
                        flush=not kw["no_flush"], max_noise=kw["max_noise"], max_time_s=kw["max_time"])


def _execute(sweep, kw, label):
    from gpubench.session import execute

    return execute([sweep], backend_name=kw["backend"], tf32=kw["tf32"], seed=kw["seed"], output=kw["output"],
                   label=label, argv=["gpubench", *sys.argv[1:]])


@cli.command()
@sweep_options(LAB_SIZES + " (none with --mnk)")
@click.option("--mnk", multiple=True, help="A non-square M,N,K (repeatable).")
def gemm(**kw):
    """Sweep GEMM variants over sizes and block sizes; verify, time, tabulate, save.

    \b
    Examples:
      gpubench gemm --sizes 512,1024,2048
      gpubench gemm --mnk 1000,1500,777 --variants tiled,cublas
      gpubench gemm --backend cpu --sizes 256
    """
    from gpubench.sweep import Sweep

    sizes = kw["sizes"] if kw["sizes"] is not None else ("" if kw["mnk"] else LAB_SIZES)
    shapes = [GemmShape(s, s, s) for s in options.sizes(sizes)] if sizes or not kw["mnk"] else []
    shapes += [GemmShape(*options.mnk(t)) for t in kw["mnk"]]
    sweep = Sweep("gemm", "gemm", registry.select("gemm", kw["backend"], options.names(kw["variants"])), shapes,
                  options.block_sizes(kw["block_sizes"]), policy_from(kw))
    return _execute(sweep, kw, "gemm")


@cli.command()
@sweep_options(LAB_SIZES)
@click.option("--stride", default="1,2,3", show_default=True, help="Strides, comma-separated.")
@click.option("--batch", default=1, show_default=True, type=int, help="Images per batch (N).")
@click.option("--in-channels", default=3, show_default=True, type=int, help="Input channels (C).")
@click.option("--out-channels", default=1, show_default=True, type=int, help="Filters (K).")
@click.option("--kernel-size", default=3, show_default=True, type=int, help="Filter height = width (R = S).")
@click.option("--padding", default="same", show_default=True, help="same (the lab's), valid, or an integer.")
def conv(**kw):
    """Sweep convolution variants over input sizes and strides; verify, time, tabulate, save.

    \b
    Examples:
      gpubench conv --stride 1,2,3
      gpubench conv --sizes 56 --batch 32 --in-channels 64 --out-channels 64 --padding 1 --stride 1
      gpubench conv --backend cpu --sizes 64,100 --stride 1,2,3
    """
    from gpubench.sweep import Sweep

    shapes = [
        conv_shape(size, stride, batch=kw["batch"], in_channels=kw["in_channels"], out_channels=kw["out_channels"],
                   kernel=kw["kernel_size"], padding=kw["padding"])
        for size in options.sizes(kw["sizes"] if kw["sizes"] is not None else LAB_SIZES)
        for stride in options.strides(kw["stride"])
    ]
    sweep = Sweep("conv", "conv", registry.select("conv", kw["backend"], options.names(kw["variants"])), shapes,
                  options.block_sizes(kw["block_sizes"]), policy_from(kw))
    return _execute(sweep, kw, "conv")


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
      gpubench show results/nvidia-h100-80gb-hbm3/gemm-20261122-120000.json
      gpubench show run.json --format csv > run.csv
    """
    from gpubench import render, results

    run = results.load(file)
    if fmt == "json":
        click.echo(run.to_json())
    elif fmt == "csv":
        click.echo(render.to_csv(run), nl=False)
    elif fmt == "markdown":
        click.echo("\n".join(render.to_markdown(t) for t in render.run_tables(run, threshold)))
    else:
        from gpubench.session import print_run

        from gpubench.session import console as make_console

        console = make_console()
        console.print(f"[bold]{file}[/]: {run.device}, {len(run.points)} points, {run.status}, {run.created}")
        print_run(run, console, threshold)
    return 0


@cli.command()
@click.option("--backend", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True)
def env(backend):
    """Print the GPU and software environment that runs record.

    \b
    Example:
      gpubench env
    """
    import json

    from gpubench import environment
    from gpubench.backends import open_backend

    click.echo(json.dumps(environment.collect(open_backend(backend)), indent=2))
    return 0


@cli.command(name="list")
def list_variants():
    """List the variants of every op and backend, and the shipped suites.

    \b
    Example:
      gpubench list
    """
    from rich.table import Table

    table = Table("op", "backend", "variant", "axis", "what it is", title="variants", title_justify="left")
    for v in registry.VARIANTS:
        axis = {"block": "block sizes", "tile": ", ".join(c.label for c in v.configs), "none": "-",
                "tuned": "per shape, from `gpubench tune gemm`"}[v.axis]
        table.add_row(v.op, v.backend, v.name + ("" if v.lab else " (extra)"), axis, v.summary)
    from gpubench import suites
    from gpubench.session import console

    out = console()
    out.print(table)
    shipped = Table("suite", "what it runs", title="suites (gpubench run NAME)", title_justify="left")
    for name, description in suites.shipped():
        shipped.add_row(name, description)
    out.print(shipped)
    return 0


def main():
    cli()


@cli.group()
def tune():
    """Search kernel parameters for this GPU and cache the winners."""


@tune.command(name="gemm")
@click.option("--sizes", default="2048,4096,8192", show_default=True, help="Square sizes to tune for.")
@click.option("--mnk", multiple=True, help="A non-square M,N,K to tune for (repeatable).")
@click.option("--candidates", default=48, show_default=True, type=click.IntRange(1),
              help="How many configurations of the search space to try (the default one always among them).")
@click.option("--refine", default=1, show_default=True, type=click.IntRange(0),
              help="Rounds of local search: try every one-parameter change of the best two so far.")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed for sampling the space and inputs.")
def tune_gemm(sizes, mnk, candidates, refine, seed):
    """Autotune the double-buffered warp-tiled GEMM (BM, BN, BK, warp tile, TM, TN, swizzle, registers) per shape.

    Winners go to configs/tuned/<device>.json; the `tuned` gemm variant then uses them.

    \b
    Example:
      gpubench tune gemm --sizes 4096,8192 --mnk 8192,2048,4096
      gpubench gemm --variants tuned,cublas --sizes 4096,8192
    """
    from gpubench import tune as tuner
    from gpubench.backends import open_backend
    from gpubench.session import console

    shapes = [GemmShape(s, s, s) for s in options.sizes(sizes)] + [GemmShape(*options.mnk(t)) for t in mnk]
    backend = open_backend("cuda")
    out = console()
    best: dict = {}

    def report(shape, config, ms, why):
        if ms is None:
            out.print(f"[dim]{shape.label} {config.label}: skipped ({why})[/]")
            return
        if ms < best.get(shape, float("inf")):
            best[shape] = ms
            out.print(f"{shape.label} {config.label}: {ms:.3f} ms, {shape.flops / ms / 1e6:,.0f} GFLOPS (best so far)")

    path = tuner.tune(backend, shapes, tuner.candidates(candidates, seed), seed, refine, on_result=report)
    out.print(f"saved the winners to {path}")
    return 0


@cli.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.argument("base")
@click.argument("new")
@click.option("--threshold", default=0.05, show_default=True, type=click.FloatRange(0.0, min_open=True),
              help="Smallest change that counts (0.05 = 5%).")
@click.option("--alpha", default=0.05, show_default=True, type=click.FloatRange(0.0, 1.0, min_open=True,
                                                                                 max_open=True),
              help="Family-wise error rate over all points compared.")
@click.option("--format", "fmt", type=click.Choice(["table", "markdown", "json"]), default="table",
              show_default=True)
@click.option("--strict-env", is_flag=True, help="Refuse runs from different GPUs, drivers or libraries (exit 2).")
@click.option("--fail-on-inconclusive", is_flag=True, help="Exit 3 when nothing regressed but some points "
                                                           "could not be decided.")
def compare(base, new, threshold, alpha, fmt, strict_env, fail_on_inconclusive):
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
    """
    from gpubench import compare as cmp
    from gpubench import render_compare, results
    from gpubench.session import console

    base_run, new_run = results.load(base), results.load(new)
    report = cmp.compare(base_run, new_run, threshold, alpha)
    if strict_env and report.env_diffs:
        name, a, b = report.env_diffs[0]
        raise GpubenchError(f"--strict-env: the runs' environments differ ({name}: {a} vs {b}"
                            f"{f' and {len(report.env_diffs) - 1} more' if len(report.env_diffs) > 1 else ''})")
    if not report.changes and not report.not_measured:
        raise GpubenchError(f"{base} and {new} have no points in common: nothing to compare")
    code = report.exit_code(fail_on_inconclusive)
    if fmt == "json":
        click.echo(render_compare.to_json_report(report, code))
    elif fmt == "markdown":
        click.echo(render_compare.to_markdown_report(report, base, new))
    else:
        render_compare.print_rich(report, console(), base, new)
    return code


@cli.command()
@click.argument("suite")
@click.option("-o", "--output", default=None, type=click.Path(dir_okay=False),
              help="Results file (default: results/<device>/<suite>-<time>.json).")
@click.option("--backend", type=click.Choice(["cuda", "cpu"]), default="cuda", show_default=True)
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--tf32", is_flag=True, help="Allow TF32 tensor cores in cuBLAS/cuDNN (or set tf32 = true in the suite).")
@click.option("--max-noise", default=None, type=click.FloatRange(0.0, min_open=True),
              help="Adaptive sampling for every sweep: sample until IQR/median is under this ...")
@click.option("--max-time", default=None, type=click.FloatRange(0.0, min_open=True),
              help="... or until this many seconds went into the point.")
def run(suite, output, backend, seed, tf32, max_noise, max_time):
    """Run a suite of sweeps (configs/*.toml) into one results file.

    \b
    Examples:
      gpubench run configs/lab.toml
      gpubench run ci -o ci-new.json && gpubench compare results/ci-baseline.json ci-new.json
    """
    from gpubench import suites
    from gpubench.session import execute

    s = suites.load(suite, backend)
    for sweep in s.sweeps:
        changes = {k: v for k, v in (("max_noise", max_noise), ("max_time_s", max_time)) if v is not None}
        if changes:
            sweep.policy = TimingPolicy(**{**sweep.policy.as_dict(), **changes})
    return execute(s.sweeps, backend_name=backend, tf32=tf32 or s.tf32, seed=seed, output=output, label=s.name,
                   argv=["gpubench", *sys.argv[1:]])


@cli.command()
@click.argument("file")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Image file (.png, .svg).")
def plot(file, output):
    """Plot a saved run: GFLOPS (GEMM) or GB/s (conv) against size, one line per variant, bands from the spread.

    \b
    Example:
      gpubench plot results/nvidia-h200/lab.json -o lab.png
    """
    from gpubench import plot as plotting
    from gpubench import results

    click.echo(f"wrote {plotting.plot(results.load(file), output)}")
    return 0
