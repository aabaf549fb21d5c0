"""Spec documents: the [[family]] tables of a file merged into its [[variant]]s, named [sets] of configurations,
each table checked into a Variant (gpubench/specs/parse.py), and the `--kernel FILE:SYMBOL` shortcut, which is a spec of
one variant with the lab's launch.

Built-in variants come from ``cuda_src/<op>/variants.toml`` (gpubench/specs/catalog.py reads them), a project's own from
its gpubench.toml (gpubench/specs/project.py finds it) or from ``--kernel``: all three go through :func:`parse_specs`, so
they obey one format and one set of rules.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from gpubench.core.errors import parser_complaint
from gpubench import ops
from gpubench.specs.runners import PythonRunner
from gpubench.specs.parse import IDENT, KEYS, NAME, NAME_RULE, Entry, SpecError, variant_from
from gpubench.specs.variant import Variant

# A family's tables merge into each variant's own, key by key, so that a variant may add defaults or options.
MERGED_KEYS = {"defaults", "options", "workspace", "tensor_maps"}


def _families(data: dict, where: str) -> dict[str, dict]:
    """The [[family]] tables of a spec document by name: what several variants share."""
    tables = data.get("family", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"{where}: families are declared as [[family]] tables")
    families: dict[str, dict] = {}
    for i, t in enumerate(tables):
        name = t.get("name")
        label = f"family {name!r}" if isinstance(name, str) else f"family #{i + 1}"
        if not isinstance(name, str) or not NAME.match(name):
            raise SpecError(f"{where}: {label}: name is required: {NAME_RULE}")
        if name in families:
            raise SpecError(f"{where}: {label}: declared twice")
        unknown = sorted(set(t) - (KEYS - {"family"}))
        if unknown:
            raise SpecError(f"{where}: {label}: unknown field(s) {', '.join(unknown)}; a family holds what its "
                            f"variants share: {', '.join(sorted(KEYS - {'family', 'name'}))}")
        families[name] = {k: v for k, v in t.items() if k != "name"}
    return families


def _with_family(table: dict, families: dict[str, dict], where: str, index: int) -> dict:
    """A [[variant]] table with its family's keys filled in (the variant's own win; MERGED_KEYS merge)."""
    name = table.get("family")
    if name is None:
        return table
    label = f"variant {table['name']!r}" if isinstance(table.get("name"), str) else f"variant #{index + 1}"
    if not isinstance(name, str) or name not in families:
        raise SpecError(f"{where}: {label}: family {name!r} is not declared; declared: "
                        f"{', '.join(families) or 'none'} (a [[family]] table with that name)")
    merged = {**families[name], **{k: v for k, v in table.items() if k != "family"}}
    for key in MERGED_KEYS & set(families[name]) & set(table):
        if isinstance(table[key], dict) and isinstance(families[name][key], dict):
            merged[key] = {**families[name][key], **table[key]}
    return merged


def parse_specs(data: dict, where: str, base_dir: Path, *, builtin: bool = False,
                shared_sets: dict | None = None) -> list[Variant]:
    """The variants a spec document declares: [[variant]] tables, each maybe naming a [[family]] whose keys it
    shares, and an optional [sets] of named configuration lists (`shared_sets` adds those of sibling files)."""
    sets = data.get("sets", {})
    if not isinstance(sets, dict):
        raise SpecError(f"{where}: [sets] must be a table of configuration lists")
    sets = {**(shared_sets or {}), **sets}
    tables = data.get("variant", [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise SpecError(f"{where}: variants are declared as [[variant]] tables")
    families = _families(data, where)
    tables = [_with_family(t, families, where, i) for i, t in enumerate(tables)]
    found = [variant_from(Entry(t, where, i), sets, base_dir, builtin) for i, t in enumerate(tables)]
    seen: set[tuple] = set()
    for v in found:
        key = (v.op, v.backend, v.name)
        if key in seen:
            raise SpecError(f"{where}: variant {v.name!r}: declared twice for {v.op} on the {v.backend} backend")
        seen.add(key)
    return found


def read_toml(path: Path, what: str) -> dict:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8-sig"))  # -sig: an editor's byte-order mark
    except (OSError, UnicodeDecodeError) as e:
        raise SpecError(f"{path}: cannot read the {what} ({e})") from None
    except ValueError as e:  # TOMLDecodeError, or an integer of more digits than Python converts (4300)
        raise SpecError(f"{path}: not valid TOML ({parser_complaint(e)})") from None
    except RecursionError:  # tomllib recurses once per level of nesting
        raise SpecError(f"{path}: not a {what} gpubench can read (arrays or tables nested too deeply)") from None


def lab_kernel(op: str, text: str, args: str | None, dtypes=("fp32",)) -> Variant:
    """The variant for `--kernel [NAME=]FILE:SYMBOL`: the lab's launch (B×B blocks, one thread per output), or
    for a .py file a Python function on the CPU backend (called once per point: no blocks).

    The block size arrives as -DBLOCK_SIZE=B, the lab's macro; a CUDA kernel gets its element type as
    -DELEM=<C type> and its output's as -DELEM_OUT (float for fp32, __half for fp16, ...), in the asked dtypes. GEMM arguments default to the lab's order and
    naming, (a, b, c, m, n, k) with a m×n and b n×k; conv arguments to gpubench's (x, w, y, N, C, ..., OW).
    """
    name, eq, target = text.partition("=")
    if not eq or ":" in name or "/" in name:
        name, eq, target = "", "", text
    if eq and not name.strip():
        raise SpecError(f"--kernel {text!r}: NAME before = is empty (an unset variable?): give NAME=FILE:SYMBOL, "
                        "or FILE:SYMBOL to name the variant after SYMBOL")
    file, sep, symbol = target.rpartition(":")
    if not sep or not file or not symbol:
        raise SpecError(f"--kernel {text!r}: give FILE:SYMBOL, e.g. --kernel my_lab.cu:gpu_matrix_mult_sm")
    if not IDENT.match(symbol):
        raise SpecError(f"--kernel {text!r}: SYMBOL {symbol!r} is not a function's name (letters, digits and _, not "
                        "starting with a digit), e.g. --kernel my_lab.cu:gpu_matrix_mult_sm")
    if not NAME.match(name or symbol):
        raise SpecError(f"--kernel {text!r}: {f'NAME {name!r}' if name else f'SYMBOL {symbol!r}, the variant name,'} "
                        f"must be {NAME_RULE} (e.g. mine=my_lab.cu:gpu_matrix_mult_sm)")
    o = ops.get(op)
    default_args = o.kernel_args or ",".join(o.array_names + o.dims)
    order = [a.strip() for a in (default_args if args is None else args).split(",") if a.strip()]
    if not order:
        raise SpecError(f"--args {args!r} is empty (an unset variable?): give the kernel's parameter order, e.g. "
                        f"--args {default_args}, or leave it out for that default")
    grid = list(o.kernel_grid)  # the lab's launch: one thread per output, laid out as the op says
    table = {
        "name": name or symbol, "op": op, "source": file, "kernel": symbol, "args": order, "axis": "block",
        "define": "BLOCK_SIZE", "grid": grid, "block": ["BLOCK_SIZE", "BLOCK_SIZE"],
        "summary": f"{symbol} from {file}, with the lab's launch: B×B blocks, one thread per output",
        "dtypes": [str(d) for d in dtypes],
    }
    if Path(file).suffix == ".cu":
        table["dtype_define"] = "ELEM"
    if Path(file).suffix == PythonRunner.SOURCE:  # a function is called, not launched: no blocks, one configuration
        table = {k: v for k, v in table.items() if k not in ("axis", "define", "grid", "block")}
        table["summary"] = f"{symbol} from {file}: a Python function given the arrays and sizes, writing its output"
    (variant,) = parse_specs({"variant": [table]}, "--kernel", Path.cwd())
    return variant
