"""gpubench as a library: measure a callable under gpubench's protocol, run sweeps and suites, compare runs.

    from gpubench import api

    m = api.measure(my_matmul, api.gemm(4096), arrays="torch")      # verified against float64, then timed
    m.median_ms, m.spread, m.rel_err, m.ok, m.telemetry, m.joules_per_call, m.reported

    outcome = api.run_suite("quick", backend="cpu", output="q.json")  # the run `gpubench show` reads
    report = api.compare("base.json", outcome.run)                   # the verdicts of `gpubench compare`

`measure` takes a function written like a Python variant: it receives the problem's arrays (A, B, C or x, w, y) and
dims in the order of `args`, its parameters as keywords, and writes the output. The inputs are drawn fresh, the
output poisoned with NaN, one call checked against the float64 reference (or a reference you pass), then the call
is timed exactly as a sweep times a variant (warm-up, L2 flush, events on the timed stream, queued batches for
short calls, telemetry and energy on a GPU). It runs in the caller's process, so that any callable can be measured
(and other timers run beside it); a kernel that faults there faults the caller. Sweeps and suites run in gpubench's
isolated workers, as `gpubench gemm|conv|run` do: those functions call the same use cases as the command line
(gpubench/usecases/commands.py) and return its RunOutcome (`.run`, `.path`, `.exit_code`).
"""

from __future__ import annotations

import contextlib
import functools
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Mapping, Sequence

from gpubench.planning import plan
from gpubench.planning.plan import Spread
from gpubench.planning.settings import OutputSettings, RunSettings, Selection, Settings, TimingSettings
from gpubench.core import user_code
from gpubench.analysis.compare import Report
from gpubench.core.dtypes import parse_dtypes, parse_layouts
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout
from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError, NoDevice, NoDeviceInTheApi, OtherBackendOnly, Skip
from gpubench import ops
from gpubench.ops.base import Shape
from gpubench.ops.conv import STRIDES, ConvShape, conv_shape, fused_from
from gpubench.ops.gemm import GemmShape
from gpubench.results import Point, Run, Status, load, save
from gpubench.execution.tasks import PointTask, run_point, unmeasured
from gpubench.specs.runners import Arrays, PythonGpuRunner, PythonRunner
from gpubench.usecases.session import RunOutcome
from gpubench.specs.parse import BACKENDS
from gpubench.measure.stats import Stats
from gpubench.specs.variant import CatalogEntry, Code, Config, Program, Scope, Variant, config_label

__all__ = ["Measurement", "measure", "gemm", "conv", "problem", "run_sweep", "run_suite", "compare", "load", "save",
           "GemmShape", "ConvShape", "Run", "Point", "RunOutcome", "Report"]

Problem = Shape  # any op's problem: gemm(...), conv(...), or a declared op's


# --- problems ---------------------------------------------------------------------------------------------------


def gemm(m: int, n: int | None = None, k: int | None = None, *, dtype: str = "fp32", layout: str = "nn") -> GemmShape:
    """C[m,n] = A[m,k] · B[k,n] in a precision (fp32, tf32, fp16, bf16, fp8, int8) and layout (nn, nt, tn);
    gemm(4096) is square, in FP32."""
    return GemmShape(m, m if n is None else n, m if k is None else k, dtype=_one(dtype, "dtype"),
                     layout=_one(layout, "layout", GemmLayout))


def conv(size: int, stride: int = 1, *, batch: int = 1, in_channels: int = 3, out_channels: int = 1, kernel: int = 3,
         padding: str | int = "same", dtype: str = "fp32", layout: str = "nchw", epilogue: str = "none",
         alpha: float | None = None, beta: float = 1.0, gamma: float = 1.0, scaling: str = "tensor") -> ConvShape:
    """A size × size convolution layer (the lab's defaults: one image, 3 channels in, one filter, 3×3, SAME,
    FP32, NCHW), with a fused epilogue y = act(α·s·conv + β·bias + γ·z) where asked (none, bias, bias-relu,
    bias-relu-add; scaling "channel" multiplies α by per-channel scales)."""
    fused = fused_from({"epilogue": epilogue, "alpha": alpha, "beta": beta, "gamma": gamma, "scaling": scaling},
                       lambda key: key)
    if len(fused) != 1:
        raise GpubenchError(f"conv: epilogue {epilogue!r} names {len(fused)} epilogues; give one")
    return conv_shape(size, stride, batch=batch, in_channels=in_channels, out_channels=out_channels, kernel=kernel,
                      padding=padding, dtype=_one(dtype, "dtype"), layout=_one(layout, "layout", ConvLayout),
                      fused=fused[0])


def problem(op: str, *, dtype: str = "fp32", config: str | None = None, **sizes):
    """One problem of any op, your project's own included: problem("softmax", rows=4096, cols=1024) (each size
    one value; the op's parameters otherwise as a suite's sweep gives them: problem("conv", sizes=[56], strides=[1],
    batch=32)). `config` names the project file (None: found from here upwards, as the command line does)."""
    from gpubench.specs import project as projects

    projects.load(config)  # a project's [[op]] tables are ops from here on
    definition = ops.get(op)
    given = {k: (list(v) if isinstance(v, (list, tuple)) else [v] if k in definition.dims else v)
             for k, v in sizes.items()}
    unknown = sorted(set(given) - definition.suite_keys)
    if unknown:
        raise GpubenchError(f"problem({op!r}): unknown size(s) {', '.join(unknown)}; "
                            f"allowed: {', '.join(sorted(definition.suite_keys))}")
    shapes, _ = definition.problems(given, op, strict=True)
    if len(shapes) != 1:
        raise GpubenchError(f"problem({op!r}) makes {len(shapes)} problems: give one value of each size")
    return replace(shapes[0], dtype=_one(dtype, "dtype"))


def _one(text, what: str, kind=None):
    (value,) = parse_layouts(str(text), kind, what) if kind else parse_dtypes(str(text), what)
    return value


# --- measuring one callable -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Measurement:
    """One callable measured on one problem: the point a run would save, and what a caller asks of it."""

    point: Point
    backend: str
    variant: Mapping[str, object]  # the record a run keeps of what was measured (Variant.record())

    @property
    def status(self) -> Status:
        return self.point.status

    @property
    def ok(self) -> bool:
        """Verified within its tolerance, and timed."""
        return self.point.status == Status.OK

    @property
    def samples_ms(self) -> tuple[float, ...]:
        return self.point.samples_ms

    @property
    def stats(self) -> Stats | None:
        return self.point.timing

    @property
    def median_ms(self) -> float | None:
        return self.point.median_ms

    @property
    def spread(self) -> float | None:
        """The interquartile range over the median."""
        return self.point.timing.rel_iqr if self.point.timing else None

    @property
    def rel_err(self) -> float | None:
        return self.point.rel_err

    @property
    def gflops(self) -> float | None:
        return self.point.gflops

    @property
    def telemetry(self) -> dict | None:
        """Clocks and power after each sample, throttling, and energy (on a GPU, through NVML)."""
        return self.point.telemetry

    @property
    def joules_per_call(self) -> float | None:
        return (self.point.telemetry or {}).get("joules_per_call")

    @property
    def reported(self) -> dict:
        """What the callable returned on its first call (a mapping: what it chose)."""
        return dict(self.point.details.reported)

    @property
    def first_call_ms(self) -> float | None:
        """The first call on the host: where JIT compilation and autotuning happen."""
        return self.point.details.first_call_ms


_backends: dict[str, object] = {}


def backend_for(name: str):
    """The backend `measure` uses in this process, opened once (the CUDA one's context, probes and telemetry take
    seconds); GpubenchError naming what is missing where it cannot open. backend_for(name).environment() is what a
    run records of the machine."""
    if name not in _backends:
        if name not in BACKENDS:
            raise GpubenchError(f"measure: backend {name!r}; allowed: {', '.join(BACKENDS)}")
        from gpubench.backends import open_backend

        try:
            _backends[name] = open_backend(name)
        except NoDevice as e:  # its advice names the command line's flag; here the way around is the keyword
            raise NoDeviceInTheApi(e.args[0]) from None
    return _backends[name]


def _call_args(problem: Problem, args: Sequence[str] | None) -> tuple[str, ...]:
    op = ops.of(problem)
    arrays = tuple(ops.laid_out_arrays(problem))  # the problem's own (an epilogue's bias and residual too)
    scalars = op.scalars if not problem.fused.default else ()  # the epilogue's factors
    names = tuple(args) if args is not None else arrays + scalars + op.dims
    unknown = [a for a in names if a not in op.array_names + op.scalars + op.dims]
    missing = [a for a in arrays if a not in names]
    if unknown or missing or len(set(names)) < len(names):
        raise GpubenchError(f"args {list(names)}: give each of {', '.join(arrays)} once, and any of "
                            f"{', '.join(scalars + op.dims)}")
    return names


def measure(fn: Callable, problem: Problem, *, name: str | None = None, args: Sequence[str] | None = None,
            params: Mapping[str, int] | None = None, precision: str | None = None, backend: str = "cuda",
            arrays: str | None = None,
            tolerance: float | None = None, reference=None, seed: int = 0, warmup: int = 3, reps: int = 50,
            budget: float = 1.0, flush: bool = True, max_noise: float | None = None, max_time: float = 10.0,
            decide: float | None = None, pace: str = plan.DEFAULTS.timing.pace,
            settle: float = plan.DEFAULTS.timing.settle_s,
            cooldown: float = plan.DEFAULTS.timing.cooldown_s, clock: str = plan.DEFAULTS.timing.clocks,
            graph: int = 0) -> Measurement:
    """Verify `fn` on `problem`, then time it under gpubench's protocol.

    fn(*arrays_and_dims, **params) writes the output (C or y). `args` orders what it receives (default: the arrays,
    then every dim). On the cuda backend the arrays are CuPy arrays, or PyTorch tensors with arrays="torch"; work
    must go to the current stream. The problem's precision (gemm(4096, dtype="bf16")) sets the inputs' type and
    the error model's tolerance; `tolerance` sets another. `precision=` names a keyword that fn receives the
    precision by ("tf32"), where it needs to know. `reference` replaces
    gpubench's float64 result: an array, or a function of the inputs (a dict: A, B or x, w) returning one.
    `decide` defaults to 5% on a GPU (sample on until a later comparison at 5% could be decided).
    `pace`: "idle" (the default) times each call after the GPU waited for the host, "sustained" times calls in a
    steady back-to-back stream (each still flushed and between its own events) once they have run `settle` seconds
    and their time stopped drifting: under sustained load, as triton.testing.do_bench does. `cooldown`: seconds
    the GPU idles before the first call (a rested card, whatever ran before).
    `clock`: "both" records CUPTI's kernel times beside the events (point.details.kernel_ms, .kernels; needs
    cupti-python); `graph`: N > 0 times each call as one launch of a CUDA graph of N captured calls.
    A mapping `fn` returns on its first call is kept as `reported`."""
    if not callable(fn):
        raise GpubenchError(f"measure: {fn!r} is not callable")
    be = backend_for(backend)
    if backend == BackendKind.CUDA:
        try:
            runner = PythonGpuRunner(Arrays(arrays or Arrays.CUPY))
        except ValueError as e:
            raise GpubenchError(f"measure: {e}") from None
    elif arrays is not None:
        raise OtherBackendOnly(f"measure: arrays={arrays!r} is for the cuda backend; on {backend} they are NumPy's")
    else:
        runner = PythonRunner()
    params = dict(params or {})
    label = config_label(None, params, {})
    name = name or str(getattr(fn, "__name__", "measured"))
    if not name.isprintable():  # it names the point's row in tables and files (results.Point checks it too)
        raise GpubenchError(f"measure: name={name!r} must be printable text (no newline or control character)")
    program = Program(kernel=getattr(fn, "__name__", "fn"), args=_call_args(problem, args), dtype_define=precision,
                      function=fn)
    variant = Variant(name=name, op=problem.op, backend=backend, code=Code(runner, program),
                      entry=CatalogEntry(origin="measure"),
                      scope=Scope(layouts=(problem.layout,), dtypes=(problem.dtype,), tolerance=tolerance,
                                  epilogues=(problem.fused.epilogue,)))
    config = Config(label, tuple(params.items()))
    user_code.check(variant, [config])
    if not isinstance(flush, bool):
        raise GpubenchError(f"measure: flush must be true or false, got {flush!r}")
    timing = TimingSettings(warmup=warmup, reps=reps, budget=budget, max_noise=max_noise, max_time=max_time,
                            no_flush=not flush, decide=decide, pace=pace, settle=settle, cooldown=cooldown,
                            clock=clock, graph=graph)
    policy = timing.policy(backend, where=lambda key: f"measure: {key}")
    plan.check_graph(backend, [policy])
    task = PointTask(0, variant, config, policy)
    try:
        inputs = be.inputs(problem, seed)
        if reference is None:
            ref = be.reference(problem, inputs)
        else:
            given = reference(inputs) if callable(reference) else reference
            ref = be.xp.asarray(given, dtype=be.xp.float64)
        point = run_point(be, problem, task, inputs, ref)
    except Skip as why:
        point = unmeasured(problem, task, Status.SKIPPED, str(why))
    finally:
        be.collect()
    return Measurement(point, backend, variant.record())


# --- sweeps, suites and comparisons: the command line's use cases -------------------------------------------------


class Quiet:
    """A Display that shows nothing: the library's callers read the outcome instead."""

    def skipped(self, what: str, why: str) -> None:
        pass

    def unlocked_clocks(self, telemetry: dict) -> None:
        pass

    @contextlib.contextmanager
    def progress(self, label: str, total: int):
        yield lambda point: None


def _keyword_advice(function):
    """A missing GPU's line names the command line's --backend; from these functions the way around is their
    keyword (NoDeviceInTheApi's advice)."""
    @functools.wraps(function)
    def advised(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except NoDevice as e:
            if isinstance(e, NoDeviceInTheApi):
                raise
            raise NoDeviceInTheApi(e.args[0]) from None

    return advised


@_keyword_advice
def run_sweep(op: str, *, sizes: Sequence[int] = (), mnk: Sequence[tuple[int, int, int]] = (),
              strides: Sequence[int] = STRIDES, conv_layer: Mapping[str, object] | None = None,
              problem: Mapping[str, object] | None = None,
              variants: Sequence[str] | None = None, block_sizes: Sequence[int] | None = None,
              backend: str = "cuda", output: str | Path | None = None, force: bool = False, seed: int = 0,
              dtypes: str | None = None, layouts: str | None = None, reps: int = 50, warmup: int = 3,
              budget: float = 1.0,
              timeout: float | None = None, config: str | None = None, gpus: str | None = None,
              pace: str = plan.DEFAULTS.timing.pace, settle: float | None = None,
              cooldown: float = plan.DEFAULTS.timing.cooldown_s, processes: int = 1, clock: str | None = None,
              graph: int | None = None, display=None) -> RunOutcome:
    """`gpubench gemm|conv|sweep OP` as a function: the sweep run in isolated workers, saved, and returned
    (outcome.run). The op's problems come from its own parameters: sizes, mnk, strides and conv_layer's keys for the
    built-in ones, or any op's as `problem` (e.g. {"rows": [4096], "cols": [1024, 2048]} for a project's softmax).
    dtypes and layouts are --dtype's and --layout's ("fp32,bf16"); pace, settle and cooldown are --pace's,
    --settle's (None: its default; only with pace sustained) and --cooldown's; processes is --processes's (each
    point measured in that many worker processes, interleaved); clock and graph --clock's and --graph's."""
    from gpubench.usecases import commands as app
    from gpubench.specs import project as projects

    projects.load(config)  # a project's [[op]] tables are ops from here on
    definition = ops.get(op)
    given = {"sizes": list(sizes), "mnk": [list(t) for t in mnk], "strides": list(strides), **(conv_layer or {}),
             **(problem or {})}
    shapes, _ = definition.problems({k: v for k, v in given.items() if k in definition.suite_keys}, op, strict=True)
    selection = Selection(variants=list(variants) if variants else None,
                          block_sizes=plan.block_sizes(block_sizes or plan.DEFAULTS.block_sizes, "block_sizes"),
                          block_sizes_given=block_sizes is not None, dtype=dtypes, layout=layouts)
    settings = Settings(TimingSettings(warmup=warmup, reps=reps, budget=budget, pace=pace, settle=settle,
                                       cooldown=cooldown, processes=processes, clock=clock, graph=graph),
                        Spread.from_options(gpus, None), _output(output, force),
                        RunSettings(backend=backend, seed=seed, timeout=timeout, config=config))
    return app.run_op(op, shapes, selection, settings, display or Quiet())


@_keyword_advice
def run_suite(suite: str, *, backend: str = "cuda", output: str | Path | None = None, force: bool = False,
              seed: int = 0, tf32: bool = False, timeout: float | None = None, config: str | None = None,
              gpus: str | None = None, pace: str | None = None, processes: int | None = None,
              clock: str | None = None, graph: int | None = None, display=None) -> RunOutcome:
    """`gpubench run SUITE` as a function (a shipped suite's name or a TOML file); `pace`, `processes`, `clock` and
    `graph` override the suite's."""
    from gpubench.usecases import commands as app

    settings = Settings(TimingSettings(pace=pace, processes=processes, clock=clock, graph=graph),
                        Spread.from_options(gpus, None), _output(output, force),
                        RunSettings(backend=backend, seed=seed, tf32=tf32, timeout=timeout, config=config))
    return app.run_suite(suite, settings, display or Quiet())


def _output(output: str | Path | None, force: bool) -> OutputSettings:
    return OutputSettings(str(output) if output is not None else None, force)


def compare(base: Run | str | Path, new: Run | str | Path, *, threshold: float = plan.DEFAULTS.threshold,
            alpha: float = plan.DEFAULTS.alpha, allow_partial: bool = False,
            thresholds: Run | str | Path | None = None) -> Report:
    """`gpubench compare` as a function: the per-point verdicts; report.exit_code() is the command's exit code.
    Runs may be given as Run objects or as files; `thresholds`, a stability run (`--thresholds`)."""
    from gpubench.analysis import compare as comparing
    from gpubench.analysis import stability

    threshold, alpha = plan.compare_settings(threshold, alpha)
    runs = [r if isinstance(r, Run) else load(r) for r in (base, new)]
    names = [str(r) if not isinstance(r, Run) else what for r, what in ((base, "base"), (new, "new"))]
    by_duration = stability.suggested_thresholds(thresholds) if thresholds is not None else None
    report = comparing.compare(runs[0], runs[1], threshold, alpha, by_duration)
    comparing.check(report, False, names[0], names[1], (runs[0], runs[1]), allow_partial)
    return report
