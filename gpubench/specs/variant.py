"""What a benchmarked variant is, as plain data: the types that gpubench/specs/parse.py fills from kernel specs.

A :class:`Variant` is one row of `gpubench list`: a hand-written kernel, a library call (cuBLAS, cuDNN) or a CPU
implementation, keyed by (op, backend, name) and made of four parts, each holding only what it is:
- its :class:`CatalogEntry`: summary, origin, baseline or lab;
- its :class:`Code`, how it runs: the runner, the :class:`Program` it calls (file, symbol, argument order, build
  target; none for a library) and the :class:`Kernels` it launches (launch expressions, `before` steps, workspace,
  TMA descriptors, whose types are in gpubench/specs/geometry.py);
- its :class:`ConfigSpace`: axis, configurations, defaults, constraints and the search space;
- its :class:`Scope`, which problems it computes: precisions, layouts, `requires` and tolerance.
Variants are frozen and pickle, so the same objects travel from the command line to the worker processes that run
them.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Callable, Mapping

from gpubench.core import dtypes
from gpubench.core.backend_kind import BackendKind
from gpubench.core.dtypes import PRECISIONS, DType
from gpubench.core.expr import Expr
from gpubench import ops
from gpubench.ops.epilogue import Epilogue
from gpubench.specs.geometry import Launch, LaunchSpec, Step, TensorMap
from gpubench.specs.runners import Runner

class Axis(StrEnum):
    """Where a variant's configurations come from."""

    NONE = "none"  # one configuration, "-"
    BLOCK = "block"  # B×B thread blocks from --block-sizes, passed as -D<define>=B
    CONFIGS = "configs"  # a fixed list of named parameter sets
    TUNED = "tuned"  # per shape, from the tuned configurations (the first fixed one where none was tuned)


@dataclass(frozen=True)
class Config:
    """One point on a variant's own axis: the label shown in tables and the compile-time parameters."""

    label: str
    params: tuple[tuple[str, int], ...] = ()

    @property
    def values(self) -> dict[str, int]:
        return dict(self.params)


NO_CONFIG = Config("-")


def config_label(template: str | None, params: Mapping[str, int], defaults: Mapping[str, int]) -> str:
    """Fill a label template: "{BM}x{BN}[ g{SWIZZLE}]" leaves the bracketed part out while SWIZZLE has its default."""
    if template is None:
        return " ".join(f"{k}={v}" for k, v in params.items() if k not in defaults or defaults[k] != v) or "-"

    def optional(match):
        names = re.findall(r"\{(\w+)\}", match.group(1))
        keep = any(n not in defaults or params.get(n) != defaults[n] for n in names)
        return match.group(1) if keep else ""

    return re.sub(r"\[([^\]]*)\]", optional, template).format(**params)


@dataclass(frozen=True)
class CatalogEntry:
    """What `gpubench list` says of a variant besides its name: what it is, who declared it, its place in a sweep."""

    summary: str = ""  # one line for `gpubench list` and the README: what the variant is and what it buys
    origin: str = "built-in"  # or the spec file that declared it ("measure" for api.measure's callable)
    baseline: bool = False  # the library that percentages and speed-ups are measured against
    lab: bool = False  # part of the default sweep

    @property
    def builtin(self) -> bool:
        return self.origin == "built-in"


@dataclass(frozen=True)
class Program:
    """The code a runner calls: a kernel in a .cu file, a function in a .py file, or a live callable, with the
    order of its arguments and how a problem's precision and layout reach it."""

    source: Path | None = None  # the kernel's file (absolute)
    kernel: str | None = None  # the symbol in it
    args: tuple[str, ...] = ()  # the kernel's parameters in order, in gpubench's names (its op's arrays and dims)
    arch: str | None = None  # a fixed target such as "sm_90a" (wgmma); None = the device's own sm_XY
    includes: tuple[Path, ...] = ()  # extra -I directories
    dtype_define: str | None = None  # a kernel gets its element type as -D<this>=<C type> (and <this>_OUT)
    layout_define: str | None = None  # ... and its layout as -D<this>_<LAYOUT>=1 (-DLAYOUT_NT=1, -DLAYOUT_MASKED_BLOCK=1)
    epilogue_define: str | None = None  # ... and its epilogue as -D<this>=<index> (-DEPILOGUE=3: bias-relu-add)
    function: Callable | None = field(default=None, compare=False)  # a live callable (gpubench.api's measure, run
    # in its caller's process) in place of source and kernel

    def fingerprint(self) -> str | None:
        """sha256 of the kernel's source, so saved runs can tell when it changed (None without a file)."""
        if self.source is None or not self.source.is_file():
            return None
        return hashlib.sha256(self.source.read_bytes()).hexdigest()


@dataclass(frozen=True)
class Kernels:
    """The CUDA kernels one call launches: the `before` steps, then the main kernel (none ahead of a library call,
    such as im2col's unfold before cuBLAS), the float32 scratch arrays they share and the TMA descriptors passed to
    them."""

    launch: LaunchSpec | None = None  # the main kernel's (the program's kernel and args)
    before: tuple[Step, ...] = ()  # kernels from the same source launched first, in order, on every call
    workspace: tuple[tuple[str, Expr], ...] = ()  # float32 scratch arrays the kernels share: name, elements
    tensor_maps: tuple[TensorMap, ...] = ()  # TMA descriptors built on the host and passed by value as args


@dataclass(frozen=True)
class Code:
    """How a variant runs: its runner (a CUDA kernel, a CPU function, a library call ...), the program the runner
    calls (none for a library) and the kernels it launches (CUDA kernel and im2col variants only)."""

    runner: Runner
    program: Program | None = None
    kernels: Kernels | None = None

    @property
    def launch(self) -> LaunchSpec | None:
        return self.kernels.launch if self.kernels is not None else None

    def steps(self) -> tuple[Step, ...]:
        """Every kernel one call launches, in order: the `before` steps, then the main kernel."""
        assert self.kernels is not None, "a variant without kernels has no steps"
        k = self.kernels
        if k.launch is None:  # steps ahead of a library call (im2col's unfold before cuBLAS)
            assert k.before, "a variant of no kernel"
            return k.before
        return (*k.before, Step(self.program.kernel, self.program.args, k.launch))

    def launch_for(self, dims: Mapping[str, int], config: Config) -> Launch:
        assert self.launch is not None, "a variant without a main kernel has no launch"
        return self.launch.resolve({**dims, **config.values})

    def workspace_sizes(self, dims: Mapping[str, int], config: Config) -> dict[str, int]:
        """Each scratch array's length in float32 elements, for this problem and configuration."""
        values = {**dims, **config.values}
        return {name: size(values) for name, size in (self.kernels.workspace if self.kernels else ())}

    def defines(self, config: Config, dtype=None, layout=None, epilogue=None) -> dict:
        """The -D defines of one build: the configuration's parameters and, where the program names a macro for
        them, the dtype's element types (-DELEM=__half -DELEM_OUT=__half), the layout (-DLAYOUT_NT=1) and the
        epilogue (-DEPILOGUE=3)."""
        params = dict(config.params) if self.runner.COMPILES_CONFIG else {}
        program = self.program or Program()
        if program.dtype_define and dtype is not None:
            p = PRECISIONS[dtype]
            params.update({program.dtype_define: p.c_type, f"{program.dtype_define}_OUT": p.c_out_type})
        if program.layout_define and layout is not None:
            # (a hyphen, as in grouped-gemm's contiguous-block, is no part of a C name: an underscore)
            params[f"{program.layout_define}_{str(layout).upper().replace('-', '_')}"] = 1
        if program.epilogue_define and epilogue is not None:
            params[program.epilogue_define] = Epilogue(epilogue).index
        return params

    def call_keywords(self, config: Config, dtype, layout, epilogue=None) -> dict:
        """What a Python function gets as keywords: its configuration's parameters and, where the program names a
        keyword for them, the problem's precision, layout and epilogue by name (dtype_define = "precision":
        precision="tf32")."""
        keywords = dict(config.params)
        program = self.program or Program()
        if program.dtype_define:
            keywords[program.dtype_define] = str(dtype)
        if program.layout_define:
            keywords[program.layout_define] = str(layout)
        if program.epilogue_define:
            keywords[program.epilogue_define] = str(Epilogue(epilogue or Epilogue.NONE))
        return keywords


@dataclass(frozen=True)
class ConfigSpace:
    """A variant's own axis: where its configurations come from, the parameters each gets, the conditions they
    meet (over the parameters and the main launch's `threads` and `shared`) and the space `gpubench tune`
    samples."""

    axis: Axis = Axis.NONE
    configs: tuple[Config, ...] = (NO_CONFIG,)
    define: str = "BLOCK"  # the macro a block-axis configuration sets
    defaults: tuple[tuple[str, int], ...] = ()  # parameters every configuration gets unless it says otherwise
    label: str | None = None  # label template for configurations (tuned ones included)
    constraints: tuple[Expr, ...] = ()  # conditions on a configuration's parameters, `threads` and `shared`
    search: tuple[tuple[str, tuple[int, ...]], ...] = ()  # the space `gpubench tune` samples
    launch: LaunchSpec | None = None  # the main launch, whose `threads` and `shared` the constraints may name

    def configs_for(self, block_sizes: tuple[int, ...]) -> tuple[Config, ...]:
        """The configurations a sweep runs (a tuned variant's one is replaced per shape before it runs)."""
        if self.axis == Axis.BLOCK:
            return tuple(self.config({self.define: b}) for b in block_sizes)
        return self.configs

    def config(self, params: Mapping[str, int]) -> Config:
        """A configuration from parameters: the defaults filled in, labelled by the template."""
        full = {**dict(self.defaults), **params}
        if self.axis == Axis.BLOCK:
            return Config(str(params[self.define]), tuple(full.items()))
        return Config(config_label(self.label, full, dict(self.defaults)), tuple(full.items()))

    def satisfies(self, config: Config) -> str | None:
        """The first constraint this configuration breaks (its text), or None."""
        broken = self.broken_constraints(config)
        return broken[0] if broken else None

    def broken_constraints(self, config: Config) -> list[str]:
        """Every constraint this configuration breaks (their texts), in declaration order."""
        values = dict(config.values)
        if self.launch is not None:
            nominal = self.launch.resolve({**{n: 1 for n in self.launch.names()}, **values})
            values.update(threads=nominal.threads, shared=nominal.shared_bytes)
        broken = []
        for c in self.constraints:
            try:
                ok = c(values)
            except ValueError:  # a division by zero in the constraint: the configuration is not valid
                ok = False
            if not ok:
                broken.append(c.text)
        return broken


@dataclass(frozen=True)
class Scope:
    """Which problems a variant computes: its precisions and layouts, the conditions on a problem's dims, and the
    largest rel_err it may have."""

    layouts: tuple[str, ...]  # the memory layouts it reads and writes (at least the op's default)
    dtypes: tuple[DType, ...] = (DType.FP32,)  # the precisions it computes in
    requires: tuple[Expr, ...] = ()  # conditions on the problem; a point outside them is skipped, saying why
    tolerance: float | None = None  # the spec's own bound on rel_err; None: the error model's (dtypes.tolerance)
    epilogues: tuple[Epilogue, ...] = (Epilogue.NONE,)  # the fused epilogues it computes
    reads: tuple[str, ...] | None = None  # the optional arrays its code reads (an epilogue's); None: all it needs
    # (a library or an emulation computes the whole problem)

    def takes(self, shape) -> str | None:
        """Why the variant cannot compute the shape's precision, layout or epilogue (None if it can)."""
        if shape.dtype not in self.dtypes:
            return f"computes in {', '.join(self.dtypes)}, not {shape.dtype}"
        if shape.layout not in self.layouts:
            return f"takes the layout(s) {', '.join(self.layouts)}, not {shape.layout}"
        if shape.fused.epilogue not in self.epilogues:
            return f"computes the epilogue(s) {', '.join(self.epilogues)}, not {shape.fused.epilogue}"
        unread = [a for a in shape.fused.arrays() if self.reads is not None and a not in self.reads]
        if unread:
            return f"does not read {', '.join(unread)}"
        return None

    def unfit(self, dims: Mapping[str, int]) -> str | None:
        """Why the variant cannot run a problem ("requires" and the first condition it breaks), or None."""
        for r in self.requires:
            if not r(dims):
                return f"requires {r.text}"
        return None

    def tolerance_for(self, shape) -> float:
        """The largest rel_err the variant may have on the shape: its spec's, else the error model's."""
        if self.tolerance is not None:
            return self.tolerance
        op = ops.of(shape)
        own = op.tolerance_for(shape.dtype)  # an op's own (a project's op may set one)
        if own is not None:
            return own
        if op.error_model is not None:  # an op whose error is no dot product's (attention's softmax)
            return op.error_model(shape)
        return dtypes.tolerance(shape.dtype, shape.reduction, shape.output_elems)


def default_scope(op: str) -> Scope:
    """FP32 in the op's default layout, any problem, the error model's tolerance."""
    return Scope(layouts=(ops.get(op).shape.DEFAULT_LAYOUT,))


@dataclass(frozen=True)
class Variant:
    """One row of `gpubench list`, keyed by (op, backend, name): its catalogue entry, how it runs, its
    configurations and which problems it computes."""

    name: str
    op: str  # the op's name (gpubench/ops/)
    backend: BackendKind
    code: Code
    entry: CatalogEntry = CatalogEntry()
    space: ConfigSpace = ConfigSpace()
    scope: Scope | None = None  # None: default_scope(op)

    def __post_init__(self):
        if self.scope is None:
            object.__setattr__(self, "scope", default_scope(self.op))

    def builds(self, config: Config, device_arch: str, shape=None) -> list[tuple[Path, tuple, str, tuple]]:
        """The nvcc compilations this configuration needs on a device for a problem (its dtype and layout may be
        compile-time choices): (source, defines, arch, includes) each. Without a problem, one per precision and
        layout the variant takes where those are compile-time choices (what `gpubench check` and CI compile). None
        for a variant pinned to another architecture (it is skipped there, not compiled)."""
        program = self.code.program
        if self.backend != BackendKind.CUDA or program is None or program.source is None or not self.code.runner.NVCC:
            return []
        arch = program.arch or device_arch
        if not arch.startswith(device_arch):
            return []
        if shape is not None:
            choices = [(shape.dtype, shape.layout, shape.fused.epilogue)]
        else:
            choices = [(d if program.dtype_define else None, x if program.layout_define else None,
                        e if program.epilogue_define else None)
                       for d in self.scope.dtypes for x in self.scope.layouts for e in self.scope.epilogues]
        defines = dict.fromkeys(tuple(self.code.defines(config, d, x, e).items()) for d, x, e in choices)
        return [(program.source, d, arch, program.includes) for d in defines]

    def record(self) -> dict:
        """What a saved run keeps about this variant, for readers that do not have today's code."""
        source = self.code.program.source if self.code.program else None
        return {
            "op": self.op, "name": self.name, "backend": self.backend, "runner": self.code.runner.NAME,
            "summary": self.entry.summary, "baseline": self.entry.baseline, "origin": self.entry.origin,
            "tolerance": self.scope.tolerance, "dtypes": [str(d) for d in self.scope.dtypes],
            "layouts": [str(x) for x in self.scope.layouts],
            **({"epilogues": [str(e) for e in self.scope.epilogues]} if self.scope.epilogues != (Epilogue.NONE,)
               else {}),
            "source": str(source) if source else None,
            "sha256": self.code.program.fingerprint() if self.code.program else None,
        }
