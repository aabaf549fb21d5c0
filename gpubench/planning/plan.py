"""Sweeps from what the user asked for, checked once, whichever way it came in (command line or suite file),
and the one home of the defaults that the command line, the suites and the problems read (DEFAULTS).

The click commands (gpubench/cli.py) and the suite loader (gpubench/planning/suites.py) parse their own syntax and then
call the builders here, so a rule (at least 5 repetitions, block sizes 1..32, a filter that fits its padded
input, variants that exist, a --kernel name that is new) is written once and says the same thing for both.
`where` names the source of a value in messages: "--reps" on the command line, "suite lab.toml: sweep[1].reps"
in a file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from gpubench.core.backend_kind import BackendKind
from gpubench.core.errors import GpubenchError
from gpubench.analysis.fleet import SLOW
from gpubench.core.gpus import GpuSelection
from dataclasses import replace

from gpubench.core.dtypes import DType, parse_dtypes, parse_layouts
from gpubench import ops
from gpubench.ops.base import LAB_SIZES, ParamKind
from gpubench.specs.parse import LAB_BLOCK_SIZES, MAX_BLOCK_SIZE
from gpubench.specs.catalog import Catalog
from gpubench.execution.sweep import Sweep
from gpubench.measure.kernel_clock import Clocks
from gpubench.measure.timing import Pace, TimingPolicy, pace_of
from gpubench.specs.variant import Axis, Variant

from gpubench.execution.processes import MAX_PROCESSES
from gpubench.execution.worker import DEFAULT_TIMEOUT_S

MIN_REPS = 5  # a median, an IQR and compare's rank interval need a handful of samples
DECIDE = 0.05  # on a GPU, sample on until a comparison at 5% (compare's default) could be decided
MAX_TIMEOUT_S = 7 * 24 * 3600  # a week: past this a watchdog means nothing (and the OS's timers overflow)


@dataclass(frozen=True)
class Defaults:
    """Every default a user sees, in one place: the command line shows these, suites and problems start from them."""

    sizes: tuple[int, ...] = LAB_SIZES  # the lab's square sizes (each op's own defaults: gpubench/ops/<op>.py)
    block_sizes: tuple[int, ...] = LAB_BLOCK_SIZES
    timing: TimingPolicy = TimingPolicy()  # warm-up, repetitions, budget, max time, flush
    timeout_s: float = DEFAULT_TIMEOUT_S
    seed: int = 0
    threshold: float = DECIDE  # compare's smallest change that counts (and show's noise flag)
    alpha: float = 0.05  # compare's family-wise error rate
    slow_threshold: float = SLOW  # --replicate: how much slower than the node's median a GPU may be
    arch: tuple[str, ...] = ("sm_80", "sm_90")  # `gpubench check` compiles for these
    tune_sizes: tuple[int, ...] = (2048, 4096, 8192)
    tune_candidates: int = 48
    tune_refine: int = 1

    @staticmethod
    def text(values) -> str:
        """A tuple as the command line writes it: 512,1024."""
        return ",".join(str(v) for v in values)


DEFAULTS = Defaults()


def default_preheat(backend: str) -> float:
    """GPU runs burn the GPU after it idled; the CPU backend has no such state to bring about."""
    return PREHEAT_S if backend == BackendKind.CUDA else 0.0


def default_places(backend: str) -> int:
    """GPU runs time a small call on several sets of its buffers (backends/cuda/placement.py); the host's NumPy
    arrays have no such places."""
    return PLACES if backend == BackendKind.CUDA else 1


def default_decide(backend: str) -> float | None:
    """GPU runs sample on until decidable; host timings of NumPy are not what gpubench compares, so not there."""
    return DECIDE if backend == BackendKind.CUDA else None


_T = TimingPolicy()
MAX_GRAPH = 10_000  # calls captured in one CUDA graph at most
MAX_PREHEAT_S = 60.0  # a minute of burn is three times what made the GPU's state show on an H200
PREHEAT_S = 3.0  # a GPU run's default burn after the GPU idled (backends/cuda/preheat.py, docs/measuring/preheat.md)
PLACES = 8  # sets of buffers a GPU run times a small call on (backends/cuda/placement.py, docs/measuring/paces-and-power.md)
MAX_PLACES = 64
MAX_COOLDOWN_S = 60.0  # a minute of idle per point is already far more than a power limiter needs


def policy(*, warmup: int = _T.warmup, reps: int = _T.reps, budget: float = _T.budget_s, max_noise: float | None = None,
           max_time: float = _T.max_time_s, flush: bool = _T.flush, decide: float | None = None,
           discard_throttled: bool = False, pace: Pace | str = _T.pace, settle: float = _T.settle_s,
           cooldown: float = _T.cooldown_s, preheat: float = _T.preheat_s, places: int = _T.places, processes: int = _T.processes, clock: Clocks | str = _T.clocks,
           graph: int = _T.graph,
           where=lambda key: f"--{key.replace('_', '-')}") -> TimingPolicy:
    """A timing policy, every value checked; `where(key)` names the option or suite key in messages.
    decide = 0 (or None) turns the decidability target off. pace sustained times calls in a steady stream after
    `settle` seconds of them (timing.Pace); `cooldown` seconds of idle come before each point's first call."""
    for key, value, kind in (("warmup", warmup, int), ("reps", reps, int), ("processes", processes, int),
                             ("places", places, int)):
        if type(value) is not kind:
            raise GpubenchError(f"{where(key)} must be an integer, got {value!r}")
    if warmup < 0:
        raise GpubenchError(f"{where('warmup')} must be 0 or more, got {warmup}")
    if not 1 <= processes <= MAX_PROCESSES:
        raise GpubenchError(f"{where('processes')} is how many worker processes measure each point: 1 to "
                            f"{MAX_PROCESSES}, got {processes}")
    if not 1 <= places <= MAX_PLACES:
        raise GpubenchError(f"{where('places')} is how many sets of its buffers a small call is timed on: 1 (its own "
                            f"only) to {MAX_PLACES}, got {places}")
    if reps < MIN_REPS:
        raise GpubenchError(f"{where('reps')} must be at least {MIN_REPS} (a median and compare's interval need "
                            f"them), got {reps}")
    if not isinstance(pace, str) or pace not in set(Pace):
        raise GpubenchError(f"{where('pace')} must be one of {', '.join(Pace)}, got {pace!r:.40}")
    pace = pace_of(pace)
    if pace == Pace.SUSTAINED and discard_throttled:
        raise GpubenchError(f"{where('discard_throttled')} drops the samples of a power-limited GPU, which are what "
                            f"pace {Pace.SUSTAINED} measures: use one or the other")
    for key, value in (("budget", budget), ("max_time", max_time), ("max_noise", max_noise), ("decide", decide),
                       ("settle", settle), ("cooldown", cooldown), ("preheat", preheat)):
        if value is None and key in ("max_noise", "decide"):
            continue
        if key == "decide" and value == 0:
            decide = None
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise GpubenchError(f"{where(key)} must be a finite number, got {value!r}")
        zero_allowed = key in ("budget", "settle", "cooldown", "preheat")
        if value < 0 or (value == 0 and not zero_allowed):
            raise GpubenchError(f"{where(key)} must be {'0 or more' if zero_allowed else 'more than 0'}, got {value}")
    if preheat > MAX_PREHEAT_S:
        raise GpubenchError(f"{where('preheat')} is seconds of GPU burn after the GPU idled: at most "
                            f"{MAX_PREHEAT_S:g}, got {preheat}")
    if cooldown > MAX_COOLDOWN_S:
        raise GpubenchError(f"{where('cooldown')} is seconds of idle before each point: at most {MAX_COOLDOWN_S:g}, "
                            f"got {cooldown}")
    if not isinstance(clock, str) or clock not in set(Clocks):
        raise GpubenchError(f"{where('clock')} must be one of {', '.join(Clocks)}, got {clock!r:.40}")
    if type(graph) is not int or not 0 <= graph <= MAX_GRAPH:
        raise GpubenchError(f"{where('graph')} is how many calls one CUDA graph captures: 0 (none) to {MAX_GRAPH}, "
                            f"got {graph!r:.40}")
    for key, value in (("flush", flush), ("discard_throttled", discard_throttled)):
        if not isinstance(value, bool):
            raise GpubenchError(f"{where(key)} must be true or false, got {value!r}")
    return TimingPolicy(warmup=warmup, reps=reps, min_reps=MIN_REPS, budget_s=float(budget), flush=flush,
                        max_noise=None if max_noise is None else float(max_noise), max_time_s=float(max_time),
                        decide=None if decide is None else float(decide), discard_throttled=discard_throttled,
                        pace=pace, settle_s=float(settle), cooldown_s=float(cooldown),
                        preheat_s=float(preheat), places=places, processes=processes,
                        clocks=Clocks(clock), graph=graph)


MAX_NAME = 100  # a name goes into tables, file names and labels


def check_name(value, where: str) -> str:
    """A sweep's or a suite's name: printable text without surrounding spaces (a newline or a control
    character would break the tables, labels and file names it goes into)."""
    if (not isinstance(value, str) or not value or not value.isprintable() or value != value.strip()
            or len(value) > MAX_NAME):
        raise GpubenchError(f"{where} must be a non-empty string of printable characters (at most {MAX_NAME}, "
                            f"no surrounding spaces), got {value!r:.60}")
    return value


def block_sizes(values, where: str) -> tuple[int, ...]:
    values = tuple(values)
    if not values or not all(type(b) is int and 1 <= b <= MAX_BLOCK_SIZE for b in values):
        raise GpubenchError(f"{where}: block sizes are B of B×B threads, allowed 1..{MAX_BLOCK_SIZE} "
                            f"(e.g. 8,16,24,32), got {list(values)}")
    return tuple(dict.fromkeys(values))


def variants(catalog: Catalog, op: str, backend: str, names: list[str] | None, where: str,
             extra: list[Variant] = ()) -> list[Variant]:
    """The named variants (or the default set), plus `extra` ones from --kernel, each checked to exist."""
    known = {v.name for v in catalog.variants(op, backend)}
    bad = [n for n in names or [] if n not in known]
    if bad:
        raise GpubenchError(f"{where}: unknown {op} variant(s) {', '.join(bad)} for the {backend} backend; allowed "
                            f"are {', '.join(sorted(known))}")
    if extra:
        chosen = catalog.select(op, backend, names) if names else catalog.baselines(op, backend)
        return chosen + [v for v in extra if v.op == op and v.backend == backend]
    return catalog.select(op, backend, names)


def left_out(catalog: Catalog, op: str, backend: str, names: list[str] | None) -> list[tuple[str, str]]:
    """The project's own variants of `op` that the default set leaves out because they run on another backend,
    as a (what, why) note: a lab's CUDA kernels tried with --backend cpu would otherwise vanish without a word."""
    if names:
        return []
    other = [v for v in catalog.all if v.op == op and not v.entry.builtin and v.backend != backend]
    backends = sorted({v.backend for v in other})
    if not other:
        return []
    return [(f"your project's {', '.join(v.name for v in other)}",
             f"{' and '.join(backends)} variant(s), not run on the {backend} backend (--backend "
             f"{' or '.join(backends)} runs them)")]


def check_block_option(chosen: list[Variant], where: str) -> None:
    """--block-sizes given where none of the chosen variants takes them: say so instead of ignoring it."""
    if not any(v.space.axis == Axis.BLOCK for v in chosen):
        raise GpubenchError(f"{where} applies to the block-size variants (those with axis \"block\", e.g. global, "
                            f"shared, sliding); none of {', '.join(v.name for v in chosen)} takes it")


def sweep(name: str, op: str, chosen: list[Variant], shapes: list, blocks: tuple[int, ...], timing: TimingPolicy,
          skipped=(), where: str = "", pinned: dict | None = None) -> Sweep:
    if not shapes:
        sizes = [p.name for p in ops.get(op).params if p.kind in (ParamKind.INTS, ParamKind.TRIPLES)
                 and (p.default is None or p.name == "sizes")]
        why = f": {skipped[0][1]}" if skipped else f" (give {' or '.join(sizes) or 'its sizes'})"
        raise GpubenchError(f"{where or name} has no shapes to run{why}")
    if not chosen:
        raise GpubenchError(f"{where or name} has no variants to run")
    return Sweep(name, op, chosen, shapes, blocks or LAB_BLOCK_SIZES, timing, list(skipped), dict(pinned or {}))


# --- what every run asks, checked -------------------------------------------------------------------------------


def check_timeout(value: float | None, fallback: float | None = None, name: str = "--timeout") -> float:
    """The watchdog's seconds a point: the command line's, else (None) the suite's `fallback`, else the default;
    `name` is what the complaint calls it."""
    if value is None:
        value = DEFAULTS.timeout_s if fallback is None else fallback
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or not 0 < value <= MAX_TIMEOUT_S:
        raise GpubenchError(f"{name} must be a number of seconds over 0 and at most {MAX_TIMEOUT_S} (a week), got "
                            f"{value!r}")
    return value


def check_seed(value: int) -> int:
    if not 0 <= value < 2**63:
        raise GpubenchError(f"--seed must be from 0 to 2**63 - 1, got {value}")
    return value


def check_fraction(value: float, where: str, example: str = "0.05") -> float:
    if not math.isfinite(value) or value <= 0:
        raise GpubenchError(f"{where} must be a positive fraction such as {example}, got {value}")
    return value


@dataclass(frozen=True)
class Spread:
    """Where a run's tasks go: --gpus, --scheduler, --replicate and --slow-threshold, checked."""

    gpus: GpuSelection | None = None
    scheduler: str | None = None
    replicate: bool = False
    slow_threshold: float = DEFAULTS.slow_threshold

    @classmethod
    def from_options(cls, gpus: str | None, scheduler: str | None, replicate: bool = False,
                     slow_threshold: float | None = None) -> Spread:
        """slow_threshold None: not given (the default); given without --replicate it is refused, not ignored."""
        if slow_threshold is not None and not replicate:
            raise GpubenchError(f"--slow-threshold {slow_threshold:g} is how much slower than the node's median a GPU "
                                "may be under --replicate: give --replicate too, or leave it out")
        return cls(GpuSelection.parse(gpus) if gpus is not None else None,
                   check_scheduler(scheduler) if scheduler is not None else None, replicate,
                   check_fraction(DEFAULTS.slow_threshold if slow_threshold is None else slow_threshold,
                                  "--slow-threshold"))


SCHEDULER_PROTOCOLS = ("tcp", "tls", "ucx", "ws", "wss")  # what Dask's comms speak across processes


def check_scheduler(address: str) -> str:
    """A Dask scheduler's address, [PROTOCOL://]HOST:PORT, checked before Dask sees it (Dask raises a traceback
    for a missing port, and an empty one would quietly start a local cluster instead)."""
    text = address.strip()
    example = "give the scheduler's address as tcp://HOST:PORT, e.g. tcp://10.0.0.5:8786"
    if not text:
        raise GpubenchError(f"--scheduler is empty: {example} (or leave it out to run here)")
    protocol, sep, rest = text.partition("://")
    if not sep:
        protocol, rest = "tcp", text
    host, colon, port = rest.rpartition(":")
    if protocol not in SCHEDULER_PROTOCOLS:
        raise GpubenchError(f"--scheduler {address!r}: unknown protocol {protocol!r} (allowed: "
                            f"{', '.join(SCHEDULER_PROTOCOLS)}); {example}")
    if not colon or not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
        raise GpubenchError(f"--scheduler {address!r} needs a port from 1 to 65535; {example}")
    if not host or not host.isprintable() or any(c.isspace() or c in "/?#@" for c in host):
        raise GpubenchError(f"--scheduler {address!r}: {host!r} is not a host name or address; {example}")
    return text


def lab_kernels(catalog: Catalog, op: str, backend: str, texts, args: str | None,
                dtypes=(DType.FP32,)) -> list[Variant]:
    """The variants of --kernel [NAME=]FILE:SYMBOL (with --args), each on this backend, each name new, each
    taking the asked precisions."""
    from gpubench.specs import files

    mine = [files.lab_kernel(op, k, args, dtypes) for k in texts]
    if args is not None and not mine:
        raise GpubenchError("--args gives the parameter order of a --kernel: add --kernel FILE:SYMBOL")
    for v in mine:
        if v.backend != backend:
            program = v.code.program
            raise GpubenchError(f"--kernel {program.source.name}:{program.kernel} runs on the {v.backend} backend "
                                f"(a {program.source.suffix} file), not on --backend {backend}")
    names = [v.name for v in mine]
    if len(set(names)) < len(names) or any(n in {v.name for v in catalog.variants(op, backend)} for n in names):
        raise GpubenchError(f"--kernel: the names {', '.join(names)} must differ from each other and from the "
                            f"variants already known (give one as NAME=FILE:SYMBOL)")
    return mine


# --- precisions and layouts ------------------------------------------------------------------------------------


def dtypes_asked(text: str | None, tf32: bool, where: str = "--dtype") -> tuple[DType, ...]:
    """--dtype's precisions (fp32 when not given); --tf32 is the old name of --dtype tf32."""
    if tf32 and text:
        raise GpubenchError(f"--tf32 is the old name of {where} tf32: give one of them")
    if tf32:
        return (DType.TF32,)
    return parse_dtypes(text, where) if text is not None else (DType.FP32,)


def layouts_asked(text: str | None, op: str, where: str = "--layout") -> tuple:
    """--layout's memory layouts for the op (its default, nn or nchw, when not given)."""
    shape = ops.get(op).shape
    return parse_layouts(text, shape.LAYOUT, where) if text is not None else (shape.DEFAULT_LAYOUT,)


def in_precisions(shapes: list, dtypes, layouts) -> list:
    """Every shape in every asked precision and layout (sizes first, so a table's rows stay together)."""
    return list(dict.fromkeys(replace(s, dtype=d, layout=x) for s in shapes for d in dtypes for x in layouts))


@dataclass(frozen=True)
class Precisions:
    """What a sweep runs of the precisions and layouts asked: the variants that take some of them, the precisions
    and layouts some variant takes, and what was left out, with why."""

    variants: list[Variant]
    dtypes: tuple
    layouts: tuple
    skipped: list[tuple[str, str]]


def precisions(chosen: list[Variant], dtypes, layouts, *, named: set[str], where: str,
               strict: bool = True) -> Precisions:
    """The chosen variants that compute in some asked precision and layout. A variant the user named that takes
    none of them is an error; one that came by default is left out, saying why. On the command line (strict)
    every asked precision and layout must be taken by some variant that remains; a suite's sweep (a menu, run on
    either backend) leaves out those none takes here, saying why, and fails only when nothing remains."""
    kept, skipped = [], []
    for v in chosen:
        takes = [d for d in dtypes if d in v.scope.dtypes] and [x for x in layouts if x in v.scope.layouts]
        if takes:
            kept.append(v)
            continue
        why = (f"computes in {', '.join(v.scope.dtypes)} with layout(s) {', '.join(v.scope.layouts)}, not "
               f"{', '.join(dtypes)} / {', '.join(layouts)}")
        if v.name in named:
            raise GpubenchError(f"{where}: variant {v.name} {why}")
        skipped.append((f"variant {v.name}", why))
    taken = []
    of_dtypes, of_layouts = (lambda v: v.scope.dtypes), (lambda v: v.scope.layouts)
    for asked, have, what, others, their, other in ((dtypes, of_dtypes, "precision", layouts, of_layouts, "layout"),
                                                   (layouts, of_layouts, "layout", dtypes, of_dtypes, "precision")):
        known = sorted({str(x) for v in chosen for x in have(v)})
        for a in asked:
            if not any(a in have(v) for v in kept):
                # the variants that take `a` (with none of the other axis's asked values, or they would be kept)
                takers = sorted({str(x) for v in chosen if a in have(v) for x in their(v)})
                if takers:  # `a` is taken, only not with what was asked beside it: name what it is taken with
                    why = (f"no chosen variant takes the {what} {a} with the {other}(s) asked "
                           f"({', '.join(map(str, others))}): those that take {a} take the {other}(s) "
                           f"{', '.join(takers)}")
                else:
                    why = f"no chosen variant takes the {what} {a}; they take {', '.join(known)}"
                if strict:
                    raise GpubenchError(f"{where}: {why}")
                skipped.append((f"{what} {a}", why))
        taken.append(tuple(a for a in asked if any(a in have(v) for v in kept)))
    if not all(taken):
        raise GpubenchError(f"{where}: {skipped[-1][1]}")
    return Precisions(kept, *taken, skipped)


def check_graph(backend: str, policies: list[TimingPolicy]) -> None:
    """--graph (or a suite's graph) on a backend with no graphs to capture is refused, not ignored."""
    if backend != BackendKind.CUDA and any(p.graph for p in policies):
        raise GpubenchError(f"--graph captures calls in a CUDA graph: the {backend} backend launches none (leave "
                            "--graph out, or run on --backend cuda)")


def check_settle(settle: float | None, policies: list[TimingPolicy]) -> None:
    """--settle given where no sweep runs at pace sustained is refused, not ignored (an idle pace never settles)."""
    if settle is not None and not any(p.pace == Pace.SUSTAINED for p in policies):
        raise GpubenchError(f"--settle is how long pace {Pace.SUSTAINED} runs the calls back to back before sampling, "
                            f"and no sweep here has it: give --pace {Pace.SUSTAINED} too, or leave --settle out")


def compare_settings(threshold: float, alpha: float = DEFAULTS.alpha) -> tuple[float, float]:
    """compare's, report's and history's --threshold and --alpha (click checks their ranges on the command line, not
    nan/inf; the API and the pytest plugin come here with whatever they were given)."""
    if not math.isfinite(threshold) or threshold <= 0:
        raise GpubenchError(f"--threshold must be a finite fraction such as 0.05 (more than 0), got {threshold}")
    if not 1e-9 <= alpha < 1 or not math.isfinite(alpha):
        raise GpubenchError(f"--alpha must be within [1e-9, 1), such as 0.05, got {alpha}")
    return threshold, alpha
