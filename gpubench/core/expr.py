"""Small integer expressions for kernel specs: launch shapes and configuration constraints, never Python's eval.

A spec says ``grid = ["cdiv(N, BN)", "cdiv(M, BM)"]``. :func:`parse` reads such a string with Python's own
parser (``ast``, mode ``eval``) and keeps it only if every node is on a short list: integer literals, names,
``+ - * / // %`` (``/`` is integer division, as in CUDA C), unary minus, ``cdiv``/``min``/``max`` calls and, for
constraints, comparisons with ``and``/``or``/``not``. What is kept is turned into nested tuples, so an
expression pickles (it travels to worker processes) and evaluating it runs no user code.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from typing import Mapping

FUNCTIONS = ("cdiv", "min", "max")
MAX_LENGTH = 400  # characters: a launch formula is a line, not a program
_ARITH = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "//", ast.FloorDiv: "//", ast.Mod: "%"}
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


class ExprError(ValueError):
    """An expression that does not parse, uses something not allowed, names an unknown symbol or cannot be
    evaluated (division by zero). The message is one line."""


@dataclass(frozen=True)
class Expr:
    text: str
    tree: tuple
    names: frozenset[str]

    def __call__(self, values: Mapping[str, int]) -> int:
        return _eval(self.tree, values, self.text)

    def __str__(self) -> str:
        return self.text


def parse(text: str | int, *, boolean: bool = False) -> Expr:
    """Parse an arithmetic expression (or, with boolean=True, a condition). Raises ExprError saying what is wrong."""
    if isinstance(text, bool) or not isinstance(text, (int, str)):
        raise ExprError(f"{text!r} is not an expression: give an integer or a string such as \"cdiv(N, 16)\"")
    text = str(text).strip()
    if len(text) > MAX_LENGTH:
        raise ExprError(f"{text[:40]!r}... is {len(text)} characters long; at most {MAX_LENGTH} are allowed")
    try:
        node = ast.parse(text, mode="eval").body
        names: set[str] = set()
        tree = _convert(node, text, names, boolean)
    except SyntaxError:
        raise ExprError(f"{text!r} does not parse as an expression") from None
    except (RecursionError, MemoryError):
        raise ExprError(f"{text[:40]!r}... is nested too deeply") from None
    return Expr(text, tree, frozenset(names))


def check_names(expr: Expr, allowed: set[str] | frozenset[str]) -> None:
    unknown = sorted(expr.names - set(allowed))
    if unknown:
        raise ExprError(f"{expr.text!r} names unknown symbol(s) {', '.join(unknown)}; known here: "
                        f"{', '.join(sorted(allowed))}")


def _convert(node, text: str, names: set[str], boolean: bool) -> tuple:
    def sub(n, as_bool=False):
        return _convert(n, text, names, as_bool)

    if isinstance(node, ast.Constant) and type(node.value) is int:
        return ("num", node.value)
    if isinstance(node, ast.Name):
        names.add(node.id)
        return ("name", node.id)
    if isinstance(node, ast.BinOp) and type(node.op) in _ARITH:
        return ("bin", _ARITH[type(node.op)], sub(node.left), sub(node.right))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        return ("neg" if isinstance(node.op, ast.USub) else "pos", sub(node.operand))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in FUNCTIONS:
        if node.keywords or len(node.args) < 2 or (node.func.id == "cdiv" and len(node.args) != 2):
            raise ExprError(f"{text!r}: {node.func.id}() takes {'two' if node.func.id == 'cdiv' else 'two or more'} "
                            "arguments")
        return ("call", node.func.id, tuple(sub(a) for a in node.args))
    if boolean:
        if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
            return ("cmp", tuple(_COMPARE[type(op)] for op in node.ops), sub(node.left),
                    tuple(sub(c) for c in node.comparators))
        if isinstance(node, ast.BoolOp):
            return ("and" if isinstance(node.op, ast.And) else "or", tuple(sub(v, True) for v in node.values))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return ("not", sub(node.operand, True))
    what = ast.get_source_segment(text, node) or type(node).__name__
    allowed = "integers, names, + - * / // %, cdiv/min/max" + (", comparisons, and/or/not" if boolean else "")
    raise ExprError(f"{text!r}: {what!r} is not allowed; allowed are {allowed}")


def _eval(tree: tuple, values: Mapping[str, int], text: str):
    kind = tree[0]
    if kind == "num":
        return tree[1]
    if kind == "name":
        try:
            return values[tree[1]]
        except KeyError:
            raise ExprError(f"{text!r}: {tree[1]} has no value here") from None
    if kind == "bin":
        a, b = _eval(tree[2], values, text), _eval(tree[3], values, text)
        if tree[1] in ("//", "%") and b == 0:
            raise ExprError(f"{text!r} divides by zero")
        op = tree[1]
        return a + b if op == "+" else a - b if op == "-" else a * b if op == "*" else a // b if op == "//" else a % b
    if kind == "neg":
        return -_eval(tree[1], values, text)
    if kind == "pos":
        return _eval(tree[1], values, text)
    if kind == "call":
        args = [_eval(a, values, text) for a in tree[2]]
        if tree[1] == "cdiv":
            if args[1] == 0:
                raise ExprError(f"{text!r} divides by zero")
            return -(-args[0] // args[1])
        return min(args) if tree[1] == "min" else max(args)
    if kind == "cmp":
        left = _eval(tree[2], values, text)
        for op, right_tree in zip(tree[1], tree[3]):
            right = _eval(right_tree, values, text)
            ok = {"==": left == right, "!=": left != right, "<": left < right, "<=": left <= right,
                  ">": left > right, ">=": left >= right}[op]
            if not ok:
                return False
            left = right
        return True
    if kind == "and":
        return all(_eval(t, values, text) for t in tree[1])
    if kind == "or":
        return any(_eval(t, values, text) for t in tree[1])
    if kind == "not":
        return not _eval(tree[1], values, text)
    raise AssertionError(kind)
