"""The settings a run is made from, as typed records built once, wherever they come from, and passed whole.

The command line (gpubench/options.py's `settings`, from click's keyword arguments), a suite (`gpubench run`, whose
sweeps keep their own timing under what the command line gives) and the library (gpubench/api.py) each build a
:class:`Settings` and hand it to a use case (gpubench/usecases/commands.py); nothing between spells the settings
out one by one. A record's fields are named as the command line's options are (--max-noise is `max_noise`), so
that `Settings.taken_from` picks them out of click's keyword arguments by name:

- :class:`TimingSettings`: how each point is sampled, None where not given (the defaults, or a suite's own
  timing, show through), turned into a checked TimingPolicy by plan.policy;
- plan.Spread: where the tasks go (--gpus, --scheduler, --replicate, --slow-threshold);
- :class:`OutputSettings`: the results file (-o, --force);
- :class:`RunSettings`: the backend, the inputs' seed, --tf32, the watchdog and the project file.

A new timing option is one field of TimingSettings (named as plan.policy's keyword, which checks it and puts it in
TimingPolicy) beside its click option in gpubench/options.py; a suite file takes it once it is in
suites.TIMING_KEYS.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass, fields
from typing import Callable

from gpubench.core.backend_kind import BackendKind
from gpubench.measure.timing import TimingPolicy
from gpubench.planning import plan
from gpubench.planning.plan import DEFAULTS, Spread


def _given(value) -> bool:
    return value is not None and value is not False


FIELDS = {"clock": "clocks"}  # a plan.policy keyword whose TimingPolicy field is named otherwise


def _keywords(p: TimingPolicy) -> dict:
    """The plan.policy keywords that make `p` again (a field in seconds is the keyword's name with _s)."""
    names = [n for n in inspect.signature(plan.policy).parameters if n != "where"]
    return {n: getattr(p, FIELDS.get(n, n)) if hasattr(p, FIELDS.get(n, n)) else getattr(p, f"{n}_s") for n in names}


@dataclass(frozen=True)
class TimingSettings:
    """How each point is sampled, as given: None (or False) where not given. Fields are named as plan.policy's
    keywords, but for no_flush (the command line's --no-flush)."""

    warmup: int | None = None
    reps: int | None = None
    budget: float | None = None
    max_noise: float | None = None
    max_time: float | None = None
    no_flush: bool = False
    decide: float | None = None
    discard_throttled: bool = False
    pace: str | None = None
    settle: float | None = None
    cooldown: float | None = None
    preheat: float | None = None
    places: int | None = None
    processes: int | None = None
    clock: str | None = None
    graph: int | None = None

    def given(self) -> dict:
        """What was given, by plan.policy's keywords (decide = 0, which turns it off, is given)."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if _given(getattr(self, f.name))}
        if values.pop("no_flush", False):
            values["flush"] = False
        return values

    def policy(self, backend: str, where: Callable[[str], str] | None = None) -> TimingPolicy:
        """The policy of a sweep of the command line or the library: the defaults where not given (decide: on a
        GPU only), every value checked; `where(key)` names a value in messages (default: its option)."""
        values = {"decide": plan.default_decide(backend), "preheat": plan.default_preheat(backend),
                  "places": plan.default_places(backend), **self.given()}
        return plan.policy(**values, **({"where": where} if where is not None else {}))

    def over(self, p: TimingPolicy) -> TimingPolicy:
        """A suite sweep's policy with what was given on top, checked again (the policy itself where nothing was)."""
        given = self.given()
        return plan.policy(**{**_keywords(p), **given}) if given else p

    def check_settle(self, policies: list[TimingPolicy]) -> None:
        """--settle given where no sweep runs at pace sustained is refused, not ignored."""
        plan.check_settle(self.settle, policies)


@dataclass(frozen=True)
class OutputSettings:
    """The results file: -o (None: results/<device>/<name>-<time>.json) and --force (replace it)."""

    output: str | None = None
    force: bool = False


@dataclass(frozen=True)
class RunSettings:
    """What every run asks besides timing: the backend, the inputs' seed, --tf32 (the old name of --dtype tf32),
    the watchdog's seconds per point and the project file (None: found from here upwards)."""

    backend: str = BackendKind.CUDA
    seed: int = DEFAULTS.seed
    tf32: bool = False
    timeout: float | None = None  # None: the suite's `timeout`, else the default
    config: str | None = None


@dataclass(frozen=True)
class Settings:
    """Every setting of a run, as records."""

    timing: TimingSettings = TimingSettings()
    spread: Spread = Spread()
    output: OutputSettings = OutputSettings()
    run: RunSettings = RunSettings()

    @classmethod
    def taken_from(cls, kw: dict) -> Settings:
        """The settings among keyword arguments named as the command line's options (click's), taken out of `kw`;
        those not there keep their defaults. The spread is checked here (plan.Spread.from_options)."""

        def take(record) -> dict:
            return {f.name: kw.pop(f.name) for f in fields(record) if f.name in kw}

        spread = take(Spread)
        return cls(timing=TimingSettings(**take(TimingSettings)),
                   spread=Spread.from_options(**{"gpus": None, "scheduler": None, **spread}),
                   output=OutputSettings(**take(OutputSettings)), run=RunSettings(**take(RunSettings)))


@dataclass(frozen=True)
class Selection:
    """What a `gemm`/`conv` sweep runs besides its shapes, as asked: the variants (None: the default set), the
    block sizes (and whether they were given), `--kernel`s with their `--args`, and the precisions and layouts as
    comma-separated text (None: fp32, the op's default layout)."""

    variants: list[str] | None = None
    block_sizes: tuple[int, ...] = DEFAULTS.block_sizes
    block_sizes_given: bool = False
    kernels: tuple[str, ...] = ()
    kernel_args: str | None = None
    dtype: str | None = None
    layout: str | None = None
