"""Finding a user's project the way pytest finds its configuration, and reading its variants."""

import pytest

from gpubench.specs import project
from gpubench.core.errors import GpubenchError
from gpubench.specs.parse import SpecError

SPEC = """
tuned = "tuned"
[[variant]]
name = "mine"
op = "gemm"
source = "kernels/k.py"
kernel = "k"
args = ["A", "B", "C", "M", "N", "K"]
"""


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "kernels").mkdir()
    (tmp_path / "kernels" / "k.py").write_text("def k(A, B, C, M, N, K):\n    C[...] = A @ B\n")
    (tmp_path / "deep" / "er").mkdir(parents=True)
    return tmp_path


def test_found_from_a_subdirectory_with_paths_relative_to_the_file(tree):
    (tree / "gpubench.toml").write_text(SPEC)
    p = project.load(start=tree / "deep" / "er")
    assert p.path == tree / "gpubench.toml"
    assert [v.name for v in p.variants] == ["mine"] and p.variants[0].code.program.source == tree / "kernels" / "k.py"
    assert p.tuned_dir == tree / "tuned"


def test_pyproject_counts_only_with_a_tool_gpubench_table(tree):
    (tree / "pyproject.toml").write_text('[project]\nname = "x"\n')
    assert project.load(start=tree).path is None
    (tree / "pyproject.toml").write_text(SPEC.replace("tuned = ", "[tool.gpubench]\ntuned = ")
                                         .replace("[[variant]]", "[[tool.gpubench.variant]]"))
    p = project.load(start=tree / "deep")
    assert p.path == tree / "pyproject.toml" and [v.name for v in p.variants] == ["mine"]


def test_gpubench_toml_wins_over_pyproject_in_the_same_directory(tree):
    (tree / "gpubench.toml").write_text(SPEC)
    (tree / "pyproject.toml").write_text("[tool.gpubench]\n")
    assert project.load(start=tree).path.name == "gpubench.toml"


def test_named_explicitly_by_option_or_environment(tree, monkeypatch, tmp_path_factory):
    (tree / "elsewhere.toml").write_text(SPEC)
    here = tmp_path_factory.mktemp("here")
    assert project.load(tree / "elsewhere.toml", start=here).path == tree / "elsewhere.toml"
    monkeypatch.setenv("GPUBENCH_CONFIG", str(tree / "elsewhere.toml"))
    assert project.load(start=here).path == tree / "elsewhere.toml"
    monkeypatch.setenv("GPUBENCH_CONFIG", str(tree / "nope.toml"))
    with pytest.raises(GpubenchError, match="GPUBENCH_CONFIG: .*nope.toml is not a file"):
        project.load(start=here)


def test_no_project_is_fine(tmp_path):
    assert project.load(start=tmp_path) == project.Project()


@pytest.mark.parametrize("text,match", [
    ("colour = 1\n", "unknown key\\(s\\) colour; allowed are backend, family, op, sets, tuned, variant"),
    ("tuned = 3\n", "tuned must be a directory path"),
    ("[[variant]\n", "not valid TOML"),
    ("variant = 3\n", "declared as \\[\\[variant\\]\\] tables"),
])
def test_bad_project_files(tree, text, match):
    (tree / "gpubench.toml").write_text(text)
    with pytest.raises(SpecError, match=match):
        project.load(start=tree)


@pytest.mark.parametrize("text", ["tool = 5\n", 'tool = "gpubench"\n', 'tool = ["gpubench"]\n'])
def test_somebody_elses_odd_pyproject_is_ignored(tmp_path, text):
    (tmp_path / "pyproject.toml").write_text(text)
    assert project.load(start=tmp_path).path is None


def test_the_python_example_projects_declare_gpu_functions():
    from pathlib import Path

    from gpubench.specs.runners import Arrays, PythonGpuRunner

    examples = Path(__file__).resolve().parent.parent / "examples"
    triton = {v.name: v for v in project.load(examples / "triton" / "gpubench.toml").variants}
    assert set(triton) == {"triton", "torch-matmul", "triton-conv"}
    assert all(v.code.runner.arrays == Arrays.TORCH and v.backend == "cuda" for v in triton.values())
    assert all(v.scope.dtypes == ("fp32", "tf32", "bf16", "fp16") and v.code.program.dtype_define == "precision" for v in triton.values())
    (cupy,) = project.load(examples / "cupy" / "gpubench.toml").variants
    assert cupy.code.runner == PythonGpuRunner() and [c.label for c in cupy.space.configs] == ["128x128x8/8x8", "64x64x16/4x4"]


@pytest.mark.parametrize("text", ["[tool]\ngpubench = 5\n", "tool = {gpubench = [1]}\n"])
def test_a_tool_gpubench_that_is_not_a_table_says_so(tmp_path, text):
    """Ours by its name, so judged (unlike somebody else's odd pyproject above), and told what it is, not that
    it is missing."""
    (tmp_path / "pyproject.toml").write_text(text)
    with pytest.raises(SpecError, match=r"tool\.gpubench must be a table \(\[tool\.gpubench\]\), got "):
        project.load(start=tmp_path)


@pytest.mark.parametrize("blank", ["", "  "])
def test_an_empty_config_says_so(blank, monkeypatch):
    with pytest.raises(GpubenchError, match="--config is empty \\(an unset variable\\?\\)"):
        project.load(blank)
    monkeypatch.setenv("GPUBENCH_CONFIG", blank)
    if blank:  # an empty GPUBENCH_CONFIG is as if unset (the documented `or None`); one of spaces is not
        with pytest.raises(GpubenchError, match="GPUBENCH_CONFIG is empty"):
            project.load()


def test_a_project_file_with_a_byte_order_mark_loads(tree):
    (tree / "gpubench.toml").write_bytes(b"\xef\xbb\xbf" + SPEC.encode())
    assert [v.name for v in project.load(start=tree).variants] == ["mine"]


def test_a_project_declares_families_as_the_readme_shows(tree):
    """[[family]] in a project file was refused ("unknown key(s) family; allowed are sets, tuned, variant"), though
    the README's project example and this module's docstring declare one."""
    (tree / "gpubench.toml").write_text('[[family]]\nname = "fam"\nop = "gemm"\nsource = "kernels/k.py"\n'
                                        'kernel = "k"\nargs = ["A", "B", "C", "M", "N", "K"]\n'
                                        '[[variant]]\nname = "mine"\nfamily = "fam"\n')
    assert [(v.name, v.code.program.kernel) for v in project.load(start=tree).variants] == [("mine", "k")]


def test_a_summary_reaches_the_terminal_as_one_printable_line(tree):
    """`gpubench list` printed a project's summary as it was: an escape sequence went to the terminal."""
    (tree / "gpubench.toml").write_text(SPEC + 'summary = """red \\u001b[31m\nand two lines"""\n')
    assert project.load(start=tree).variants[0].entry.summary == "red \\x1b[31m and two lines"
