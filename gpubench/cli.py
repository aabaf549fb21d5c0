"""The command line, click only: each command parses its options (gpubench/options.py), calls one use case
(gpubench/usecases/commands.py), chooses a view (gpubench/views/terminal.py) and returns an exit code (gpubench/core/exit_codes.py).
Rules live in the plan and compare layers, defaults in plan.DEFAULTS; errors end as one line (command.py)."""

from __future__ import annotations

import click

from gpubench import __version__, options
from gpubench.usecases import commands as app
from gpubench.command import OneLineErrors
from gpubench.core.exit_codes import Exit
from gpubench.options import CONFIG, DECIDING, MANY_GPUS, OUTPUT, PACING, RUNNING, group, sweep_options
from gpubench.planning.plan import DEFAULTS
from gpubench.specs import backend_choice
from gpubench.ops.problems import Op
from gpubench.views import terminal

LAB_SIZES = DEFAULTS.text(DEFAULTS.sizes)


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

    \b
    No GPU? Where PyCUDA or CuPy is not installed, commands run on the CPU
    backend (NumPy) and say so once; to choose, for one command or for all:
      gpubench run quick --backend cpu
      export GPUBENCH_BACKEND=cpu          # or backend = "cpu" in gpubench.toml

    \b
    Extras: gpubench history needs pip install 'gpubench[history]' (ruptures),
    gpubench plot needs pip install 'gpubench[plot]' (matplotlib).
    """


def _backend(kw: dict) -> tuple[str, ...]:
    """Sets kw's backend to --backend where given, else to the default backend_choice finds; the note to show
    (a guessed CPU: said once the run starts, so that a bad option stays a one-line error)."""
    choice = backend_choice.choose(kw["backend"], kw.get("config"))
    kw["backend"] = choice.name
    note = choice.note("--backend")
    return (note,) if note else ()


# --- sweeps ---------------------------------------------------------------------------------------------------


def _sweep(ctx, op: Op, shapes, kw) -> int:
    given = ctx.get_parameter_source("block_sizes") == click.core.ParameterSource.COMMANDLINE
    kw.update(block_sizes=options.block_sizes(kw["block_sizes"]), variants=options.names(kw["variants"]))
    notes = _backend(kw)
    outcome = app.run_op(op, shapes, block_sizes_given=given, display=terminal.LiveDisplay(notes), **kw)
    with terminal.reader_may_leave():
        terminal.run_outcome(outcome)
    return outcome.exit_code


@cli.command()
@sweep_options(LAB_SIZES + " (none with --mnk)", Op.GEMM)
@click.option("--mnk", multiple=True, help="A non-square M,N,K (repeatable).")
@click.pass_context
def gemm(ctx, sizes, mnk, **kw):
    """Sweep GEMM variants over sizes and block sizes; verify, time, tabulate, save.

    \b
    Examples:
      gpubench gemm --sizes 512,1024,2048
      gpubench gemm --mnk 1000,1500,777 --variants tiled,cublas
      gpubench gemm --kernel my_lab.cu:gpu_matrix_mult_sm --sizes 1024,2048
      gpubench gemm --backend cpu --sizes 256
    """
    from gpubench.planning import plan

    sizes = sizes if sizes is not None else ("" if mnk else LAB_SIZES)
    shapes = plan.gemm_shapes(list(options.sizes(sizes)) if sizes or not mnk else [], [options.mnk(t) for t in mnk])
    return _sweep(ctx, Op.GEMM, shapes, kw)


@cli.command()
@sweep_options(LAB_SIZES, Op.CONV)
@group(options.CONV_SHAPE)
@click.pass_context
def conv(ctx, sizes, stride, batch, in_channels, out_channels, kernel_size, padding, **kw):
    """Sweep convolution variants over input sizes and strides; verify, time, tabulate, save.

    \b
    Examples:
      gpubench conv --stride 1,2,3
      gpubench conv --sizes 56 --batch 32 --in-channels 64 --out-channels 64 --padding 1 --stride 1
      gpubench conv --kernel my_conv.cu:conv_lab --args x,w,y,H,W,C,R,stride,pad,OH,OW --sizes 1024
      gpubench conv --backend cpu --sizes 64,100 --stride 1,2,3
    """
    from gpubench.planning import plan

    shapes, _ = plan.conv_shapes(options.sizes(sizes if sizes is not None else LAB_SIZES), options.strides(stride),
                                 batch=batch, in_channels=in_channels, out_channels=out_channels, kernel=kernel_size,
                                 padding=padding, name="conv", strict=True)
    return _sweep(ctx, Op.CONV, shapes, kw)


@cli.command()
@click.argument("suite")
@group(OUTPUT + RUNNING + options.ADAPTIVE + DECIDING + PACING + MANY_GPUS)
def run(suite, **kw):
    """Run a suite of sweeps (a shipped one by name, or a TOML file) into one results file.

    \b
    Examples:
      gpubench run lab
      gpubench run my-suite.toml --backend cpu
      gpubench run ci -o ci-new.json && gpubench compare results/nvidia-h100-80gb-hbm3/ci.json ci-new.json
      gpubench run lab --gpus all                      # the suite shared out over every GPU (Dask)
      gpubench run lab --gpus id:1                     # on the second GPU alone
      gpubench run ci --gpus all --replicate           # every GPU runs it: exit 4 names a slow one
      gpubench run ci --pace sustained                 # every sweep timed in a steady back-to-back stream
    """
    notes = _backend(kw)
    outcome = app.run_suite(suite, display=terminal.LiveDisplay(notes), **kw)
    with terminal.reader_may_leave():
        terminal.run_outcome(outcome)
    return outcome.exit_code


# --- saved runs -----------------------------------------------------------------------------------------------


@cli.command()
@group(options.SHOWING)
def show(file, example, fmt, threshold):
    """Re-render a saved run (no GPU needed).

    \b
    Examples:
      gpubench show --example               # the H200 lab run shipped with gpubench
      gpubench show run.json --format csv > run.csv
    """
    from gpubench.core import paths

    if (file is None) == (not example):
        raise click.UsageError("give a results FILE or --example (the H200 lab run shipped with gpubench), not both"
                               if example else "give a results FILE, or --example for the run shipped with gpubench")
    if example:
        file = str(paths.example_run())  # its first line names the file: report, plot and compare take it too
    saved = app.load_run(file, threshold)
    with terminal.reader_may_leave():
        terminal.saved_run(saved, file, fmt, threshold, click.echo)
    return Exit.OK


@cli.command()
@group(options.COMPARING)
def compare(base, new, threshold, alpha, fmt, strict_env, fail_on_inconclusive, across, allow_partial):
    """Compare two saved runs point by point and fail only on a real regression.

    \b
    Exit codes:
      0  no significant regression (improvements never fail)
      1  at least one point significantly slower by more than --threshold
      2  usage error, unreadable or incompatible files, a run not complete (without --allow-partial)
      3  only inconclusive results, with --fail-on-inconclusive

    A point whose samples sit in two modes, in either run, is inconclusive rather than slower or faster where the
    two runs share a mode: its median moved because the modes' shares changed, which a rerun can undo. Such a
    point fails CI (3) only with --fail-on-inconclusive; the notes name it and its modes.

    \b
    Examples:
      gpubench compare results/baseline.json new.json
      gpubench compare base.json new.json --format markdown > comment.md
      gpubench compare h100.json h200.json --across      # two GPU models, side by side
      gpubench compare idle.json sustained.json --across # one GPU rested and under sustained load
    """
    c = app.compare_runs(base, new, threshold, alpha, strict_env, allow_partial, across)
    code = Exit.OK if across else c.report.exit_code(fail_on_inconclusive)
    with terminal.reader_may_leave():
        terminal.comparison(c, base, new, fmt, across, code, click.echo)
    return code


@cli.command()
@group(options.PLOTTING)
def plot(file, output, force, roofline):
    """Plot a saved run: GFLOPS (GEMM) or GB/s (conv) against size, one line per variant, bands from the spread;
    or, with --roofline, GFLOPS against arithmetic intensity under the GPU's measured ceilings. Needs the plot
    extra: pip install 'gpubench[plot]' (matplotlib).

    \b
    Examples:
      gpubench plot results/nvidia-h200/lab.json -o lab.png
      gpubench plot run.json --roofline -o roofline.svg
    """
    click.echo(f"wrote {app.plot_run(file, output, force, roofline)}")
    return Exit.OK


@cli.command()
@group(options.REPORTING)
def report(runs, output, force, threshold, across):
    """One HTML page for saved runs: charts, roofline, the lab's tables, every point with its samples and
    telemetry; each later run compared with the first. Opens offline, prints.

    \b
    Examples:
      gpubench report results/nvidia-h200/lab-a.json -o lab.html
      gpubench report base.json new.json -o compare.html
    """
    click.echo(f"wrote {app.write_report(list(runs), output, force, threshold, across)}")
    return Exit.OK


@cli.command()
@group(options.HISTORY)
def history(runs, threshold, alpha, html, force, every):
    """Every point's median across saved runs (files or directories) by commit time, and the commits where it
    stepped; exit 1 when a point's latest change is a slowdown beyond --threshold. Needs the history extra:
    pip install 'gpubench[history]' (ruptures).

    \b
    Examples:
      gpubench history results/nvidia-h200/
      gpubench history ci-runs/ --threshold 0.03 --html history.html
    """
    outcome = app.run_history(list(runs), threshold, alpha, html, force)
    with terminal.reader_may_leave():
        terminal.history(outcome, every, click.echo)
    return outcome.exit_code


# --- the machine and the catalog ------------------------------------------------------------------------------


@cli.command()
@click.option("--backend", type=click.Choice(["cuda", "cpu"]), default=None, help=options.BACKEND_HELP)
def env(backend):
    """Print the GPU and software environment that runs record.

    \b
    Example:
      gpubench env
    """
    import json

    kw = {"backend": backend}
    for note in _backend(kw):
        click.echo(f"note: {note}", err=True)
    click.echo(json.dumps(app.environment(kw["backend"]), indent=2))
    return Exit.OK


@cli.command(name="list")
@CONFIG
def list_variants(config):
    """List every variant (built-in and your project's) and the shipped suites.

    \b
    Example:
      gpubench list
    """
    terminal.listing(app.listing(config))
    return Exit.OK


@cli.command()
@CONFIG
@click.option("--arch", default=DEFAULTS.text(DEFAULTS.arch), show_default=True, help="Architectures to compile for.")
@click.option("--builtin", is_flag=True, help="Also compile gpubench's own kernels.")
@click.option("--block-sizes", default=DEFAULTS.text(DEFAULTS.block_sizes), show_default=True,
              help="Block sizes for block-axis variants.")
def check(config, arch, builtin, block_sizes):
    """Check your project's kernel specs and compile every kernel configuration (needs nvcc, not a GPU).

    \b
    Examples:
      gpubench check
      gpubench check --arch sm_90 --config path/to/gpubench.toml
    """
    project, rows = app.check_project(config, arch, builtin, options.block_sizes(block_sizes))
    with terminal.reader_may_leave():
        terminal.checks(project, rows)
    failed = [e for *_, e in rows if e is not None]
    if failed:
        raise failed[0]
    return Exit.OK


# --- tuning ---------------------------------------------------------------------------------------------------


@cli.group()
def tune():
    """Search kernel parameters for this GPU and keep the winners (needs a GPU).

    \b
    Examples:
      gpubench tune gemm --sizes 4096,8192
      gpubench tune gemm --mnk 8192,2048,4096 --candidates 100
      gpubench tune gemm --sizes 4096 --gpus all
      gpubench gemm --variants tuned,cublas --sizes 4096,8192    # the winners, measured
    """


@tune.command(name="gemm")
@click.option("--variant", default="tuned", show_default=True, help="A gemm variant with a [variant.search] space.")
@click.option("--sizes", default=DEFAULTS.text(DEFAULTS.tune_sizes), show_default=True,
              help="Square sizes to tune for.")
@click.option("--mnk", multiple=True, help="A non-square M,N,K to tune for (repeatable).")
@click.option("--candidates", default=DEFAULTS.tune_candidates, show_default=True, type=click.IntRange(1),
              help="How many configurations of the search space to try (the variant's own first among them).")
@click.option("--refine", default=DEFAULTS.tune_refine, show_default=True, type=click.IntRange(0),
              help="Rounds of local search: try every one-parameter change of the best two so far.")
@click.option("--seed", default=DEFAULTS.seed, show_default=True, type=int,
              help="Seed for sampling the space and inputs.")
@click.option("--timeout", default=DEFAULTS.timeout_s, show_default=True, type=float,
              help="Watchdog per candidate, seconds.")
@click.option("--gpus", default=None, metavar="all|N|0,2|id:1", help="Spread the candidates over several GPUs of "
                                                                     "one model (id:1: that one GPU).")
@click.option("--scheduler", default=None, metavar="ADDRESS", help="Spread them over an existing Dask cluster.")
@CONFIG
def tune_gemm(variant, sizes, mnk, **kw):
    """Autotune a GEMM variant's parameters per shape (for `tuned`: tiles, warp tiles, swizzle, registers).

    Winners go to your project's tuned directory (gpubench.toml: tuned = "DIR") or else to the user's config
    directory (~/.config/gpubench/tuned); the variant's `tuned` axis then uses them.

    \b
    Examples:
      gpubench tune gemm --sizes 4096,8192 --mnk 8192,2048,4096
      gpubench tune gemm --sizes 4096 --candidates 200 --gpus all
      gpubench gemm --variants tuned,cublas --sizes 4096,8192
    """
    from gpubench.planning import plan
    from gpubench.views.tables import escape

    shapes = plan.gemm_shapes(list(options.sizes(sizes)), [options.mnk(t) for t in mnk])
    out = terminal.console()
    path = app.tune_gemm(variant, shapes, out=out, **kw)
    out.print(escape(f"saved the winners to {path}"))
    return Exit.OK
