"""One [[variant]] table of a kernel spec, checked and made into a Variant.

Every rule of the spec format lives here: the fields allowed, the arguments in the op's names, configurations and
their labels, launches evaluated on a ragged sample problem against CUDA's limits, workspaces, TMA descriptors,
`before` steps, constraints and search spaces. A table that breaks one is refused in one line naming the file,
the entry and what is allowed (SpecError). gpubench/spec_files.py reads whole spec documents (families, sets)
and gpubench/catalog.py holds the variants they declare.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpubench import expr, runners, spec_precision
from gpubench.errors import GpubenchError
from gpubench.problems import ARRAYS, DIMS, LAB_NAMES, SCALES, GemmShape, Op, conv_shape
from gpubench.variant import (SAMPLE_SMS, SMS, Axis, Config, LaunchSpec, Step, TensorMap, Variant,
                              config_label)

OPS = tuple(Op)
BACKENDS = ("cuda", "cpu")
LAB_BLOCK_SIZES = (8, 16, 24, 32)
MAX_BLOCK_SIZE = 32  # B×B threads; 32×32 = 1024 is CUDA's per-block limit
KEYS = {
    "name", "op", "backend", "runner", "summary", "source", "kernel", "args", "grid", "block", "shared", "axis",
    "define", "configs", "defaults", "label", "constraints", "search", "tolerance", "arch", "lab", "baseline",
    "options", "includes", "before", "workspace", "requires", "tensor_maps", "family", *spec_precision.KEYS,
}
# A family's tables merge into each variant's own, key by key, so that a variant may add defaults or options.
MAP_KEYS = {"array", "box"}
MAP_OPTIONAL = {"shape", "swizzle"}
SWIZZLES = (0, 128)  # bytes
STEP_KEYS = {"kernel", "args", "grid", "block", "shared"}
BUILTIN_ONLY = {"baseline"}
# \Z, not $: "$" also matches before a final newline, which would let "name\n" through. ASCII: \w and \d
# take any script's letters and digits, which no C compiler or file name here expects.
NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*\Z")
IDENT = re.compile(r"[A-Za-z_]\w*\Z", re.ASCII)
ARCH = re.compile(r"sm_\d{2,3}[af]?\Z", re.ASCII)
# Problems every launch is evaluated on when a spec loads: ragged, so that a formula's slips show early.
SAMPLE_SHAPES = {Op.GEMM: GemmShape(1000, 1500, 777),
                 Op.CONV: conv_shape(1000, 2, batch=2, in_channels=3, out_channels=4, kernel=3)}


class SpecError(GpubenchError):
    """A kernel spec that cannot be used: one line naming the file, the entry and what is allowed."""


# --- reading one spec table -----------------------------------------------------------------------------------


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


def _args(entry: Entry, op: str, scratch: tuple[str, ...] = (), table: dict | None = None,
          where: str = "args", required: bool = True) -> tuple[str, ...]:
    args = (entry.table if table is None else table).get("args")
    if args is None:
        entry.fail(f"{where} is missing: list the kernel's parameters in order, e.g. {list(ARRAYS[op] + DIMS[op])}")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        entry.fail(f"{where} must be a list of names (strings)")
    lab = LAB_NAMES[op]
    known = set(ARRAYS[op]) | set(SCALES[op]) | set(DIMS[op]) | set(lab) | set(scratch)
    unknown = [a for a in args if a not in known]
    if unknown:
        entry.fail(f"{where}: unknown name(s) {', '.join(unknown)}; allowed for {op}: "
                   f"{', '.join(ARRAYS[op] + SCALES[op] + DIMS[op] + scratch)}" +
                   (f" (or the lab's {', '.join(lab)})" if lab else ""))
    repeated = sorted({a for a in args if args.count(a) > 1})
    if repeated:
        entry.fail(f"{where}: {', '.join(repeated)} appear(s) more than once")
    if lab and any(a in lab for a in args) and any(a not in lab for a in args):
        entry.fail(f"{where}: mix of gpubench's names and the lab's ({', '.join(lab)}): use one naming")
    canonical = tuple(lab.get(a, a) for a in args)
    if required:
        _require_args(entry, op, canonical, where)
    return canonical


def _require_args(entry: Entry, op: str, args, where: str = "args") -> None:
    required = ARRAYS[op] + (DIMS[op] if op == Op.GEMM else ())
    missing = [a for a in required if a not in args]
    if missing:
        entry.fail(f"{where}: missing {', '.join(missing)} (a {op} kernel needs {', '.join(required)})")


def _configs(entry: Entry, sets: dict, axis: Axis) -> tuple[list[dict], set[str]]:
    raw = entry.table.get("configs")
    if isinstance(raw, str):
        if raw not in sets:
            entry.fail(f"configs names the set {raw!r}, which [sets] does not define (defined: "
                       f"{', '.join(sorted(sets)) or 'none'})")
        raw = sets[raw]
    if raw is None:
        return [], set()
    if axis == Axis.BLOCK:
        entry.fail("configs and axis = \"block\" exclude each other: block sizes come from --block-sizes")
    if not isinstance(raw, list) or not raw or not all(isinstance(c, dict) for c in raw):
        entry.fail("configs must be a non-empty list of tables such as { BM = 128, BN = 128 }, or a set's name")
    params: list[dict] = []
    for c in raw:
        bad = [k for k, v in c.items() if k != "label" and (type(v) is not int or not IDENT.match(k))]
        label = c.get("label", "x")
        if bad or not isinstance(label, str) or not label.isprintable() or label != label.strip() or not label:
            entry.fail(f"configs: every value must be an integer named like a C macro, and a label printable text "
                       f"(got {c!r})")
        if SMS in c:
            entry.fail(f"configs: {SMS} is the device's multiprocessor count in launch expressions; name the "
                       "parameter otherwise")
        params.append(c)
    return params, {k for c in params for k in c if k != "label"}


def _launch(entry: Entry, op: str, names: set[str], table: dict | None = None, where: str = "") -> LaunchSpec:
    allowed = set(DIMS[op]) | set(LAB_NAMES[op]) | names | {SMS}
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


def _workspace(entry: Entry, op: str, params: set[str]) -> tuple[tuple[str, expr.Expr], ...]:
    table = entry.get("workspace", dict, default={}, what="a table of sizes such as { U = \"16 * K * C\" }")
    taken = set(ARRAYS[op]) | set(DIMS[op]) | set(LAB_NAMES[op]) | params
    for name in table:
        if not IDENT.match(name) or name in taken:
            entry.fail(f"workspace: {name!r} must be an identifier other than the problem's names and parameters")
    return tuple((name, entry.expression(f"workspace.{name}", size, set(DIMS[op]) | params))
                 for name, size in table.items())


def _tensor_maps(entry: Entry, op: str, params: set[str], scratch: tuple[str, ...]) -> tuple[TensorMap, ...]:
    """tensor_maps = { mapA = { array = "A", shape = ["M", "K"], box = ["BM", "32"] } }: TMA descriptors."""
    table = entry.get("tensor_maps", dict, default={},
                      what='a table such as { mapA = { array = "A", shape = ["M", "K"], box = ["BM", "32"] } }')
    taken = set(ARRAYS[op]) | set(DIMS[op]) | set(LAB_NAMES[op]) | params | set(scratch)
    maps = []
    for name, t in table.items():
        where = f"tensor_maps.{name}"
        if not IDENT.match(name) or name in taken:
            entry.fail(f"{where}: the name must be an identifier other than the problem's names, parameters and "
                       "workspace")
        if not isinstance(t, dict) or not MAP_KEYS <= set(t) <= MAP_KEYS | MAP_OPTIONAL:
            entry.fail(f"{where} must be a table with {', '.join(sorted(MAP_KEYS))} (and optionally shape, swizzle)")
        swizzle = t.get("swizzle", 128)
        if type(swizzle) is not int or swizzle not in SWIZZLES:
            entry.fail(f"{where}.swizzle must be 128 (bytes; the default) or 0 (rows as they are), got {swizzle!r}")
        arrays = ARRAYS[op] + scratch
        if t["array"] not in arrays:
            entry.fail(f"{where}.array must be one of {', '.join(arrays)}, got {t['array']!r}")
        if "shape" not in t and (op != Op.GEMM or t["array"] not in ARRAYS[op]):
            entry.fail(f"{where}.shape may be left out (the array as it lies in the problem's layout) only for a "
                       f"GEMM's {', '.join(ARRAYS[Op.GEMM])}; give rows and columns for {t['array']}")
        pair = {"shape": None}
        for key, allowed in (("shape", set(DIMS[op])), ("box", set(DIMS[op]) | params)):
            if key not in t:
                continue
            if not isinstance(t[key], list) or len(t[key]) != 2:
                entry.fail(f"{where}.{key} must be two expressions: rows, then columns (contiguous)")
            pair[key] = tuple(entry.expression(f"{where}.{key}", e, allowed) for e in t[key])
        maps.append(TensorMap(name, t["array"], pair["shape"], pair["box"], swizzle))
    return tuple(maps)


def _before(entry: Entry, op: str, params: set[str], scratch: tuple[str, ...], source: Path) -> tuple[Step, ...]:
    tables = entry.get("before", list, default=[], what="a list of tables { kernel, args, grid, block, shared }")
    steps = []
    for i, t in enumerate(tables):
        where = f"before[{i}]."
        if not isinstance(t, dict) or set(t) - STEP_KEYS:
            entry.fail(f"before[{i}] must be a table with {', '.join(sorted(STEP_KEYS))}")
        kernel = t.get("kernel")
        if not isinstance(kernel, str) or not IDENT.match(kernel):
            entry.fail(f"{where}kernel is missing or not an identifier")
        _symbol_defined(entry, source, kernel, ".cu")
        args = _args(entry, op, scratch, table=t, where=where + "args", required=False)
        steps.append(Step(kernel, args, _launch(entry, op, params, table=t, where=where)))
    return tuple(steps)


INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.MULTILINE)


def source_with_includes(source: Path, seen: set[Path] | None = None) -> str:
    """A CUDA source's text and that of the headers it includes by "quotes" from beside it, and theirs: where a
    kernel may be defined (a header shared by two kernel files)."""
    seen = seen if seen is not None else set()
    path = source.resolve()
    if path in seen or not path.is_file():
        return ""
    seen.add(path)
    text = path.read_text(errors="replace")
    return text + "".join(source_with_includes(path.parent / name, seen) for name in INCLUDE.findall(text))


def _symbol_defined(entry: Entry, source: Path, symbol: str, suffix: str) -> None:
    pattern = rf"\bdef\s+{symbol}\s*\(" if suffix == ".py" else rf"\b{symbol}\s*\("
    text = source.read_text(errors="replace") if suffix == ".py" else source_with_includes(source)
    if not re.search(pattern, text):
        where = source.name if suffix == ".py" else f"{source.name} or the headers it includes"
        entry.fail(f"kernel {symbol!r} is not defined in {where}")


def _check_launches(entry: Entry, v: Variant) -> None:
    """Evaluate every configuration's launch on a ragged sample problem: CUDA's block limits, positive grids."""
    dims = SAMPLE_SHAPES[v.op].dims()
    for c in v.configs_for(LAB_BLOCK_SIZES):
        for step in v.steps():
            _check_launch(entry, v, c, step, {**dims, SMS: SAMPLE_SMS})
        try:
            sizes = v.workspace_sizes(dims, c)
        except expr.ExprError as err:
            entry.fail(f"configuration {c.label}: workspace: {err}")
        if any(n < 1 for n in sizes.values()):
            entry.fail(f"configuration {c.label}: workspace {sizes} is empty for a {SAMPLE_SHAPES[v.op].label} problem")
        for m, problem in ((m, p) for m in v.tensor_maps for p in sample_problems(v)):
            try:
                bad = m.unfit({**dims, **c.values}, problem)
            except expr.ExprError as err:
                bad = f"tensor map {m.name}: {err}"
            if bad:
                entry.fail(f"configuration {c.label}: {bad}" + (f" in {problem.tag}" if problem.tag else ""))
        broken = v.satisfies(c)
        if broken:
            entry.fail(f"configuration {c.label} breaks the constraint {broken!r}")


def sample_problems(v: Variant) -> list:
    """The sample problem in every precision and layout the variant takes (a tensor map's elements and shape
    follow them)."""
    return [replace(SAMPLE_SHAPES[v.op], dtype=d, layout=x) for d in v.dtypes for x in v.layouts_taken]


def _check_launch(entry: Entry, v: Variant, c: Config, step: Step, dims) -> None:
    try:
        launch = step.launch_for(dims, c)
    except expr.ExprError as err:
        entry.fail(f"configuration {c.label}: {step.kernel}: {err}")
    beyond = launch.beyond_limits()
    if beyond:
        entry.fail(f"configuration {c.label}: {step.kernel}: {beyond} for a {SAMPLE_SHAPES[v.op].label} problem")


def variant_from(entry: Entry, sets: dict, base_dir: Path, builtin: bool) -> Variant:
    t = entry.table
    unknown = sorted(set(t) - KEYS)
    if unknown:
        entry.fail(f"unknown field(s) {', '.join(unknown)}; allowed are {', '.join(sorted(KEYS - BUILTIN_ONLY))}")
    if not builtin and set(t) & BUILTIN_ONLY:
        entry.fail(f"{', '.join(sorted(set(t) & BUILTIN_ONLY))} is for built-in variants only")
    name = entry.get("name", str)
    if not name or not NAME.match(name):
        entry.fail("name is required: letters, digits and . _ + - (e.g. \"my-shared\")")
    op = entry.get("op", str)
    if op not in OPS:
        entry.fail(f"op must be one of {', '.join(OPS)}, got {op!r}")
    op = Op(op)
    source_text = entry.get("source", str, what="a file path")
    suffix = Path(source_text).suffix if source_text else ""
    backend = entry.get("backend", str, default="cpu" if suffix == ".py" else "cuda")
    if backend not in BACKENDS:
        entry.fail(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    names = runners.allowed(backend, builtin)
    runner_name = entry.get("runner", str, default=runners.default(backend, suffix).NAME)
    if runner_name not in names:
        entry.fail(f"runner {runner_name!r} is not allowed for the {backend} backend; allowed: {', '.join(names)}")
    options = entry.get("options", dict, default={}, what="a table")
    try:
        runner = runners.runner_from(runner_name, options)
    except (ValueError, TypeError) as e:
        entry.fail(str(e))
    needs_source = runner.SOURCE is not None
    source = None
    if needs_source:
        if not source_text:
            entry.fail("source is missing: the kernel's file, relative to this spec")
        source = (base_dir / source_text).resolve()
        if source.is_dir():
            entry.fail(f"source {source_text} is a directory: give the kernel's file (looked at {source})")
        if not source.is_file():
            entry.fail(f"source {source_text} does not exist (looked for {source})")
        if source.suffix != runner.SOURCE:
            entry.fail(f"source {source_text}: a {runner.NAME} variant's source is a {runner.SOURCE} file")
    kernel = entry.get("kernel", str, what="a symbol name")
    if needs_source and (runner.LAUNCHES or kernel is not None):
        if not kernel or not IDENT.match(kernel):
            entry.fail("kernel is missing or not an identifier: the function's name in the source file")
        _symbol_defined(entry, source, kernel, runner.SOURCE)
    axis_text = entry.get("axis", str, default=None)
    if axis_text is not None and axis_text not in {a.value for a in Axis}:
        entry.fail(f"axis must be one of {', '.join(a.value for a in Axis)}, got {axis_text!r}")
    define = entry.get("define", str, default="BLOCK")
    if not IDENT.match(define):
        entry.fail(f"define must be a C macro name, got {define!r}")
    config_tables, params = _configs(entry, sets, Axis(axis_text) if axis_text else Axis.NONE)
    axis = Axis(axis_text) if axis_text else (Axis.CONFIGS if config_tables else Axis.NONE)
    if axis in (Axis.CONFIGS, Axis.TUNED) and not config_tables:
        entry.fail(f"axis = \"{axis.value}\" needs configs (for tuned: the one used where nothing was tuned)")
    defaults = entry.get("defaults", dict, default={}, what="a table of integers")
    if not all(type(v) is int and IDENT.match(k) for k, v in defaults.items()):
        entry.fail("defaults must be a table of integers named like C macros")
    params |= set(defaults) | ({define} if axis == Axis.BLOCK else set())
    clash = sorted(params & (set(DIMS[op]) | set(LAB_NAMES[op]) | {"threads", "shared"}))
    if clash:
        entry.fail(f"parameter(s) {', '.join(clash)} would hide a problem dimension of the same name")
    launch, args, before, workspace, tensor_maps = None, (), (), (), ()
    if not runner.STEPS and {"before", "workspace"} & set(t) or not runner.LAUNCHES and "tensor_maps" in t:
        entry.fail("before, workspace and tensor_maps are for CUDA kernel variants only")
    if runner.STEPS and not runner.LAUNCHES:  # steps ahead of a library call: the im2col unfold before cuBLAS
        workspace = _workspace(entry, op, params)
        before = _before(entry, op, params, tuple(name for name, _ in workspace), source)
        if not before:
            entry.fail(f"before is missing: the {runner.NAME} runner launches the spec's kernels first")
        columns = getattr(runner, "columns", None)
        if columns is not None and columns not in dict(workspace):
            entry.fail(f"workspace must hold {columns!r}, the array the {runner.NAME} runner reads")
    elif runner.LAUNCHES:
        workspace = _workspace(entry, op, params)
        scratch = tuple(name for name, _ in workspace)
        tensor_maps = _tensor_maps(entry, op, params, scratch)
        passable = scratch + tuple(m.name for m in tensor_maps)
        before = _before(entry, op, params, passable, source)
        args = _args(entry, op, passable, required=not (before or tensor_maps))
        passed = {a for step in before for a in step.args} | set(args)  # what the call's kernels receive
        passed |= {m.array for m in tensor_maps if m.name in passed}  # an array reaches a kernel through its map
        if before or tensor_maps:  # the inputs and the output must reach some kernel of the call
            _require_args(entry, op, passed, "args of the steps")
        unmapped = sorted(m.name for m in tensor_maps if m.name not in passed)
        if unmapped:
            entry.fail(f"tensor map(s) {', '.join(unmapped)} passed to no kernel")
        launch = _launch(entry, op, params)
        unused = sorted(set(scratch) - passed)
        if unused:
            entry.fail(f"workspace {', '.join(unused)} is passed to no kernel")
    elif runner.ARGS:
        args = _args(entry, op)
    requires = tuple(entry.expression("requires", r, set(DIMS[op]), boolean=True)
                     for r in entry.get("requires", list, default=[], what="a list of conditions"))
    label = entry.get("label", str, what="a template such as \"{BM}x{BN}\"")
    if label is not None:
        missing = sorted(set(re.findall(r"\{(\w+)\}", label)) - params)
        try:
            config_label(label, {p: 1 for p in params}, {})
            well_formed = True
        except (ValueError, KeyError, IndexError):
            well_formed = False
        if missing or not well_formed or re.search(r"\{(?!\w+\})", label):
            entry.fail(f"label {label!r} must name parameters as {{NAME}} (and use no other braces); unknown: "
                       f"{', '.join(missing) or 'none'}")
    constraints = tuple(entry.expression("constraints", c, params | {"threads", "shared"}, boolean=True)
                        for c in entry.get("constraints", list, default=[], what="a list of conditions"))
    search = entry.get("search", dict, default={}, what="a table of lists of integers")
    if not all(isinstance(v, list) and v and all(type(x) is int for x in v) for v in search.values()):
        entry.fail("search must map each parameter to a non-empty list of integers")
    if set(search) - params:
        entry.fail(f"search names unknown parameter(s) {', '.join(sorted(set(search) - params))}")
    tolerance = entry.get("tolerance", float, default=None)  # None: the error model's, per dtype and problem
    if tolerance is not None and not 0 < tolerance < 1:
        entry.fail(f"tolerance must be between 0 and 1 (a relative error), got {tolerance}")
    arch = entry.get("arch", str, what="an architecture such as \"sm_90a\"")
    if arch is not None and not ARCH.match(arch):
        entry.fail(f"arch must look like sm_80, sm_90 or sm_90a, got {arch!r}")
    includes = []
    for inc in entry.get("includes", list, default=[], what="a list of directories"):
        path = (base_dir / str(inc)).resolve()
        if not path.is_dir():
            entry.fail(f"includes: {inc} is not a directory (looked for {path})")
        includes.append(path)
    variant = Variant(
        name=name, op=op, backend=backend, runner=runner, summary=entry.get("summary", str, default=""),
        source=source, kernel=kernel, args=args, launch=launch, axis=axis, define=define,
        defaults=tuple(defaults.items()), label=label, constraints=constraints,
        search=tuple((k, tuple(v)) for k, v in search.items()), tolerance=tolerance, arch=arch,
        lab=entry.get("lab", bool, default=False), baseline=entry.get("baseline", bool, default=False),
        includes=tuple(includes), before=before, workspace=workspace, requires=requires,
        tensor_maps=tensor_maps,
        origin="built-in" if builtin else entry.where, **spec_precision.precisions(entry, op, runner),
    )
    if config_tables:
        variant = replace(variant, configs=tuple(_config(variant, c) for c in config_tables))
    if launch is not None:
        _check_launches(entry, variant)
    for c in variant.configs if variant.axis != Axis.BLOCK else ():
        broken = variant.satisfies(c)
        if broken:
            entry.fail(f"configuration {c.label} breaks the constraint {broken!r}")
    return variant


def _config(v: Variant, table: dict) -> Config:
    config = v.config({k: val for k, val in table.items() if k != "label"})
    return replace(config, label=table["label"]) if "label" in table else config


# --- whole spec files -----------------------------------------------------------------------------------------
