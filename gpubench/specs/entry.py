"""The reading of one spec table: its errors (SpecError), the Entry that names the file and the variant in each,
the names a spec may use, and a kernel's arguments in the op's names. gpubench/specs/parse.py checks the rest of a
[[variant]] table; gpubench/specs/launch.py its launches, workspaces, tensor maps and `before` steps.
"""

from __future__ import annotations

import re

from gpubench.core import expr
from gpubench.core.errors import GpubenchError
from gpubench import ops

# \Z, not $: "$" also matches before a final newline, which would let "name\n" through. ASCII: \w and \d
# take any script's letters and digits, which no C compiler or file name here expects.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
NAME_RULE = "letters, digits and . _ + -, starting with a letter or digit"  # what NAME takes, for messages
IDENT = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)
ARCH = re.compile(r"sm_\d{2,3}[af]?\Z", re.ASCII)


class SpecError(GpubenchError):
    """A kernel spec that cannot be used: one line naming the file, the entry and what is allowed."""


class Entry:
    """One [[variant]] table being checked; `fail` raises with the file and the entry named."""

    def __init__(self, table: dict, where: str, index: int):
        self.table, self.where = table, where
        self.label = f"variant {table['name']!r}" if isinstance(table.get("name"), str) else f"variant #{index + 1}"

    def fail(self, what: str):
        raise SpecError(f"{self.where}: {self.label}: {what}")

    def get(self, key, kind, default=None, what: str = ""):
        value = self.table.get(key, default)
        if value is default:
            return value
        ok = isinstance(value, kind) and not (kind in (int, float) and isinstance(value, bool))
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value, ok = float(value), True
        if not ok:
            self.fail(f"{key} must be {what or kind.__name__}, got {value!r}")
        return value

    def expression(self, key: str, text, allowed: set[str], boolean: bool = False) -> expr.Expr:
        try:
            e = expr.parse(text, boolean=boolean)
            expr.check_names(e, allowed)
        except expr.ExprError as err:
            self.fail(f"{key}: {err}")
        return e


def args_of(entry: Entry, op: str, scratch: tuple[str, ...] = (), table: dict | None = None,
          where: str = "args", required: bool = True) -> tuple[str, ...]:
    args = (entry.table if table is None else table).get("args")
    if args is None:
        entry.fail(f"{where} is missing: list the kernel's parameters in order, e.g. "
                   f"{list(ops.get(op).array_names + ops.get(op).dims)}")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        entry.fail(f"{where} must be a list of names (strings)")
    o = ops.get(op)
    lab = o.lab_names
    known = set(o.array_names) | set(o.scales) | set(o.scalars) | set(o.dims) | set(lab) | set(scratch)
    unknown = [a for a in args if a not in known]
    if unknown:
        entry.fail(f"{where}: unknown name(s) {', '.join(unknown)}; allowed for {op}: "
                   f"{', '.join(o.array_names + o.scales + o.scalars + o.dims + scratch)}" +
                   (f" (or the lab's {', '.join(lab)})" if lab else ""))
    repeated = sorted({a for a in args if args.count(a) > 1})
    if repeated:
        entry.fail(f"{where}: {', '.join(repeated)} appear(s) more than once")
    if lab and any(a in lab for a in args) and any(a not in lab for a in args):
        entry.fail(f"{where}: mix of gpubench's names and the lab's ({', '.join(lab)}): use one naming")
    canonical = tuple(lab.get(a, a) for a in args)
    if required:
        require_args(entry, op, canonical, where)
    return canonical


def require_args(entry: Entry, op: str, args, where: str = "args") -> None:
    required = ops.get(op).required + ops.get(op).required_args
    missing = [a for a in required if a not in args]
    if missing:
        entry.fail(f"{where}: missing {', '.join(missing)} (a {op} kernel needs {', '.join(required)})")
