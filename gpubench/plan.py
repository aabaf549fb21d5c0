"""Sweeps from what the user asked for, checked once, whichever way it came in (command line or suite file),
and the one home of the defaults that the command line, the suites and the problems read (DEFAULTS).

The click commands (gpubench/cli.py) and the suite loader (gpubench/suites.py) parse their own syntax and then
call the builders here, so a rule (at least 5 repetitions, block sizes 1..32, a filter that fits its padded
input, variants that exist, a --kernel name that is new) is written once and says the same thing for both.
`where` names the source of a value in messages: "--reps" on the command line, "suite lab.toml: sweep[1].reps"
in a file.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Mapping

from gpubench.errors import GpubenchError
from gpubench.fleet import SLOW
from gpubench.gpus import GpuSelection
from gpubench.problems import ConvShape, GemmShape, Op, conv_shape
from gpubench.specs import LAB_BLOCK_SIZES, MAX_BLOCK_SIZE
from gpubench.catalog import Catalog
from gpubench.sweep import Sweep
from gpubench.timing import TimingPolicy
from gpubench.variant import Axis, Variant

from gpubench.worker import DEFAULT_TIMEOUT_S

MIN_REPS = 5  # a median, an IQR and compare's rank interval need a handful of samples
DECIDE = 0.05  # on a GPU, sample on until a comparison at 5% (compare's default) could be decided
MAX_TIMEOUT_S = 7 * 24 * 3600  # a week: past this a watchdog means nothing (and the OS's timers overflow)


@dataclass(frozen=True)
class Defaults:
    """Every default a user sees, in one place: the command line shows these, suites and problems start from them."""

    sizes: tuple[int, ...] = (512, 1024, 2048, 4096, 8192)  # the lab's square sizes
    block_sizes: tuple[int, ...] = LAB_BLOCK_SIZES
    strides: tuple[int, ...] = (1, 2, 3)
    conv: Mapping[str, object] = field(default_factory=lambda: dict(ConvShape.DEFAULTS))  # batch, channels, ...
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


def default_decide(backend: str) -> float | None:
    """GPU runs sample on until decidable; host timings of NumPy are not what gpubench compares, so not there."""
    return DECIDE if backend == "cuda" else None


_T = TimingPolicy()


def policy(*, warmup: int = _T.warmup, reps: int = _T.reps, budget: float = _T.budget_s, max_noise: float | None = None,
           max_time: float = _T.max_time_s, flush: bool = _T.flush, decide: float | None = None,
           discard_throttled: bool = False,
           where=lambda key: f"--{key.replace('_', '-')}") -> TimingPolicy:
    """A timing policy, every value checked; `where(key)` names the option or suite key in messages.
    decide = 0 (or None) turns the decidability target off."""
    for key, value, kind in (("warmup", warmup, int), ("reps", reps, int)):
        if type(value) is not kind:
            raise GpubenchError(f"{where(key)} must be an integer, got {value!r}")
    if warmup < 0:
        raise GpubenchError(f"{where('warmup')} must be 0 or more, got {warmup}")
    if reps < MIN_REPS:
        raise GpubenchError(f"{where('reps')} must be at least {MIN_REPS} (a median and compare's interval need "
                            f"them), got {reps}")
    for key, value in (("budget", budget), ("max_time", max_time), ("max_noise", max_noise), ("decide", decide)):
        if value is None and key in ("max_noise", "decide"):
            continue
        if key == "decide" and value == 0:
            decide = None
            continue
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            raise GpubenchError(f"{where(key)} must be a finite number, got {value!r}")
        if value < 0 or (value == 0 and key != "budget"):
            raise GpubenchError(f"{where(key)} must be {'0 or more' if key == 'budget' else 'more than 0'}, got "
                                f"{value}")
    for key, value in (("flush", flush), ("discard_throttled", discard_throttled)):
        if not isinstance(value, bool):
            raise GpubenchError(f"{where(key)} must be true or false, got {value!r}")
    return TimingPolicy(warmup=warmup, reps=reps, min_reps=MIN_REPS, budget_s=float(budget), flush=flush,
                        max_noise=None if max_noise is None else float(max_noise), max_time_s=float(max_time),
                        decide=None if decide is None else float(decide), discard_throttled=discard_throttled)


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
        chosen = catalog.select(op, backend, names) if names else [b for b in [catalog.baseline(op, backend)] if b]
        return chosen + [v for v in extra if v.op == op and v.backend == backend]
    return catalog.select(op, backend, names)


def left_out(catalog: Catalog, op: str, backend: str, names: list[str] | None) -> list[tuple[str, str]]:
    """The project's own variants of `op` that the default set leaves out because they run on another backend,
    as a (what, why) note: a lab's CUDA kernels tried with --backend cpu would otherwise vanish without a word."""
    if names:
        return []
    other = [v for v in catalog.all if v.op == op and not v.builtin and v.backend != backend]
    backends = sorted({v.backend for v in other})
    if not other:
        return []
    return [(f"your project's {', '.join(v.name for v in other)}",
             f"{' and '.join(backends)} variant(s), not run on the {backend} backend (--backend "
             f"{' or '.join(backends)} runs them)")]


def check_block_option(chosen: list[Variant], where: str) -> None:
    """--block-sizes given where none of the chosen variants takes them: say so instead of ignoring it."""
    if not any(v.axis == Axis.BLOCK for v in chosen):
        raise GpubenchError(f"{where} applies to the block-size variants (those with axis \"block\", e.g. global, "
                            f"shared, sliding); none of {', '.join(v.name for v in chosen)} takes it")


def gemm_shapes(sizes: list[int], mnk: list[tuple[int, int, int]]) -> list[GemmShape]:
    """Square sizes, then M,N,K triples; each problem once (a triple that repeats a size is not measured twice)."""
    return list(dict.fromkeys([GemmShape(s, s, s) for s in sizes] + [GemmShape(*t) for t in mnk]))


def conv_shapes(sizes, strides, *, batch: int, in_channels: int, out_channels: int, kernel: int, padding,
                name: str, strict: bool) -> tuple[list, list[tuple[str, str]]]:
    """Conv problems for every size × stride. A filter larger than its padded input is an error (strict, the
    command line) or left out with the reason (a suite, where other shapes still make sense)."""
    shapes, skipped = [], []
    for size in sizes:
        for stride in strides:
            try:
                shapes.append(conv_shape(size, stride, batch=batch, in_channels=in_channels,
                                         out_channels=out_channels, kernel=kernel, padding=padding))
            except GpubenchError as e:
                if strict:
                    raise
                skipped.append((f"{name}: size {size} stride {stride}", str(e)))
    return shapes, skipped


def sweep(name: str, op: str, chosen: list[Variant], shapes: list, blocks: tuple[int, ...], timing: TimingPolicy,
          skipped=(), where: str = "") -> Sweep:
    if not shapes:
        why = f": {skipped[0][1]}" if skipped else f" (give sizes{' or mnk' if op == Op.GEMM else ''})"
        raise GpubenchError(f"{where or name} has no shapes to run{why}")
    if not chosen:
        raise GpubenchError(f"{where or name} has no variants to run")
    return Sweep(name, op, chosen, shapes, blocks or LAB_BLOCK_SIZES, timing, list(skipped))


# --- what every run asks, checked -------------------------------------------------------------------------------


def check_timeout(value: float) -> float:
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise GpubenchError(f"--timeout must be a number of seconds from 0 to {MAX_TIMEOUT_S} (a week), got {value}")
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
                     slow_threshold: float = DEFAULTS.slow_threshold) -> Spread:
        return cls(GpuSelection.parse(gpus) if gpus is not None else None,
                   check_scheduler(scheduler) if scheduler is not None else None, replicate,
                   check_fraction(slow_threshold, "--slow-threshold"))


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


def lab_kernels(catalog: Catalog, op: str, backend: str, texts, args: str | None) -> list[Variant]:
    """The variants of --kernel [NAME=]FILE:SYMBOL (with --args), each on this backend, each name new."""
    from gpubench import spec_files

    mine = [spec_files.lab_kernel(op, k, args) for k in texts]
    if args and not mine:
        raise GpubenchError("--args gives the parameter order of a --kernel: add --kernel FILE:SYMBOL")
    for v in mine:
        if v.backend != backend:
            raise GpubenchError(f"--kernel {v.source.name}:{v.kernel} runs on the {v.backend} backend (a "
                                f"{v.source.suffix} file), not on --backend {backend}")
    names = [v.name for v in mine]
    if len(set(names)) < len(names) or any(n in {v.name for v in catalog.variants(op, backend)} for n in names):
        raise GpubenchError(f"--kernel: the names {', '.join(names)} must differ from each other and from the "
                            f"variants already known (give one as NAME=FILE:SYMBOL)")
    return mine


def check_tf32(tf32: bool, backend: str) -> bool:
    if tf32 and backend != "cuda":
        raise GpubenchError("--tf32 allows TF32 tensor cores in cuBLAS and cuDNN: the cpu backend has neither")
    return tf32


def overridden(p: TimingPolicy, *, max_noise: float | None, max_time: float | None, decide: float | None,
               discard_throttled: bool) -> TimingPolicy:
    """A suite sweep's policy with what the command line gave for every sweep on top (checked again)."""
    if max_noise is None and max_time is None and decide is None and not discard_throttled:
        return p
    return policy(warmup=p.warmup, reps=p.reps, budget=p.budget_s, flush=p.flush,
                  max_noise=max_noise if max_noise is not None else p.max_noise,
                  max_time=max_time if max_time is not None else p.max_time_s,
                  decide=decide if decide is not None else p.decide,
                  discard_throttled=discard_throttled or p.discard_throttled)


def compare_settings(threshold: float, alpha: float) -> tuple[float, float]:
    if not math.isfinite(threshold) or not 1e-9 <= alpha < 1 or not math.isfinite(alpha):
        raise GpubenchError(f"--threshold must be a finite fraction (got {threshold}) and --alpha within [1e-9, 1) "
                            f"(got {alpha})")
    return threshold, alpha
