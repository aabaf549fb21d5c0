"""A project's Python functions: imported once, checked against the spec's call before any point runs (one line
naming the file and the first error), and what they return kept as JSON values."""

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from gpubench import results
from gpubench.core import user_code
from gpubench.cli import cli
from gpubench.core.errors import GpubenchError
from gpubench.specs.runners import PythonRunner
from gpubench.specs.variant import Code, Config, Program, Variant


def variant(path: Path, kernel="f", args=("A", "B", "C", "M", "N", "K")) -> Variant:
    return Variant(name="mine", op="gemm", backend="cpu",
                   code=Code(PythonRunner(), Program(source=path, kernel=kernel, args=args)))


@pytest.fixture
def source(tmp_path):
    def write(text: str, name="k.py") -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


@pytest.mark.parametrize("text,match", [
    ("def f(A, B, C, M, N, K)\n    pass\n", r"importing .*k\.py failed: SyntaxError: expected ':' \(k\.py, line 1\)"),
    ("x = 1\nimport no_such_module_here\n", r"k\.py failed: ModuleNotFoundError: No module named "
                                              r"'no_such_module_here' \(line 2\)"),
    ("raise SystemExit(3)\n", r"k\.py failed: SystemExit: 3 \(line 1\)"),
    ("g = 1\n", r"k\.py: has no function 'f'"),
    ("f = 42\n", r"k\.py: f is not callable \(it is a int\)"),
    ("async def f(A, B, C, M, N, K):\n    pass\n", r"k\.py: f is an async function, which gpubench would call "
                                                   r"without running it"),
    ("def f(A, B, C):\n    pass\n", r"f\(A, B, C\) cannot be called as f\(A, B, C, M, N, K\), its arguments \(args\): "
                                      r"too many positional arguments"),
])
def test_a_bad_function_is_one_line_naming_the_file(source, text, match):
    with pytest.raises(GpubenchError, match=match) as e:
        user_code.check(variant(source(text)), [Config("-")])
    assert "\n" not in str(e.value)


def test_each_configuration_must_fit_the_signature(source):
    v = variant(source("def f(A, B, C, M, N, K, BM=64):\n    pass\n"))
    assert callable(user_code.check(v, [Config("64", (("BM", 64),))]))
    with pytest.raises(GpubenchError, match=r"configuration BK=8: got an unexpected keyword argument 'BK'"):
        user_code.check(v, [Config("64", (("BM", 64),)), Config("BK=8", (("BK", 8),))])


def test_a_triton_kernel_itself_is_refused_for_its_launcher(source):
    path = source("class JITFunction:\n    def __call__(self, *a):\n        pass\n"
                  "JITFunction.__module__ = 'triton.runtime.jit'\nf = JITFunction()\n")
    with pytest.raises(GpubenchError, match=r"f is a Triton kernel \(JITFunction\); name the Python function that "
                                            r"launches it"):
        user_code.check(variant(path), [Config("-")])


def test_a_module_is_imported_once_until_it_changes(source):
    path = source("def f(*a):\n    pass\n")
    first = user_code.module(path)
    assert user_code.module(path) is first
    source("def f(*a):\n    return 1\n")
    assert user_code.module(path) is not first and user_code.module(path).f() == 1


def test_what_a_function_returns_is_kept_as_json():
    class Config:
        def __str__(self):
            return "BLOCK_M: 128, num_warps: 8"

    record = user_code.report_of({"config": Config(), "n": 3, "x": float("nan"), "tiles": (1, 2), 4: True})
    assert record == {"config": "BLOCK_M: 128, num_warps: 8", "n": 3, "x": "nan", "tiles": [1, 2], "4": True}
    assert json.loads(json.dumps(record)) == record
    assert user_code.report_of(None) == {} and user_code.report_of(7) == {}


def test_a_bad_function_stops_the_run_before_any_point(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text("import numpy as np\ndef good(A, B, C, M, N, K):\n    np.matmul(A, B, out=C)\n"
                                   "def bad(A, B):\n    pass\n")
    table = '[[variant]]\nname = "{0}"\nop = "gemm"\nsource = "k.py"\nkernel = "{0}"\nargs = ["A", "B", "C", "M", ' \
            '"N", "K"]\n'
    (tmp_path / "gpubench.toml").write_text(table.format("good") + table.format("bad"))
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--variants", "good,bad", "--sizes", "16", "-o", "r.json"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert r.output.startswith(f"gpubench: error: {tmp_path / 'k.py'}: bad(A, B) cannot be called")
    assert not (tmp_path / "r.json").exists()


def test_a_function_reports_what_it_chose_and_its_first_call(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text("import numpy as np\ndef good(A, B, C, M, N, K, T):\n    np.matmul(A, B, out=C)\n"
                                   "    return {'tile': T, 'why': 'fastest'}\n")
    (tmp_path / "gpubench.toml").write_text('[[variant]]\nname = "good"\nop = "gemm"\nsource = "k.py"\n'
                                            'kernel = "good"\nargs = ["A", "B", "C", "M", "N", "K"]\n'
                                            'configs = [{ T = 4 }]\n')
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--variants", "good", "--sizes", "16", "-o", "r.json"])
    assert r.exit_code == 0, r.output
    (p,) = results.load(tmp_path / "r.json").points
    assert p.details.reported == {"tile": 4, "why": "fastest"} and p.details.first_call_ms > 0


def test_check_imports_the_projects_python_functions_without_a_gpu(tmp_path, monkeypatch):
    (tmp_path / "k.py").write_text("import no_such_triton_here\n\ndef mm(A, B, C, M, N, K):\n    pass\n")
    (tmp_path / "gpubench.toml").write_text('[[variant]]\nname = "mine"\nop = "gemm"\nbackend = "cuda"\n'
                                            'source = "k.py"\nkernel = "mm"\nargs = ["A", "B", "C", "M", "N", "K"]\n')
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(cli, ["check", "--arch", "sm_90"])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"importing {tmp_path / 'k.py'} failed: ModuleNotFoundError: No module named 'no_such_triton_here' " \
           "(line 1)" in r.output
    (tmp_path / "k.py").write_text("def mm(A, B, C, M, N, K):\n    pass\n")  # fixed: imported anew
    r = CliRunner().invoke(cli, ["check", "--arch", "sm_90"])
    assert r.exit_code == 0, r.output


# A compiler's error as Triton raises it (its class's module is what marks it), a fault while running, and a hang.
COMPILERS = '''
import time

import numpy as np


class CompilationError(Exception):
    def __init__(self, message):
        super().__init__("at 2:17:\\ndef _kernel(c):\\n    tl.store(c, undefined)\\n                 ^\\n" + message)
        self.error_message = message


CompilationError.__module__ = "triton.compiler.errors"


def good(A, B, C, M, N, K):
    np.matmul(A, B, out=C)


def broken(A, B, C, M, N, K):
    raise CompilationError("NameError('undefined is not defined')")


def not_at_33(A, B, C, M, N, K):  # compiles at every size but one (a specialisation of its own)
    if M == 33:
        raise CompilationError("ValueError('shape 33 is not a power of two')")
    np.matmul(A, B, out=C)


def faults(A, B, C, M, N, K):
    raise RuntimeError("cudaErrorIllegalAddress: an illegal memory access was encountered")


def hangs(A, B, C, M, N, K):
    time.sleep(600)
'''


def project_of(tmp_path, monkeypatch, names):
    (tmp_path / "k.py").write_text(COMPILERS)
    table = '[[variant]]\nname = "{0}"\nop = "gemm"\nsource = "k.py"\nkernel = "{0}"\nargs = ["A", "B", "C", "M", ' \
            '"N", "K"]\n'
    (tmp_path / "gpubench.toml").write_text("".join(table.format(n) for n in names))
    monkeypatch.chdir(tmp_path)


def test_a_compiler_error_is_told_from_a_fault_by_its_class():
    class CompilationError(Exception):
        error_message = "NameError('x')"

        def __str__(self):
            return "at 3:11:\ndef k(c):\n    tl.store(c, x)\n           ^\nNameError('x')"

    class UnsupportedLanguageConstruct(CompilationError):
        pass

    class CompileException(Exception):
        pass

    CompilationError.__module__ = UnsupportedLanguageConstruct.__module__ = "triton.compiler.errors"
    CompileException.__module__ = "cupy.cuda.compiler"
    assert user_code.compile_error(UnsupportedLanguageConstruct()) == "UnsupportedLanguageConstruct at 3:11: " \
                                                                      "NameError('x')"
    nvrtc = CompileException('/tmp/tmpa1/7f.cu(5): error: identifier "y" is undefined\n\n1 error detected in "7f.cu".')
    assert user_code.compile_error(nvrtc) == 'CompileException: line 5: error: identifier "y" is undefined'
    assert user_code.compile_error(RuntimeError("an illegal memory access was encountered")) is None
    CompilationError.__module__ = "mine"  # a class of the same name elsewhere is not a compiler's
    assert user_code.compile_error(UnsupportedLanguageConstruct()) is None


@pytest.mark.parametrize("spread", [[], ["--gpus", "2"]], ids=["one worker", "dask"])
def test_code_that_does_not_compile_stops_the_run_before_any_point(tmp_path, monkeypatch, spread):
    if spread:
        pytest.importorskip("distributed")
    project_of(tmp_path, monkeypatch, ["good", "broken"])
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--variants", "numpy,good,broken", "--sizes", "16,24",
                                 "-o", "r.json", *spread])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert r.output == f"gpubench: error: {tmp_path / 'k.py'}: broken does not compile: CompilationError at 2:17: " \
                       "NameError('undefined is not defined')\n"
    assert not (tmp_path / "r.json").exists()  # no point ran, not even numpy's


def test_a_fault_a_hang_and_a_size_that_does_not_compile_cost_their_points_only(tmp_path, monkeypatch):
    project_of(tmp_path, monkeypatch, ["not_at_33", "faults", "hangs", "good"])
    r = CliRunner().invoke(cli, ["gemm", "--backend", "cpu", "--variants", "not_at_33,faults,hangs,good",
                                 "--sizes", "16,33", "--timeout", "3", "--reps", "5", "-o", "r.json"])
    assert r.exit_code == 1, r.output
    run = results.load(tmp_path / "r.json")
    got = {(p.variant, p.problem.m): (p.status, p.reason or "") for p in run.points}
    assert {k: s for k, (s, _) in got.items()} == {
        ("not_at_33", 16): "ok", ("not_at_33", 33): "error", ("faults", 16): "error", ("faults", 33): "error",
        ("hangs", 16): "timeout", ("hangs", 33): "timeout", ("good", 16): "ok", ("good", 33): "ok"}
    assert got["not_at_33", 33][1] == f"{tmp_path / 'k.py'}: not_at_33 does not compile: CompilationError at 2:17: " \
                                      "ValueError('shape 33 is not a power of two')"
    assert got["faults", 16][1] == "RuntimeError: cudaErrorIllegalAddress: an illegal memory access was encountered"
    # The hang at 16 was its first call, made before the sweep: that is its point's outcome, recorded first (once,
    # not again in the sweep); the one at 33 is met by its point.
    assert (run.points[0].variant, run.points[0].problem.m, run.points[0].status) == ("hangs", 16, "timeout")
    assert [(i["kind"], i["where"]) for i in run.incidents] == [("timeout", "gemm 16 hangs -"),
                                                                ("timeout", "gemm 33 hangs -")]
    assert run.points[1].details.first_call_ms > 0  # not_at_33 at 16: the first call made before the sweep
