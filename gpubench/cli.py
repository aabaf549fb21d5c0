"""The command line, click only: each command parses its options (gpubench/options.py), calls one use case
(gpubench/usecases/commands.py), chooses a view (gpubench/views/terminal.py) and returns an exit code (gpubench/core/exit_codes.py).
Rules live in the plan and compare layers, defaults in plan.DEFAULTS; errors end as one line (command.py). The
commands that read saved runs (show, compare, plot, report, history) are in gpubench/cli_saved.py."""

from __future__ import annotations

import click

from gpubench import __version__, cli_saved, options
from gpubench.usecases import commands as app
from gpubench.command import OneLineErrors
from gpubench.core.backend_kind import BackendKind
from gpubench.core.exit_codes import Exit
from gpubench.options import (CONFIG, DECIDING, MANY_GPUS, OUTPUT, PACING, PROCESSES, PROFILE, RUNNING, group,
                              problem_options, problem_values, sweep_options)
from gpubench.planning.plan import DEFAULTS
from gpubench import ops
from gpubench.usecases.profiling import Profiling
from gpubench.specs import backend_choice
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


def _profiling(profile) -> Profiling:
    """--profile's flag, or the mode `gpubench profile` passes its commands."""
    return profile if isinstance(profile, Profiling) else Profiling.ALONG if profile else Profiling.OFF


def _sweep(ctx, op: str, shapes, kw) -> int:
    given = ctx.get_parameter_source("block_sizes") == click.core.ParameterSource.COMMANDLINE
    profile = _profiling(kw.pop("profile", None))
    notes = _backend(kw)
    settings = options.settings(kw)
    selection = options.selection(kw, given)
    outcome = app.run_op(op, shapes, selection, settings, terminal.LiveDisplay(notes), profile)
    with terminal.reader_may_leave():
        terminal.run_outcome(outcome)
    return outcome.exit_code


def _op_command(op):
    """Each built-in op's sweep command (gpubench gemm, gpubench conv, ...): its own problem options over the
    options every sweep shares."""
    @click.pass_context
    def command(ctx, **kw):
        shapes, _ = op.problems(problem_values(op, kw), op.name, strict=True)
        return _sweep(ctx, op.name, shapes, kw)

    command.__doc__ = op.command_help or f"Sweep {op.noun} variants: verify, time, tabulate, save."
    return cli.command(name=op.name)(sweep_options(op)(problem_options(op)(command)))


for _op in ops.builtin():
    _op_command(_op)


@cli.command(context_settings={"ignore_unknown_options": True, "allow_extra_args": True})
@click.argument("op_name", metavar="OP")
@sweep_options(ops.builtin()[0])
@click.pass_context
def sweep(ctx, op_name, **kw):
    """Sweep any op, yours included (an [[op]] of your gpubench.toml): its sizes as --DIM values, comma-separated.

    \b
    Examples:
      gpubench sweep softmax --rows 4096 --cols 1024,4096 --backend cpu
      gpubench sweep gemm --sizes 512,1024
    """
    op, shapes = app.op_problems(op_name, ctx.args, kw.get("config"))
    return _sweep(ctx, op, shapes, kw)


@cli.command()
@click.argument("suite")
@group(OUTPUT + RUNNING + options.ADAPTIVE + DECIDING + PACING + PROCESSES + MANY_GPUS + [PROFILE])
def run(suite, **kw):
    """Run a suite of sweeps (a shipped one by name, or a TOML file) into one results file.

    \b
    Examples:
      gpubench run lab
      gpubench run my-suite.toml --backend cpu
      gpubench run ci -o ci-new.json && gpubench compare results/nvidia-h100-80gb-hbm3/ci.json.gz ci-new.json
      gpubench run lab --gpus all                      # the suite shared out over every GPU (Dask)
      gpubench run lab --gpus id:1                     # on the second GPU alone
      gpubench run ci --gpus all --replicate           # every GPU runs it: exit 4 names a slow one
      gpubench run ci --pace sustained                 # every sweep timed in a steady back-to-back stream
      gpubench run lab --processes 2                   # every point in two processes, interleaved
    """
    profile = _profiling(kw.pop("profile", None))
    notes = _backend(kw)
    outcome = app.run_suite(suite, options.settings(kw, whole=True), terminal.LiveDisplay(notes), profile)
    with terminal.reader_may_leave():
        terminal.run_outcome(outcome)
    return outcome.exit_code


# --- profiling ------------------------------------------------------------------------------------------------


@cli.group(name="profile")
def profile_group():
    """Time points as gemm, conv and run do, then profile one timed call of each under Nsight Compute (after its
    warm-up) and save its counters with the point: SM, DRAM and L2 throughput, occupancy, registers, spills, the
    tensor pipe, bytes, instructions, the three largest stall reasons. `show` and `report` then say what limits
    each point. Needs the cuda backend and ncu (one line, exit 2, where either is missing).

    \b
    Examples:
      gpubench profile gemm --sizes 4096 --variants global,shared,tiled,cublas
      gpubench profile conv --variants tc-wgmma-tma,cudnn --dtype fp16 --layout nhwc --sizes 14 --batch 128 \\
        --in-channels 256 --out-channels 256
      gpubench profile run my-suite.toml
      gpubench show results/nvidia-h200/gemm-....json     # the "what limits it" table
    """


def _asked(command: click.Command) -> click.Command:
    """`gpubench profile NAME`: the command with its selection options, profiling asked for (no --profile flag)."""
    def callback(**kw):
        return command.callback(**kw, profile=Profiling.ASKED)

    return type(command)(command.name, callback=callback, params=[p for p in command.params if p.name != "profile"],
                         help=f"`gpubench {command.name}`'s points, each timed call profiled: see `gpubench "
                              f"{command.name} --help` for the options.", context_settings=command.context_settings)


for _command in (*(cli.commands[op.name] for op in ops.builtin()), cli.commands["sweep"], run):
    profile_group.add_command(_asked(_command))


@cli.command()
@group(options.STABILITY + OUTPUT + RUNNING + PROCESSES + [options.CLOCK])
def stability(suite, runs, threshold, alpha, keep_runs, output, force, backend, seed, tf32, timeout, config, processes,
              clock):
    """A/A: run a suite R times in fresh processes and report, per point and per duration class, how often identical
    code got a slower or faster verdict, the smallest change decided with 95% power, and a threshold to use.

    \b
    Examples:
      gpubench stability lab -R 10
      gpubench stability my-suite.toml --backend cpu -R 3 -o aa.json
      gpubench stability lab -R 10 --processes 2       # as compare would judge runs of two processes
      gpubench stability lab -R 10 --clock both        # compared by the events and by the kernels' own times
      gpubench show aa.json                            # the saved stability run, its A/A tables again
    """
    from gpubench.usecases.stability import StabilityRequest, run_stability

    backend = backend_choice.choose(backend, config).name  # --backend, else GPUBENCH_BACKEND, the project's, a guess
    outcome = run_stability(StabilityRequest(suite, runs, backend, seed, tf32, timeout, config, output, force,
                                             processes, clock, threshold, alpha, keep_runs), terminal.LiveDisplay())
    with terminal.reader_may_leave():
        terminal.stability_outcome(outcome)
    return outcome.exit_code


@cli.command()
@options.ab_options()
def ab(**kw):
    """A against B inside one process: two variants, two sources of a kernel, or a kernel file at two git
    revisions, on the same inputs. Each round times their calls in turn, call by call, counterbalanced
    (A B B A ..., then B A A B ...); its ratio is the median over its quartets of calls of B/A, and the rounds'
    ratios decide. Given saved runs instead (one a round, each its own process), each kernel's ratio to --baseline
    over them.

    \b
    Exit codes: 0 B same as or faster than A, 1 B slower (or a side failed), 3 inconclusive.

    \b
    Examples:
      gpubench ab tiled vec --size 2048
      gpubench ab sliding@16 sliding@32 --op conv --size 64 --stride 2
      gpubench ab --kernel old=old.cu:conv_k --kernel new=new.cu:conv_k --op conv --size 256
      gpubench ab --rev HEAD~1 --rev HEAD kernels/my_gemm.cu:my_gemm --size 4096
      gpubench ab round-1.json round-2.json round-3.json --baseline cublas --format markdown
    """
    from gpubench.usecases import ab as ab_case
    from gpubench.views import ab as ab_view

    if ab_case.is_rounds(kw["sides"]) and not (kw["kernels"] or kw["revs"]):
        from gpubench.views import rounds as rounds_view

        table = ab_case.from_rounds(list(kw["sides"]), kw["baseline"], kw["level"], kw["any_power_state"],
                                    kw["screen"], kw["keep"])
        with terminal.reader_may_leave():
            click.echo(rounds_view.render(table, kw["fmt"]))
        return Exit.OK
    kw["backend"] = backend_choice.choose(kw["backend"], kw["config"]).name  # --backend, else GPUBENCH_BACKEND, ...
    outcome = ab_case.run_ab(options.ab_request(kw))
    with terminal.reader_may_leave():
        ab_view.show(outcome, kw["fmt"], click.echo)
    return outcome.exit_code


# --- saved runs: show, compare, plot, report and history live in gpubench/cli_saved.py -------------------------

for _command in (cli_saved.show, cli_saved.compare, cli_saved.plot, cli_saved.report, cli_saved.history):
    cli.add_command(_command)


# --- the machine and the catalog ------------------------------------------------------------------------------


@cli.command()
@click.option("--backend", type=click.Choice([k.value for k in BackendKind]), default=None, help=options.BACKEND_HELP)
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


TUNE = [
    click.option("--variant", default="tuned", show_default=True, help="A variant with a [variant.search] space."),
    click.option("--candidates", default=DEFAULTS.tune_candidates, show_default=True, type=click.IntRange(1),
                 help="How many configurations of the search space to try (the variant's own first among them)."),
    click.option("--refine", default=DEFAULTS.tune_refine, show_default=True, type=click.IntRange(0),
                 help="Rounds of local search: try every one-parameter change of the best two so far."),
    click.option("--seed", default=DEFAULTS.seed, show_default=True, type=int,
                 help="Seed for sampling the space and inputs."),
    click.option("--timeout", default=DEFAULTS.timeout_s, show_default=True, type=float,
                 help="Watchdog per candidate, seconds."),
    click.option("--gpus", default=None, metavar="all|N|0,2|id:1", help="Spread the candidates over several GPUs "
                                                                        "of one model (id:1: that one GPU)."),
    click.option("--scheduler", default=None, metavar="ADDRESS", help="Spread them over an existing Dask cluster."),
    CONFIG,
]


def _tune_command(op):
    """`gpubench tune OP`: the op's problem options (square sizes default to DEFAULTS.tune_sizes)."""
    def command(variant, **kw):
        from gpubench.views.tables import escape

        from gpubench.usecases.autotune import Search

        values = {"sizes": DEFAULTS.tune_sizes, **problem_values(op, kw)}
        shapes, _ = op.problems(values, op.name, strict=True)
        out = terminal.console()
        search = Search(kw.pop("candidates"), kw.pop("refine"))
        path = app.tune(op.name, variant, shapes, search, options.settings(kw, whole=True), out)
        out.print(escape(f"saved the winners to {path}"))
        return Exit.OK

    command.__doc__ = f"""Autotune a {op.noun} variant's parameters per shape (for `tuned`: tiles, warp tiles, swizzle,
    registers).

    Winners go to your project's tuned directory (gpubench.toml: tuned = "DIR") or else to the user's config
    directory (~/.config/gpubench/tuned); the variant's `tuned` axis then uses them.

    \b
    Examples:
      gpubench tune {op.name} --sizes 4096,8192 --candidates 200 --gpus all
      gpubench tune {op.name} --sizes 4096 --refine 2
      gpubench {op.name} --variants tuned --sizes 4096,8192
    """
    return tune.command(name=op.name)(group(TUNE)(problem_options(op, {"sizes": DEFAULTS.tune_sizes})(command)))


for _op in ops.builtin():
    _tune_command(_op)
