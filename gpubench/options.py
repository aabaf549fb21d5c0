"""Parsing and checking command-line values: each bad value becomes one line saying what is allowed."""

from __future__ import annotations

from gpubench.errors import GpubenchError
from gpubench.registry import MAX_BLOCK_SIZE


def int_list(text: str, what: str, *, lo: int = 1, hi: int | None = None, example: str = "512,1024") -> tuple[int, ...]:
    items = [t.strip() for t in str(text).split(",") if t.strip()]
    if not items:
        raise GpubenchError(f"{what} is empty: give comma-separated integers such as {example}")
    values = []
    for item in items:
        try:
            v = int(item)
        except ValueError:
            raise GpubenchError(f"{what}: {item!r} is not an integer; give comma-separated integers such as "
                                f"{example}") from None
        if v < lo or (hi is not None and v > hi):
            allowed = f"{lo}..{hi}" if hi is not None else f"at least {lo}"
            raise GpubenchError(f"{what}: {v} is out of range; allowed: {allowed} (e.g. {example})")
        values.append(v)
    return tuple(dict.fromkeys(values))


def sizes(text: str) -> tuple[int, ...]:
    return int_list(text, "--sizes", example="512,1024,2048")


def block_sizes(text: str) -> tuple[int, ...]:
    return int_list(text, "--block-sizes", hi=MAX_BLOCK_SIZE, example="8,16,24,32")


def strides(text: str) -> tuple[int, ...]:
    return int_list(text, "--stride", example="1,2,3")


def mnk(text: str) -> tuple[int, int, int]:
    items = [t.strip() for t in str(text).split(",")]
    if len(items) != 3 or not all(items):
        raise GpubenchError(f"--mnk {text!r} needs exactly three positive integers M,N,K, e.g. --mnk 1000,1500,777")
    m, n, k = (int_list(item, "--mnk", example="1000,1500,777")[0] for item in items)
    return m, n, k


def names(text: str | None, what: str = "--variants") -> list[str] | None:
    if text is None:
        return None
    found = [t.strip() for t in text.split(",") if t.strip()]
    if not found:
        raise GpubenchError(f"{what} is empty: give comma-separated names (see `gpubench list`), or leave it out for "
                            "the default set")
    return found
