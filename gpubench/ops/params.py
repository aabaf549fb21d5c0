"""Reading an op's parameters, from the command line (text) or a suite (TOML values), with one message each.

A parameter (gpubench/ops/base.py's :class:`Param`) arrives as the command line writes it (`--sizes 512,1024`,
`--mnk 1000,1500,777` repeated) or as a suite's [[sweep]] table does (`sizes = [512, 1024]`,
`mnk = [[1000, 1500, 777]]`). Each reader takes either and says what is wrong in the words of where it came from.
"""

from __future__ import annotations

from gpubench.core.errors import GpubenchError


def _int_text(item: str, what: str, example: str) -> int:
    try:
        if not item.isascii():  # int() takes any script's digits (٣ is 3); a typo here is not meant as one
            raise ValueError(item)
        return int(item)
    except ValueError:
        raise GpubenchError(f"{what}: {item!r} is not an integer; give comma-separated integers such as "
                            f"{example}") from None


def int_list(text: str, what: str, *, lo: int = 1, hi: int | None = None, example: str = "512,1024") -> tuple[int, ...]:
    """'512,1024' → (512, 1024), each once; one line naming the allowed range otherwise."""
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise GpubenchError(f"{what} is empty: give comma-separated integers such as {example}")
    values = []
    for item in items:
        v = _int_text(item, what, example)
        if v < lo or (hi is not None and v > hi):
            allowed = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise GpubenchError(f"{what}: {v} is out of range; allowed: {allowed} (e.g. {example})")
        values.append(v)
    return tuple(dict.fromkeys(values))


def toml_ints(value, where: str, lo: int = 1) -> list[int]:
    """A suite's positive integer or list of them (or a tuple: a default); lo=0 takes 0 too (a flag)."""
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    if not values or not all(isinstance(v, int) and not isinstance(v, bool) and v >= lo for v in values):
        what = "positive" if lo > 0 else "non-negative"
        raise GpubenchError(f"{where} must be a {what} integer or a list of them, got {value!r}")
    return values


def ints(value, where: str, example: str = "512,1024", lo: int = 1) -> tuple[int, ...]:
    """Positive integers (lo=0: non-negative), from text (the command line) or TOML (a suite)."""
    if isinstance(value, str):
        return int_list(value, where, lo=lo, example=example)
    return tuple(toml_ints(value, where, lo))


def one_int(value, where: str) -> int:
    """One positive integer (a suite gives one per sweep: each value its own [[sweep]])."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 1:
            raise GpubenchError(f"{where} must be a positive integer, got {value}")
        return value
    values = toml_ints(value, where)
    if len(values) != 1:
        raise GpubenchError(f"{where} is one integer per sweep (got {values}); give each value its own [[sweep]]")
    return values[0]


def triple(value, where: str, example: str = "1000,1500,777") -> tuple[int, int, int]:
    """M,N,K: text ("1000,1500,777") or a TOML list ([1000, 1500, 777])."""
    if isinstance(value, str):
        items = [t.strip() for t in value.split(",")]
        if len(items) != 3 or not all(items):
            raise GpubenchError(f"{where} {value!r} needs exactly three positive integers M,N,K, e.g. {where} {example}")
        return tuple(int_list(item, where, example=example)[0] for item in items)
    if not (isinstance(value, list) and len(value) == 3):
        raise GpubenchError(f"{where} entries must be [M, N, K], got {value!r}")
    return tuple(toml_ints(value, where))


def triples(value, where: str) -> list[tuple[int, int, int]]:
    """A repeatable M,N,K (the command line's tuple of texts) or a suite's list of [M, N, K]."""
    if value is None:
        return []
    if not isinstance(value, (list, tuple)):
        raise GpubenchError(f"{where} must be a list of [M, N, K] triples")
    return [triple(t, where) for t in value]


def text(value, where: str, allowed: str) -> str | int:
    """A word or a non-negative integer (padding = "same" | "valid" | 1)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise GpubenchError(f"{where} must be {allowed}")
    return value


def number(value, where: str) -> float | None:
    """A finite number, from text (the command line) or TOML (a suite); None stays None (not given)."""
    if value is None:
        return None
    if isinstance(value, str):
        try:
            if not value.strip().isascii():
                raise ValueError(value)
            value = float(value)
        except ValueError:
            raise GpubenchError(f"{where}: {value!r} is not a number; give one such as 0.5 or 2") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (
            float("inf"), float("-inf")):
        raise GpubenchError(f"{where} must be a finite number, got {value!r:.40}")
    return float(value)


def word(value, where: str, kind):
    """One of an enum's words (any case), from the command line or a suite; one line naming the allowed ones."""
    try:
        return kind(str(value).strip().lower()) if isinstance(value, str) else kind(value)
    except ValueError:
        raise GpubenchError(f"{where}: {value!r:.40} is not allowed; allowed: {', '.join(kind)}") from None


def words(value, where: str, kind) -> tuple:
    """One or more of an enum's words, each once: comma-separated text (the command line) or a suite's list."""
    items = value if isinstance(value, (list, tuple)) else str(value).split(",") if isinstance(value, str) else [value]
    if not items or (isinstance(value, str) and not value.strip()):
        raise GpubenchError(f"{where} is empty; allowed: {', '.join(kind)}")
    return tuple(dict.fromkeys(word(v, where, kind) for v in items))
