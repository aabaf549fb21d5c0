"""How a spec's kernels are launched, checked: grid, block and shared memory as expressions, workspaces, TMA
descriptors, `before` steps and where their kernels are defined, and every configuration's launch evaluated on a
ragged sample problem against CUDA's limits. gpubench/specs/parse.py calls these for each [[variant]] table.
"""

from __future__ import annotations

import re
import tokenize
from pathlib import Path

from gpubench.core import expr
from gpubench.core import paths
from gpubench import ops
from gpubench.ops.epilogue import Fused
from gpubench.specs.entry import IDENT, Entry, args_of
from gpubench.specs.geometry import SAMPLE_SMS, SMS, TENSOR_MAP_MAX_DIMS, LaunchSpec, Step, TensorMap
from gpubench.specs.variant import Config, Variant

LAB_BLOCK_SIZES = (8, 16, 24, 32)
# Every launch is evaluated on its op's sample problem (ragged, so that a formula's slips show early).
MAP_KEYS = {"array", "box"}
MAP_OPTIONAL = {"shape", "swizzle", "im2col", "when", "layouts"}
SWIZZLES = (0, 32, 64, 128)  # bytes
STEP_KEYS = {"kernel", "args", "grid", "block", "shared"}


def launch_of(entry: Entry, op: str, names: set[str], table: dict | None = None, where: str = "") -> LaunchSpec:
    o = ops.get(op)
    allowed = set(o.dims) | set(o.lab_names) | names | {SMS}
    table = entry.table if table is None else table

    def exprs(key: str) -> tuple[expr.Expr, ...]:
        value = table.get(key)
        if value is None:
            entry.fail(f"{where}{key} is missing: give 1 to 3 expressions, e.g. {key} = [\"cdiv(N, 16)\", "
                       "\"cdiv(M, 16)\"]")
        items = value if isinstance(value, list) else [value]
        if not 1 <= len(items) <= 3:
            entry.fail(f"{where}{key} must have 1 to 3 expressions (x, y, z), got {len(items)}")
        return tuple(entry.expression(where + key, item, allowed) for item in items)

    return LaunchSpec(exprs("grid"), exprs("block"), entry.expression(where + "shared", table.get("shared", 0),
                                                                      allowed))


def workspace_of(entry: Entry, op: str, params: set[str]) -> tuple[tuple[str, expr.Expr], ...]:
    table = entry.get("workspace", dict, default={}, what="a table of sizes such as { U = \"16 * K * C\" }")
    o = ops.get(op)
    taken = set(o.array_names) | set(o.dims) | set(o.lab_names) | params
    for name in table:
        if not IDENT.match(name) or name in taken:
            entry.fail(f"workspace: {name!r} must be an identifier other than the problem's names and parameters")
    return tuple((name, entry.expression(f"workspace.{name}", size, set(o.dims) | params))
                 for name, size in table.items())


def tensor_maps_of(entry: Entry, op: str, params: set[str], scratch: tuple[str, ...]) -> tuple[TensorMap, ...]:
    """tensor_maps = { mapA = { array = "A", shape = ["M", "K"], box = ["BM", "32"] } }: TMA descriptors; a
    convolution's map_x = { array = "x", im2col = true, box = ["BM", "64"] } reads x in the copy engine's im2col
    mode (boxes of output pixels × channels of one filter tap; its shape follows from the problem). `when` (a
    condition on the problem and the configuration, e.g. "K % 8 == 0") builds the map only where it holds: elsewhere
    the kernel gets 128 bytes of zeros in its place and must take another path; so does `layouts` (a list of the
    op's layouts: the map is built for problems in those only)."""
    table = entry.get("tensor_maps", dict, default={},
                      what='a table such as { mapA = { array = "A", shape = ["M", "K"], box = ["BM", "32"] } }')
    o = ops.get(op)
    taken = set(o.array_names) | set(o.dims) | set(o.lab_names) | params | set(scratch)
    maps = []
    for name, t in table.items():
        where = f"tensor_maps.{name}"
        if not IDENT.match(name) or name in taken:
            entry.fail(f"{where}: the name must be an identifier other than the problem's names, parameters and "
                       "workspace")
        if not isinstance(t, dict) or not MAP_KEYS <= set(t) <= MAP_KEYS | MAP_OPTIONAL:
            entry.fail(f"{where} must be a table with {', '.join(sorted(MAP_KEYS))} (and optionally shape, swizzle, "
                       "im2col, when, layouts)")
        swizzle = t.get("swizzle", 128)
        if isinstance(swizzle, str):  # the configuration's choice, e.g. "BK": checked where a configuration resolves it
            swizzle = entry.expression(f"{where}.swizzle", swizzle, params)
        elif type(swizzle) is not int or swizzle not in SWIZZLES:
            entry.fail(f"{where}.swizzle must be 128 (bytes; the default), 64, 32, 0 (rows as they are) or an "
                       f"expression over the configuration, got {swizzle!r}")
        arrays = o.array_names + scratch
        if t["array"] not in arrays:
            entry.fail(f"{where}.array must be one of {', '.join(arrays)}, got {t['array']!r}")
        im2col = t.get("im2col", False)
        if type(im2col) is not bool:
            entry.fail(f"{where}.im2col must be true or false, got {im2col!r}")
        if im2col and (o.im2col is None or t["array"] != o.im2col[0] or "shape" in t):
            holders = " or ".join(f"a {h.noun}'s input {h.im2col[0]}" for h in ops.builtin() if h.im2col)
            entry.fail(f"{where}.im2col is for {holders}, without a shape (the problem gives it)")
        if "shape" not in t and not im2col and t["array"] not in o.matrices:
            holders = " or ".join(f"a {h.noun}'s {', '.join(h.matrices)}" for h in ops.builtin() if h.matrices)
            entry.fail(f"{where}.shape may be left out (the array as it lies in the problem's layout) only for "
                       f"{holders}; give rows and columns for {t['array']}")
        pair = {"shape": None}
        for key, allowed in (("shape", set(o.dims)), ("box", set(o.dims) | params)):
            if key not in t:
                continue
            if not isinstance(t[key], list) or not 2 <= len(t[key]) <= TENSOR_MAP_MAX_DIMS:
                entry.fail(f"{where}.{key} must be two expressions, rows then columns (contiguous), or up to "
                           f"{TENSOR_MAP_MAX_DIMS}, outermost first")
            pair[key] = tuple(entry.expression(f"{where}.{key}", e, allowed) for e in t[key])
        dims_given = len(pair["shape"]) if pair["shape"] else 2  # im2col's and a GEMM's own arrays: matrices
        if len(pair["box"]) != dims_given:
            entry.fail(f"{where}.box must have one expression per dimension of the array ({dims_given}), got "
                       f"{len(pair['box'])}")
        when = entry.expression(f"{where}.when", t["when"], set(o.dims) | params, boolean=True) if "when" in t \
            else None
        known = [str(x) for x in o.shape.LAYOUT]
        layouts = t.get("layouts", [])
        if not isinstance(layouts, list) or not all(isinstance(x, str) and x in known for x in layouts):
            entry.fail(f"{where}.layouts must be a list of the layouts {', '.join(known)}, got {layouts!r}")
        maps.append(TensorMap(name, t["array"], pair["shape"], pair["box"], swizzle, im2col, when, tuple(layouts)))
    return tuple(maps)


def before_of(entry: Entry, op: str, params: set[str], scratch: tuple[str, ...], source: Path) -> tuple[Step, ...]:
    tables = entry.get("before", list, default=[], what="a list of tables { kernel, args, grid, block, shared }")
    steps = []
    for i, t in enumerate(tables):
        where = f"before[{i}]."
        if not isinstance(t, dict) or set(t) - STEP_KEYS:
            entry.fail(f"before[{i}] must be a table with {', '.join(sorted(STEP_KEYS))}")
        kernel = t.get("kernel")
        if not isinstance(kernel, str) or not IDENT.match(kernel):
            entry.fail(f"{where}kernel is missing or not an identifier")
        symbol_defined(entry, source, kernel, ".cu")
        args = args_of(entry, op, scratch, table=t, where=where + "args", required=False)
        steps.append(Step(kernel, args, launch_of(entry, op, params, table=t, where=where)))
    return tuple(steps)


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def source_with_includes(source: Path, seen: set[Path] | None = None) -> str:
    """A CUDA source's text and that of the headers it includes by "quotes" from beside it, and theirs: where a
    kernel may be defined (a header shared by two kernel files)."""
    seen = seen if seen is not None else set()
    path = paths.resolved(source)
    if path in seen or not path.is_file():
        return ""
    seen.add(path)
    text = path.read_text(encoding="utf-8", errors="replace")
    return text + "".join(source_with_includes(path.parent / name, seen) for name in INCLUDE.findall(text))


def symbol_defined(entry: Entry, source: Path, symbol: str, suffix: str) -> None:
    """The symbol appears where the source could define it: a CUDA function's name before its parameters; in
    Python, a def or class, an assignment, or an import (`from mylib import matmul as f`), whose value the
    worker's import then checks (user_code: callable, its signature)."""
    if suffix == ".py":
        pattern = (rf"^\s*(?:async\s+)?(?:def|class)\s+{symbol}\b|^\s*{symbol}\s*(?::[^=\n]*)?=(?!=)"
                   rf"|^\s*(?:from\s+\S+\s+)?import\b.*\b{symbol}\b")
        try:
            with tokenize.open(source) as f:  # as Python reads it: UTF-8, or the encoding its first lines declare
                text = f.read()
        except (OSError, SyntaxError, UnicodeDecodeError) as e:
            entry.fail(f"source {source.name} cannot be read as Python source ({e})")
    else:
        pattern, text = rf"\b{symbol}\s*\(", source_with_includes(source)
    if not re.search(pattern, text, re.MULTILINE):
        where = source.name if suffix == ".py" else f"{source.name} or the headers it includes"
        entry.fail(f"kernel {symbol!r} is not defined in {where}")


def check_launches(entry: Entry, v: Variant) -> None:
    """Evaluate every configuration's launch on a ragged sample problem: CUDA's block limits, positive grids."""
    sample = ops.get(v.op).sample
    dims = sample.dims()
    for c in v.space.configs_for(LAB_BLOCK_SIZES):
        for step in v.code.steps():
            _checklaunch_of(entry, v, c, step, {**dims, SMS: SAMPLE_SMS})
        try:
            sizes = v.code.workspace_sizes(dims, c)
        except expr.ExprError as err:
            entry.fail(f"configuration {c.label}: workspace: {err}")
        if any(n < 1 for n in sizes.values()):
            entry.fail(f"configuration {c.label}: workspace {sizes} is empty for a {sample.label} problem")
        # (a variant whose `requires` turns the sample problem away has no map to check on it)
        maps = v.code.kernels.tensor_maps
        for m, problem in ((m, p) for m in maps for p in sample_problems(v) if not v.scope.unfit(dims)):
            try:
                bad = m.unfit({**dims, **c.values}, problem)
            except expr.ExprError as err:
                bad = f"tensor map {m.name}: {err}"
            if bad:
                entry.fail(f"configuration {c.label}: {bad}" + (f" in {problem.tag}" if problem.tag else ""))
        broken = v.space.satisfies(c)
        if broken:
            entry.fail(f"configuration {c.label} breaks the constraint {broken!r}")


def sample_problems(v: Variant) -> list:
    """The sample problem in every precision, layout and epilogue the variant takes (a tensor map's elements and
    shape follow them; a kernel is built for each)."""
    o = ops.get(v.op)
    return [o.sample_in(d, x, Fused(e)) for d in v.scope.dtypes for x in v.scope.layouts for e in v.scope.epilogues]


def _checklaunch_of(entry: Entry, v: Variant, c: Config, step: Step, dims) -> None:
    try:
        launch = step.launch_for(dims, c)
    except expr.ExprError as err:
        entry.fail(f"configuration {c.label}: {step.kernel}: {err}")
    beyond = launch.beyond_limits()
    if beyond:
        entry.fail(f"configuration {c.label}: {step.kernel}: {beyond} for a {ops.get(v.op).sample.label} problem")
