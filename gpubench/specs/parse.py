"""One [[variant]] table of a kernel spec, checked and made into a Variant.

The rules of the spec format live here and beside it: the fields allowed, configurations and their labels,
constraints and search spaces here; the arguments in the op's names and the errors in gpubench/specs/entry.py;
launches, workspaces, TMA descriptors and `before` steps, evaluated on a ragged sample problem against CUDA's limits,
in gpubench/specs/launch.py; precisions and layouts in gpubench/specs/precision.py. A table that breaks one is refused
in one line naming the file, the entry and what is allowed (SpecError). gpubench/specs/files.py reads whole spec
documents (families, sets) and gpubench/specs/catalog.py holds the variants they declare.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

from gpubench.core import expr
from gpubench.core.backend_kind import BackendKind
from gpubench.core import paths
from gpubench.specs import runners
from gpubench.specs import precision as spec_precision
from gpubench.core.errors import one_line
from gpubench import ops
# SpecError, ARCH, LAB_BLOCK_SIZES and sample_problems are read from here by the rest of the package
from gpubench.specs.entry import ARCH, IDENT, NAME, NAME_RULE, Entry, SpecError, args_of, require_args  # noqa: F401
from gpubench.specs.launch import (LAB_BLOCK_SIZES, before_of, check_launches, launch_of,  # noqa: F401
                                  sample_problems, symbol_defined, tensor_maps_of, workspace_of)
from gpubench.specs.geometry import SMS
from gpubench.specs.variant import (Axis, CatalogEntry, Code, Config, ConfigSpace, Kernels, Program, Scope,
                                    Variant, config_label)

BACKENDS = tuple(BackendKind)
MAX_BLOCK_SIZE = 32  # B×B threads; 32×32 = 1024 is CUDA's per-block limit
KEYS = {
    "name", "op", "backend", "runner", "summary", "source", "kernel", "args", "grid", "block", "shared", "axis",
    "define", "configs", "defaults", "label", "constraints", "search", "tolerance", "arch", "lab", "baseline",
    "options", "includes", "before", "workspace", "requires", "tensor_maps", "family", *spec_precision.KEYS,
}
BUILTIN_ONLY = {"baseline"}
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


def variant_from(entry: Entry, sets: dict, base_dir: Path, builtin: bool) -> Variant:
    """The Variant one [[variant]] table declares, every rule checked (SpecError naming the entry otherwise)."""
    _check_keys(entry, builtin)
    name, op = _name(entry), _op(entry)
    backend, runner = _runner(entry, builtin)
    source, kernel = _source(entry, runner, base_dir)
    axis, define, tables, params = _axis(entry, sets, op)
    kernels, args = _kernels(entry, op, runner, params, source)
    chosen = spec_precision.precisions(entry, op, runner)
    program = _program(entry, base_dir, source, kernel, args, chosen)
    space = _space(entry, axis, define, tables, params, kernels.launch if kernels else None)
    scope = Scope(layouts=chosen["layouts"], dtypes=chosen["dtypes"], requires=_requires(entry, op),
                  tolerance=_tolerance(entry), epilogues=chosen["epilogues"],
                  reads=spec_precision.reads(entry, op, runner, kernels, args, chosen["epilogues"]))
    variant = Variant(name=name, op=op, backend=backend, code=Code(runner, program, kernels),
                      entry=_catalog_entry(entry, builtin), space=space, scope=scope)
    _check_on_samples(entry, variant)
    return variant


def _check_keys(entry: Entry, builtin: bool) -> None:
    unknown = sorted(set(entry.table) - KEYS)
    if unknown:
        entry.fail(f"unknown field(s) {', '.join(unknown)}; allowed are {', '.join(sorted(KEYS - BUILTIN_ONLY))}")
    op = entry.table.get("op")
    own_op = isinstance(op, str) and op in ops.names() and not ops.get(op).builtin  # its library is the project's
    if not builtin and not own_op and set(entry.table) & BUILTIN_ONLY:
        entry.fail(f"{', '.join(sorted(set(entry.table) & BUILTIN_ONLY))} is for built-in variants only (and "
                   "your own ops' variants)")


def _name(entry: Entry) -> str:
    name = entry.get("name", str)
    if not name or not NAME.match(name):
        entry.fail(f"name {'must be' if name else 'is required:'} {NAME_RULE} (e.g. \"my-shared\")")
    return name


def _op(entry: Entry) -> str:
    op = entry.get("op", str)
    if op not in ops.names():
        entry.fail(f"op must be one of {', '.join(ops.names())}, got {op!r}")
    return op


def _runner(entry: Entry, builtin: bool) -> tuple[BackendKind, runners.Runner]:
    """The backend and the runner, with its options checked (a .py source runs on the cpu unless told)."""
    source_text = entry.get("source", str, what="a file path")
    suffix = Path(source_text).suffix if source_text else ""
    backend = entry.get("backend", str, default=BackendKind.CPU if suffix == ".py" else BackendKind.CUDA)
    if backend not in BACKENDS:
        entry.fail(f"backend must be one of {', '.join(BACKENDS)}, got {backend!r}")
    names = runners.allowed(backend, builtin)
    runner_name = entry.get("runner", str, default=runners.default(backend, suffix).NAME)
    if runner_name not in names:
        entry.fail(f"runner {runner_name!r} is not allowed for the {backend} backend; allowed: {', '.join(names)}")
    options = entry.get("options", dict, default={}, what="a table")
    try:
        return BackendKind(backend), runners.runner_from(runner_name, options)
    except (ValueError, TypeError) as e:
        entry.fail(str(e))


def _source(entry: Entry, runner: runners.Runner, base_dir: Path) -> tuple[Path | None, str | None]:
    """The source file the runner needs (None where it needs none) and the kernel's symbol in it."""
    source_text = entry.get("source", str, what="a file path")
    kernel = entry.get("kernel", str, what="a symbol name")
    if runner.SOURCE is None:
        return None, kernel
    if not source_text:
        entry.fail("source is missing: the kernel's file, relative to this spec")
    source = paths.resolved(base_dir / source_text)
    if source.is_dir():
        entry.fail(f"source {source_text} is a directory: give the kernel's file (looked at {source})")
    if not source.is_file():
        entry.fail(f"source {source_text} is not a file (looked at {source})" if source.exists() else
                   f"source {source_text} does not exist (looked for {source})")
    if source.suffix != runner.SOURCE:
        entry.fail(f"source {source_text}: a {runner.NAME} variant's source is a {runner.SOURCE} file")
    if runner.LAUNCHES or kernel is not None:
        if not kernel or not IDENT.match(kernel):
            entry.fail("kernel is missing or not an identifier: the function's name in the source file")
        symbol_defined(entry, source, kernel, runner.SOURCE)
    return source, kernel


def _axis(entry: Entry, sets: dict, op: str) -> tuple[Axis, str, list[dict], set[str]]:
    """The axis, the block macro, the configuration tables and every parameter name they and the defaults use."""
    axis_text = entry.get("axis", str, default=None)
    if axis_text is not None and axis_text not in {a.value for a in Axis}:
        entry.fail(f"axis must be one of {', '.join(a.value for a in Axis)}, got {axis_text!r}")
    define = entry.get("define", str, default="BLOCK")
    if not IDENT.match(define):
        entry.fail(f"define must be a C macro name, got {define!r}")
    tables, params = _configs(entry, sets, Axis(axis_text) if axis_text else Axis.NONE)
    axis = Axis(axis_text) if axis_text else (Axis.CONFIGS if tables else Axis.NONE)
    if axis in (Axis.CONFIGS, Axis.TUNED) and not tables:
        entry.fail(f"axis = \"{axis.value}\" needs configs (for tuned: the one used where nothing was tuned)")
    params |= set(_defaults(entry)) | ({define} if axis == Axis.BLOCK else set())
    clash = sorted(params & (set(ops.get(op).dims) | set(ops.get(op).lab_names) | {"threads", "shared"}))
    if clash:
        entry.fail(f"parameter(s) {', '.join(clash)} would hide a problem dimension of the same name")
    return axis, define, tables, params


def _defaults(entry: Entry) -> dict:
    defaults = entry.get("defaults", dict, default={}, what="a table of integers")
    if not all(type(v) is int and IDENT.match(k) for k, v in defaults.items()):
        entry.fail("defaults must be a table of integers named like C macros")
    return defaults


def _kernels(entry: Entry, op: str, runner: runners.Runner, params: set[str],
             source: Path | None) -> tuple[Kernels | None, tuple[str, ...]]:
    """The kernels the call launches (None for a runner that launches none) and the main kernel's args."""
    if not runner.STEPS and {"before", "workspace"} & set(entry.table) or not runner.LAUNCHES and "tensor_maps" in \
            entry.table:
        entry.fail("before, workspace and tensor_maps are for CUDA kernel variants only")
    if runner.LAUNCHES:
        return _launched(entry, op, params, source)
    if runner.STEPS:  # steps ahead of a library call: the im2col unfold before cuBLAS
        workspace = workspace_of(entry, op, params)
        before = before_of(entry, op, params, tuple(name for name, _ in workspace), source)
        if not before:
            entry.fail(f"before is missing: the {runner.NAME} runner launches the spec's kernels first")
        columns = getattr(runner, "columns", None)
        if columns is not None and columns not in dict(workspace):
            entry.fail(f"workspace must hold {columns!r}, the array the {runner.NAME} runner reads")
        return Kernels(before=before, workspace=workspace), ()
    return None, args_of(entry, op) if runner.ARGS else ()


def _launched(entry: Entry, op: str, params: set[str], source: Path) -> tuple[Kernels, tuple[str, ...]]:
    """A CUDA kernel variant's launches: each array must reach some kernel, each scratch array and map too."""
    workspace = workspace_of(entry, op, params)
    scratch = tuple(name for name, _ in workspace)
    tensor_maps = tensor_maps_of(entry, op, params, scratch)
    passable = scratch + tuple(m.name for m in tensor_maps)
    before = before_of(entry, op, params, passable, source)
    args = args_of(entry, op, passable, required=not (before or tensor_maps))
    passed = {a for step in before for a in step.args} | set(args)  # what the call's kernels receive
    passed |= {m.array for m in tensor_maps if m.name in passed}  # an array reaches a kernel through its map
    if before or tensor_maps:  # the inputs and the output must reach some kernel of the call
        require_args(entry, op, passed, "args of the steps")
    unmapped = sorted(m.name for m in tensor_maps if m.name not in passed)
    if unmapped:
        entry.fail(f"tensor map(s) {', '.join(unmapped)} passed to no kernel")
    launch = launch_of(entry, op, params)
    unused = sorted(set(scratch) - passed)
    if unused:
        entry.fail(f"workspace {', '.join(unused)} is passed to no kernel")
    return Kernels(launch, before, workspace, tensor_maps), args


def _program(entry: Entry, base_dir: Path, source: Path | None, kernel: str | None, args: tuple[str, ...],
             chosen: dict) -> Program | None:
    """What the runner calls, with its build target and macros (None for a library call: nothing of the spec's)."""
    arch = entry.get("arch", str, what="an architecture such as \"sm_90a\"")
    if arch is not None and not ARCH.match(arch):
        entry.fail(f"arch must look like sm_80, sm_90 or sm_90a, got {arch!r}")
    includes = []
    for inc in entry.get("includes", list, default=[], what="a list of directories"):
        path = paths.resolved(base_dir / str(inc))
        if not path.is_dir():
            entry.fail(f"includes: {inc} is not a directory (looked for {path})")
        includes.append(path)
    program = Program(source=source, kernel=kernel, args=args, arch=arch, includes=tuple(includes),
                      dtype_define=chosen["dtype_define"], layout_define=chosen["layout_define"],
                      epilogue_define=chosen["epilogue_define"])
    return program if program != Program() else None


def _space(entry: Entry, axis: Axis, define: str, tables: list[dict], params: set[str], launch) -> ConfigSpace:
    """The configuration space: label template, constraints, search space and the configurations themselves."""
    label = entry.get("label", str, what="a template such as \"{BM}x{BN}\"")
    if label is not None:
        _check_label(entry, label, params)
    constraints = tuple(entry.expression("constraints", c, params | {"threads", "shared"}, boolean=True)
                        for c in entry.get("constraints", list, default=[], what="a list of conditions"))
    search = entry.get("search", dict, default={}, what="a table of lists of integers")
    if not all(isinstance(v, list) and v and all(type(x) is int for x in v) for v in search.values()):
        entry.fail("search must map each parameter to a non-empty list of integers")
    if set(search) - params:
        entry.fail(f"search names unknown parameter(s) {', '.join(sorted(set(search) - params))}")
    space = ConfigSpace(axis=axis, define=define, defaults=tuple(_defaults(entry).items()), label=label,
                        constraints=constraints, search=tuple((k, tuple(v)) for k, v in search.items()),
                        launch=launch)
    if tables:
        space = replace(space, configs=tuple(_config(space, t) for t in tables))
    return space


def _check_label(entry: Entry, label: str, params: set[str]) -> None:
    missing = sorted(set(re.findall(r"\{(\w+)\}", label)) - params)
    try:
        config_label(label, {p: 1 for p in params}, {})
        well_formed = True
    except (ValueError, KeyError, IndexError):
        well_formed = False
    if missing or not well_formed or re.search(r"\{(?!\w+\})", label):
        entry.fail(f"label {label!r} must name parameters as {{NAME}} (and use no other braces); unknown: "
                   f"{', '.join(missing) or 'none'}")


def _config(space: ConfigSpace, table: dict) -> Config:
    config = space.config({k: val for k, val in table.items() if k != "label"})
    return replace(config, label=table["label"]) if "label" in table else config


def _requires(entry: Entry, op: str) -> tuple[expr.Expr, ...]:
    return tuple(entry.expression("requires", r, set(ops.get(op).dims), boolean=True)
                 for r in entry.get("requires", list, default=[], what="a list of conditions"))


def _tolerance(entry: Entry) -> float | None:
    tolerance = entry.get("tolerance", float, default=None)  # None: the error model's, per dtype and problem
    if tolerance is not None and not 0 < tolerance < 1:
        entry.fail(f"tolerance must be between 0 and 1 (a relative error), got {tolerance}")
    return tolerance


def _catalog_entry(entry: Entry, builtin: bool) -> CatalogEntry:
    return CatalogEntry(summary=one_line(entry.get("summary", str, default="")),
                        origin="built-in" if builtin else entry.where,
                        baseline=entry.get("baseline", bool, default=False), lab=entry.get("lab", bool, default=False))


def _check_on_samples(entry: Entry, variant: Variant) -> None:
    """Launches, `requires` and constraints evaluated on the ragged sample problem: a condition that cannot be
    evaluated there is the spec's error, not a point's."""
    if variant.code.launch is not None:
        check_launches(entry, variant)
    sample = ops.get(variant.op).sample
    try:
        variant.scope.unfit(sample.dims())
    except expr.ExprError as err:
        entry.fail(f"requires: {err} (on a {sample.label} problem)")
    for c in variant.space.configs if variant.space.axis != Axis.BLOCK else ():
        broken = variant.space.satisfies(c)
        if broken:
            entry.fail(f"configuration {c.label} breaks the constraint {broken!r}")


# --- whole spec files -----------------------------------------------------------------------------------------
