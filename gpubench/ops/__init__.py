"""What is computed: one module per op (gemm.py, conv.py, ...), each declaring an :class:`~gpubench.ops.base.OpDef`
named ``OP``, and a project's own ``[[op]]`` tables (gpubench/ops/declared.py).

This registry is how every other layer reaches an op: :func:`get` by name (a results file, a spec, a suite, the
command line), :func:`of` by problem. A module dropped into this folder with an ``OP`` is an op: nothing else is
edited to add one (the contributor docs' "Adding an op" lists the files).
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import Mapping

from gpubench.core.errors import GpubenchError
from gpubench.ops.base import OpDef

_NOT_OPS = {"base", "params", "reference", "declared", "epilogue", "conv_math"}  # the package's own helpers
_BUILTIN: dict[str, OpDef] = {}
_DECLARED: dict[str, OpDef] = {}  # a project's [[op]] tables, as this process has met them


def _discover() -> None:
    found = []
    for info in pkgutil.iter_modules(__path__):
        if info.name in _NOT_OPS:
            continue
        op = getattr(importlib.import_module(f"{__name__}.{info.name}"), "OP", None)
        if isinstance(op, OpDef):
            found.append(op)
    for op in sorted(found, key=lambda o: (o.rank, o.name)):
        _BUILTIN[op.name] = op


_discover()


def builtin() -> tuple[OpDef, ...]:
    """gpubench's own ops, in the order tables and listings give them."""
    return tuple(_BUILTIN.values())


def builtin_names() -> tuple[str, ...]:
    return tuple(_BUILTIN)


def names() -> tuple[str, ...]:
    """Every op this process knows: the built-in ones, then a loaded project's."""
    return (*_BUILTIN, *_DECLARED)


def declare(op: OpDef) -> None:
    """A project's op, known by name from here on (loading the project again replaces it)."""
    if op.name in _BUILTIN:
        raise GpubenchError(f"op {op.name!r} is a built-in op's name; choose another")
    _DECLARED[op.name] = op


def get(name: str) -> OpDef:
    """The op of that name; one line naming the allowed ones otherwise."""
    op = (_BUILTIN.get(name) or _DECLARED.get(name)) if isinstance(name, str) else None
    if op is None:
        raise GpubenchError(f"op {name!r}; allowed are {', '.join(names())}")
    return op


def of(shape) -> OpDef:
    """The op a problem belongs to: a declared op's problem carries its declaration (and makes its op known here,
    in a worker process too), a built-in's names it."""
    declared = getattr(shape, "declaration", None)
    if declared is None:
        return get(shape.op)
    op = declared.op_def()
    _DECLARED.setdefault(op.name, op)
    return op


def order(name: str) -> tuple[int, str]:
    """Where an op's tables come in a run's listing: the built-ins in their order, declared ops after, by name."""
    return (list(_BUILTIN).index(name), "") if name in _BUILTIN else (len(_BUILTIN), name)


def shape_from(op: str, record: Mapping[str, object]):
    """The problem a results file's record describes (the inverse of a shape's `record()`); GpubenchError when the
    record is not one. A declared op's record carries its declaration, so any command reads it anywhere."""
    if isinstance(op, str) and isinstance(record, Mapping) and "declaration" in record:  # a project's op, even one
        # named as a built-in op came to be named later (a run of a project's "attention" before gpubench had one)
        from gpubench.ops.declared import DeclaredShape

        return DeclaredShape.from_record(record)
    kind = get(op).shape
    unknown = [k for k in record if k not in kind.KEYS + kind.OPTIONAL_KEYS]
    if unknown:
        raise GpubenchError(f"a {op} problem has the keys {', '.join(kind.KEYS)}, not {', '.join(unknown)}")
    try:
        return kind.from_record(record)
    except TypeError:  # a key without a default is missing
        raise GpubenchError(f"a {op} problem has the keys {', '.join(kind.KEYS)}, got {', '.join(record) or 'none'}"
                            ) from None


def laid_out_arrays(shape) -> dict[str, tuple[tuple[int, ...], object]]:
    """Every array of the problem by its spec name (inputs, then outputs): its dims as it lies in memory and its
    host element type."""
    return of(shape).laid_out_arrays(shape)
