"""Spec expressions: integer arithmetic and conditions from a whitelist, never Python's eval."""

import pickle

import pytest

from gpubench.core import expr
from gpubench.core.expr import ExprError


@pytest.mark.parametrize("text,values,want", [
    ("cdiv(N, BN)", {"N": 1000, "BN": 128}, 8),
    ("(BM / TM) * (BN / TN)", {"BM": 128, "TM": 8, "BN": 64, "TN": 4}, 256),  # / is integer division, as in C
    ("4 * STAGES * BK * (BM + 4 + BN)", {"STAGES": 2, "BK": 8, "BM": 128, "BN": 128}, 16640),
    ("max(1, min(OW, 32)) % 7", {"OW": 100}, 4),
    ("-3 + +5 // 2", {}, -1),
    (17, {}, 17),
])
def test_arithmetic(text, values, want):
    assert expr.parse(text)(values) == want


@pytest.mark.parametrize("text,values,want", [
    ("threads == 128 or threads == 256", {"threads": 256}, True),
    ("BM % WM == 0 and not BK > 16", {"BM": 128, "WM": 64, "BK": 8}, True),
    ("1 <= TM <= 8", {"TM": 16}, False),
])
def test_conditions(text, values, want):
    assert expr.parse(text, boolean=True)(values) is want


@pytest.mark.parametrize("text,match", [
    ("__import__('os').system('true')", "not allowed"),
    ("N ** 2", "not allowed"),
    ("BM.bit_length()", "not allowed"),
    ("[1, 2]", "not allowed"),
    ("1.5 * N", "not allowed"),
    ("cdiv(N)", "two arguments"),
    ("min(N, key=1)", "two or more"),
    ("N == 1", "not allowed"),  # comparisons only where a condition is expected
    ("cdiv(N,", "does not parse"),
    ("", "does not parse"),
])
def test_refused(text, match):
    with pytest.raises(ExprError, match=match):
        expr.parse(text)


def test_not_a_string_or_int():
    with pytest.raises(ExprError, match="not an expression"):
        expr.parse(True)


def test_unknown_names_and_missing_values_and_division_by_zero():
    e = expr.parse("cdiv(M, BLOCK) + X")
    assert e.names == {"M", "BLOCK", "X"}
    with pytest.raises(ExprError, match="unknown symbol.*X"):
        expr.check_names(e, {"M", "BLOCK"})
    with pytest.raises(ExprError, match="X has no value"):
        e({"M": 1, "BLOCK": 1})
    with pytest.raises(ExprError, match="divides by zero"):
        expr.parse("cdiv(M, B)")({"M": 1, "B": 0})
    with pytest.raises(ExprError, match="divides by zero"):
        expr.parse("M % B")({"M": 1, "B": 0})


def test_expressions_pickle_for_worker_processes():
    e = expr.parse("cdiv(N, BN) * 2")
    again = pickle.loads(pickle.dumps(e))
    assert again == e and again({"N": 10, "BN": 4}) == 6
