"""A project's own ops: ``[[op]]`` tables in gpubench.toml, made into ops like the built-in ones.

    [[op]]
    name = "softmax"
    summary = "y[r, :] = softmax(x[r, :])"
    dims = ["rows", "cols"]                     # its sizes; a sweep gives each a list (--rows 4096 --cols 1024,2048)
    arrays = [{ name = "x", shape = ["rows", "cols"] },
              { name = "y", shape = ["rows", "cols"], output = true }]
    flops = "5 * rows * cols"                   # integer expressions over the dims (gpubench/core/expr.py)
    bytes = "8 * rows * cols"                   # optional: else each array read or written once
    reduction = "cols"                          # optional: what each output sums, for the error model (default 1)
    rate = "bytes"                              # what plots and tables rate it by: "flops" (GFLOPS) or "bytes"
    reference = "ref.py:softmax"                # f(xp, x, rows, cols) -> y, in float64 (NumPy or CuPy as xp)
    tolerance = 1e-5                            # optional: else the error model's; or one per precision,
                                                # tolerance = { fp16 = 2e-3, bf16 = 1.6e-2 }

A dim may be 0 (a flag such as attention's `causal`); an array's every extent must be at least 1.

An array's `storage` is "input" (the problem's precision, the default for inputs), "output" (its output type, the
default for outputs), "float32" or "int32". The declaration travels inside every point a run saves, so `show`,
`compare`, `report` and `history` read a project's run anywhere, without the project.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import ClassVar, Mapping

import numpy as np

from gpubench.core import expr
from gpubench.core.dtypes import DType
from gpubench.core.errors import GpubenchError
from gpubench.ops import params
from gpubench.ops.base import (MAX_DIM, Array, OpDef, Param, ParamKind, Shape, Storage, TableLayout,
                               enum_field, positive)

OP_KEYS = {"name", "summary", "dims", "arrays", "flops", "bytes", "reduction", "rate", "reference", "tolerance"}
ARRAY_KEYS = {"name", "shape", "output", "storage"}
RATES = ("flops", "bytes")


class Layout(StrEnum):
    """A declared op's arrays lie as their shapes say: one layout."""

    DEFAULT = "default"


@dataclass(frozen=True)
class ArrayDecl:
    name: str
    shape: tuple[expr.Expr, ...]
    output: bool
    storage: Storage

    def record(self) -> dict:
        return {"name": self.name, "shape": [e.text for e in self.shape], "output": self.output,
                "storage": str(self.storage)}


@dataclass(frozen=True)
class OpDecl:
    """What an [[op]] table says, checked: everything a run needs to rebuild the op's problems and rates."""

    name: str
    summary: str
    dims: tuple[str, ...]
    arrays: tuple[ArrayDecl, ...]
    flops: expr.Expr
    bytes: expr.Expr | None
    reduction: expr.Expr | None
    rate: str
    reference: str | None  # "FILE:SYMBOL", FILE absolute; None in a run read back (its points are all it needs)
    tolerance: tuple[tuple[str, float], ...] | float | None  # one bound, or one per precision

    def record(self) -> dict:
        """The declaration as a saved point keeps it (no reference: a reader needs none)."""
        return {"name": self.name, "summary": self.summary, "dims": list(self.dims),
                "arrays": [a.record() for a in self.arrays], "flops": self.flops.text,
                "bytes": self.bytes.text if self.bytes else None,
                "reduction": self.reduction.text if self.reduction else None, "rate": self.rate,
                "tolerance": dict(self.tolerance) if isinstance(self.tolerance, tuple) else self.tolerance}

    def op_def(self) -> OpDef:
        return _op_def(self)


# --- reading a declaration --------------------------------------------------------------------------------------


def _text(table: Mapping, key: str, where: str, required: bool = True) -> str | None:
    value = table.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise GpubenchError(f"{where}.{key} must be a non-empty line of text, got {value!r:.60}")
    return value.strip()


def _expression(table: Mapping, key: str, dims: tuple[str, ...], where: str, required: bool = True):
    value = table.get(key)
    if value is None and not required:
        return None
    try:
        e = expr.parse(value)
        expr.check_names(e, set(dims))
    except expr.ExprError as err:
        raise GpubenchError(f"{where}.{key}: {err} (an integer expression over {', '.join(dims)})") from None
    return e


def _array(table, dims: tuple[str, ...], where: str) -> ArrayDecl:
    if not isinstance(table, Mapping) or set(table) - ARRAY_KEYS or "name" not in table or "shape" not in table:
        raise GpubenchError(f"{where} must be a table {{ name, shape, output, storage }} (name and shape required)")
    name = _text(table, "name", where)
    if not name.isidentifier() or name in dims:
        raise GpubenchError(f"{where}.name {name!r} must be an identifier other than the dims")
    shape = table["shape"]
    if not isinstance(shape, list) or not shape:
        raise GpubenchError(f"{where}.shape must be a list of expressions over the dims, e.g. [\"rows\", \"cols\"]")
    exprs = tuple(_expression({"shape": s}, "shape", dims, where) for s in shape)
    output = table.get("output", False)
    if type(output) is not bool:
        raise GpubenchError(f"{where}.output must be true or false")
    try:
        storage = Storage(table.get("storage", Storage.OUTPUT if output else Storage.INPUT))
    except ValueError:
        raise GpubenchError(f"{where}.storage must be one of {', '.join(Storage)}") from None
    return ArrayDecl(name, exprs, output, storage)


def declaration(table, where: str, root: Path | None) -> OpDecl:
    """An [[op]] table (or a saved point's record of one, root None) as an OpDecl; one line when it is not one."""
    if not isinstance(table, Mapping):
        raise GpubenchError(f"{where} must be a table ([[op]])")
    unknown = sorted(set(table) - OP_KEYS)
    if unknown:
        raise GpubenchError(f"{where} has unknown key(s) {', '.join(unknown)}; allowed are {', '.join(sorted(OP_KEYS))}")
    name = _text(table, "name", where)
    if not name.replace("-", "_").isidentifier():
        raise GpubenchError(f"{where}.name {name!r} must be a word (letters, digits, - and _)")
    dims = table.get("dims")
    if not isinstance(dims, list) or not dims or not all(isinstance(d, str) and d.isidentifier() for d in dims) \
            or len(set(dims)) < len(dims):
        raise GpubenchError(f"{where}.dims must be a list of distinct identifiers, e.g. [\"rows\", \"cols\"]")
    dims = tuple(dims)
    arrays = table.get("arrays")
    if not isinstance(arrays, list) or not arrays:
        raise GpubenchError(f"{where}.arrays must list the op's arrays, inputs and outputs")
    arrays = tuple(_array(a, dims, f"{where}.arrays[{i}]") for i, a in enumerate(arrays))
    names = [a.name for a in arrays]
    if len(set(names)) < len(names) or not any(a.output for a in arrays) or all(a.output for a in arrays):
        raise GpubenchError(f"{where}.arrays need distinct names, at least one input and one output (output = true)")
    rate = table.get("rate", "flops")
    if rate not in RATES:
        raise GpubenchError(f"{where}.rate must be one of {', '.join(RATES)}, got {rate!r:.40}")
    tolerance = _tolerance(table.get("tolerance"), f"{where}.tolerance")
    reference = None
    if root is not None:
        reference = _text(table, "reference", where)
        file, sep, symbol = reference.rpartition(":")
        if not sep or not file or not symbol.isidentifier():
            raise GpubenchError(f"{where}.reference must be FILE:FUNCTION, e.g. \"ref.py:softmax\"")
        path = (root / file).resolve()
        if not path.is_file():
            raise GpubenchError(f"{where}.reference: {file} is not a file (paths are relative to the project file)")
        reference = f"{path}:{symbol}"
    return OpDecl(name, _text(table, "summary", where, required=False) or name, dims, arrays,
                  _expression(table, "flops", dims, where), _expression(table, "bytes", dims, where, required=False),
                  _expression(table, "reduction", dims, where, required=False), rate, reference, tolerance)


def _tolerance(value, where: str):
    """A bound on rel_err (0 < t < 1), or a table of them by precision."""
    def bound(t, at):
        if isinstance(t, bool) or not isinstance(t, (int, float)) or not 0 < t < 1:
            raise GpubenchError(f"{at} must be a number between 0 and 1, got {t!r:.40}")
        return float(t)

    if value is None or not isinstance(value, Mapping):
        return None if value is None else bound(value, where)
    for name in value:
        if name not in set(DType):
            raise GpubenchError(f"{where}: {name!r} is no precision; allowed: {', '.join(DType)}")
    return tuple((str(k), bound(v, f"{where}.{k}")) for k, v in value.items())


def declarations(tables, where: str, root: Path) -> list[OpDecl]:
    """A project's [[op]] tables, each checked, none named as a built-in op."""
    from gpubench import ops

    if not isinstance(tables, list):
        raise GpubenchError(f"{where}: ops are declared as [[op]] tables")
    found = [declaration(t, f"{where}: op[{i}]", root) for i, t in enumerate(tables)]
    for d in found:
        if d.name in ops.builtin_names() or sum(e.name == d.name for e in found) > 1:
            raise GpubenchError(f"{where}: op {d.name!r} is a built-in op's name or declared twice; choose another")
    return found


# --- its problems -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DeclaredShape(Shape):
    """A problem of a declared op: a value for each of its dims, in a precision."""

    op: str
    sizes: tuple[tuple[str, int], ...]
    dtype: DType = DType.FP32
    layout: Layout = Layout.DEFAULT
    declaration: OpDecl | None = field(default=None, compare=False, repr=False)

    LAYOUT: ClassVar[type[Layout]] = Layout
    DEFAULT_LAYOUT: ClassVar[Layout] = Layout.DEFAULT

    def __post_init__(self):
        for name, value in self.sizes:
            if type(value) is not int or not 0 <= value <= MAX_DIM:
                raise GpubenchError(f"a {self.op} problem: {name} must be an integer of 0 or more, got {value!r:.40}")
        enum_field(self, "dtype", DType)
        enum_field(self, "layout", Layout)
        if self.declaration is not None:
            positive(f"a {self.op} problem's arrays", **{f"{a}[{i}]": n for a, dims in self.array_dims().items()
                                                        for i, n in enumerate(dims)})

    @property
    def KEYS(self) -> tuple[str, ...]:  # noqa: N802 (the built-in shapes' class constant)
        return (*self.declaration.dims, "dtype", "layout", "declaration")

    @property
    def ROW_HEADERS(self) -> tuple[str, ...]:  # noqa: N802
        return ("×".join(self.declaration.dims),)

    @property
    def PLOT_AXIS(self) -> str:  # noqa: N802
        return self.declaration.dims[-1]

    def dims(self) -> dict[str, int]:
        return dict(self.sizes)

    def array_dims(self) -> dict[str, tuple[int, ...]]:
        values = self.dims()
        return {a.name: tuple(e(values) for e in a.shape) for a in self.declaration.arrays}

    def _elems(self, outputs: bool) -> int:
        dims = self.array_dims()
        return sum(math.prod(dims[a.name]) for a in self.declaration.arrays if a.output == outputs)

    @property
    def flops(self) -> float:
        return float(self.declaration.flops(self.dims()))

    @property
    def min_bytes(self) -> float:
        if self.declaration.bytes is not None:
            return float(self.declaration.bytes(self.dims()))
        dims = self.array_dims()
        return float(sum(math.prod(dims[a.name]) * np.dtype(a.storage.host_type(self.dtype)).itemsize
                         for a in self.declaration.arrays))

    @property
    def reduction(self) -> int:
        r = self.declaration.reduction
        return max(1, r(self.dims())) if r is not None else 1

    @property
    def output_elems(self) -> int:
        return self._elems(outputs=True)

    @property
    def label(self) -> str:
        return "x".join(str(v) for _, v in self.sizes)

    @property
    def plot_x(self) -> int:
        return self.sizes[-1][1]

    @property
    def series(self) -> str:
        """Problems that differ only in the last dim are one line against it."""
        rest = " ".join(f"{k}={v}" for k, v in self.sizes[:-1])
        return " ".join(t for t in (rest, self.tag) if t) or "all"

    def record(self) -> dict[str, object]:
        return {**dict(self.sizes), "dtype": str(self.dtype), "layout": str(self.layout),
                "declaration": self.declaration.record()}

    @classmethod
    def from_record(cls, r: Mapping[str, object]) -> DeclaredShape:
        decl = declaration(r.get("declaration"), "a declared op's problem", None)
        unknown = sorted(set(r) - {*decl.dims, "dtype", "layout", "declaration"})
        missing = [d for d in decl.dims if d not in r]
        if unknown or missing:
            raise GpubenchError(f"a {decl.name} problem has the keys {', '.join((*decl.dims, 'dtype', 'layout'))}")
        return cls(decl.name, tuple((d, r[d]) for d in decl.dims), r.get("dtype", DType.FP32),
                   r.get("layout", Layout.DEFAULT), decl)


# --- the op -----------------------------------------------------------------------------------------------------


@functools.lru_cache(maxsize=None)
def _function(reference: str):
    from gpubench.core import user_code

    path, _, symbol = reference.rpartition(":")
    return user_code.function(Path(path), symbol)


def _as_array(xp, value):
    """What a reference returned, as the array module's array (a PyTorch tensor comes through DLPack)."""
    if isinstance(value, xp.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        return xp.from_dlpack(value.detach() if hasattr(value, "detach") else value)
    return xp.asarray(value)


def _reference(decl: OpDecl):
    def reference(xp, shape: DeclaredShape, values: dict, dtype="float64") -> dict:
        if decl.reference is None:
            raise GpubenchError(f"op {decl.name}: a run read back has no reference to compute")
        out = _function(decl.reference)(xp, **{k: v.astype(dtype, copy=False) for k, v in values.items()},
                                        **shape.dims())
        outputs = [a.name for a in decl.arrays if a.output]
        if not isinstance(out, Mapping):
            out = {outputs[0]: out} if len(outputs) == 1 else dict(zip(outputs, out))
        missing = [n for n in outputs if n not in out]
        if missing:
            raise GpubenchError(f"op {decl.name}: the reference returned no {', '.join(missing)}")
        return {n: _as_array(xp, out[n]).astype(dtype, copy=False) for n in outputs}

    return reference


def _problems(decl: OpDecl):
    def problems(values: dict, where: str, strict: bool):
        missing = [d for d in decl.dims if d not in values]
        if missing:
            raise GpubenchError(f"{decl.name} needs {', '.join('--' + d for d in missing)} (comma-separated values)")
        lists = [params.ints(values[d], ("--" + d) if strict else f"{where}.{d}", lo=0) for d in decl.dims]
        shapes = [DeclaredShape(decl.name, tuple(zip(decl.dims, combo)), declaration=decl)
                  for combo in _product(lists)]
        return shapes, []

    return problems


def _product(lists):
    if not lists:
        yield ()
        return
    for head in lists[0]:
        for tail in _product(lists[1:]):
            yield (head, *tail)


@functools.lru_cache(maxsize=None)
def _op_def(decl: OpDecl) -> OpDef:
    arrays = tuple(Array(a.name, output=a.output, storage=a.storage) for a in decl.arrays)
    sample = DeclaredShape(decl.name, tuple((d, 3 + 2 * i) for i, d in enumerate(decl.dims)), declaration=decl)
    return OpDef(
        name=decl.name, summary=decl.summary, noun=decl.name, shape=DeclaredShape, arrays=arrays, dims=decl.dims,
        reference=_reference(decl),
        params=tuple(Param(d, ParamKind.INTS, f"{d}, comma-separated") for d in decl.dims),
        problems=_problems(decl), sample=sample,
        table=TableLayout("library", "speed vs library", lambda r: f"{r:.2f}×"),
        by_flops=decl.rate == "flops", builtin=False,
        tolerance=dict(decl.tolerance) if isinstance(decl.tolerance, tuple) else decl.tolerance,
        command_help=f"Sweep {decl.name} variants ({decl.summary}).")

