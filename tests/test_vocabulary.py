"""The domain's words are types: no module branches on an op, dtype, layout, runner, status, run status, stop
reason, verdict or backend by its string, except the module that defines it (the enum or the runner type). A
comparison with such a string (`p.op == "gemm"`, `status in ("fail", "error")`) anywhere else fails here; compare
with the enum member, or ask the type (a shape's or a runner's own attributes) instead."""

import ast
from pathlib import Path

import pytest

from gpubench.analysis.compare import Verdict
from gpubench.analysis.targets import Measure, TargetVerdict
from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.epilogue import Epilogue, Scaling
from gpubench.ops.gemm import GemmLayout
from gpubench import ops
from gpubench.core.backend_kind import BackendKind
from gpubench.results import RunStatus, Status
from gpubench.specs.runners import RUNNERS
from gpubench.measure.timing import Pace, Stop

PACKAGE = Path(__file__).resolve().parent.parent / "gpubench"
# each word, and the module allowed to spell it (where its type is defined)
WORDS = {
    **{op.name: f"ops/{op.name}.py" for op in ops.builtin()},
    **{str(v): "core/dtypes.py" for v in DType},
    **{str(v): "ops/gemm.py" for v in GemmLayout},
    **{str(v): "ops/conv.py" for v in ConvLayout},
    **{str(v): "ops/epilogue.py" for v in (*Epilogue, *Scaling)},
    **{name: "specs/runners.py" for name in RUNNERS},
    **{str(v): "results/model.py" for v in (*Status, *RunStatus)},
    **{str(v): "measure/timing.py" for v in (*Stop, *Pace)},
    **{str(v): "analysis/compare.py" for v in Verdict},
    **{str(v): "analysis/targets.py" for v in (*TargetVerdict, *Measure)},
    **{str(v): "core/backend_kind.py" for v in BackendKind},
}
# Same spelling, another meaning: (module, word) -> what the string is there.
OTHER_MEANINGS = {
    ("ops/conv.py", "same"): "the SAME padding mode, not a verdict",
    ("execution/cluster.py", "error"): "a Dask future's status, not a point's",
    ("backends/cuda/cudnn_conv.py", "cudnn"): "the cuDNN frontend's module name",
    ("planning/plan.py", "budget"): "the --budget option's name, not a stop reason",
    ("views/tables.py", "fail"): "a cell's style (bold red), not a status",
    ("specs/runners.py", "tf32"): "the kernel runner's option `tf32 = true`, which sets a spec's default dtypes",
    ("views/profile.py", "tensor"): "the profile's busier tensor pipe, not an epilogue's scaling",
}


def literal_branches(source: str) -> list[tuple[int, str]]:
    """(line, word) of every comparison (==, !=, in, not in) of something with one of WORDS spelt as a string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for i, op in enumerate(node.ops):
            left, right = sides[i], sides[i + 1]
            if isinstance(op, (ast.Eq, ast.NotEq)):
                candidates = [left, right]
            elif isinstance(op, (ast.In, ast.NotIn)):  # x in ("a", "b"); "a" in text is a substring test
                candidates = [right] if isinstance(right, (ast.Tuple, ast.List, ast.Set)) else []
            else:
                continue
            for c in candidates:
                for const in ([c] if isinstance(c, ast.Constant) else getattr(c, "elts", [])):
                    if isinstance(const, ast.Constant) and const.value in WORDS:
                        found.append((node.lineno, const.value))
    return found


def test_the_check_finds_what_it_looks_for():
    src = 'if p.op == "gemm": pass\nif s in ("fail", "error"): pass\nif "ok" != s: pass\nif "error" in text: pass\n'
    assert literal_branches(src) == [(1, "gemm"), (2, "fail"), (2, "error"), (3, "ok")]


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_branch_on_a_domain_word_spelt_as_a_string(path):
    module = str(path.relative_to(PACKAGE))
    bad = [(line, word) for line, word in literal_branches(path.read_text())
           if WORDS[word] != module and (module, word) not in OTHER_MEANINGS]
    assert not bad, f"{module} branches on {', '.join(f'{w!r} (line {n})' for n, w in bad)}: use the type"


# Who may import an op's own module (its shape, its layout enum) outside gpubench/ops/: the bindings of the
# libraries each op offers as its baseline, and the API's named problem builders. Nothing else knows an op but
# through the registry (gpubench/ops/__init__.py), so adding an op edits none of these.
OP_MODULE_USERS = {
    "backends/cuda/libraries.py": "cuBLAS and cuDNN calls: the baselines GEMM and conv offer",
    "backends/cuda/kernels.py": "the im2col runner: conv's unfold before its GEMM",
    "backends/cuda/device.py": "the tensor-core ceilings, measured as cuBLAS GEMMs",
    "backends/cuda/fused_conv.py": "cuDNN's fused convolution graphs: conv's epilogue and layouts",
    "api.py": "gpubench.api.gemm() and conv(), the named problem builders users call",
}


def op_module_imports(source: str) -> list[str]:
    """The op modules (gpubench.ops.<name>) a module imports, by name."""
    names = set(ops.names())
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("gpubench.ops.") and node.module.split(".")[2] in names:
                found.append(node.module)
            elif node.module == "gpubench.ops":
                found += [f"gpubench.ops.{a.name}" for a in node.names if a.name in names]
    return found


def test_the_op_import_check_finds_what_it_looks_for():
    src = "from gpubench.ops.gemm import GemmShape\nfrom gpubench.ops import conv, base\nfrom gpubench import ops\n"
    assert op_module_imports(src) == ["gpubench.ops.gemm", "gpubench.ops.conv"]


@pytest.mark.parametrize("path", [m for m in MODULES if m.parent.name != "ops"],
                         ids=lambda p: str(p.relative_to(PACKAGE)))
def test_no_module_outside_the_ops_knows_an_op_but_through_the_registry(path):
    module = str(path.relative_to(PACKAGE))
    found = op_module_imports(path.read_text())
    assert not found or module in OP_MODULE_USERS, (
        f"{module} imports {', '.join(found)}: ask the op through gpubench.ops (get, of) instead")
