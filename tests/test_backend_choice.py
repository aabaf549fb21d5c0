"""The backend a command runs on when it names none: GPUBENCH_BACKEND, the project's `backend`, else cuda where the
GPU stack is installed and cpu (said once) where it is not. A machine without a GPU needed --backend cpu on every
call, and `gpubench env` exited 2 without it."""

import json

import pytest
from click.testing import CliRunner

from gpubench.cli import cli
from gpubench.specs import backend_choice
from gpubench.specs.backend_choice import Source


@pytest.fixture
def no_gpu_stack(monkeypatch):
    monkeypatch.setattr(backend_choice, "gpu_stack_missing", lambda: "PyCUDA")


@pytest.fixture
def gpu_stack(monkeypatch):
    monkeypatch.setattr(backend_choice, "gpu_stack_missing", lambda: None)


def invoke(*args, env=None):
    return CliRunner().invoke(cli, list(args), env=env)


def test_the_order_asked_then_environment_then_project_then_guess(no_gpu_stack, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    assert backend_choice.choose(None) == backend_choice.Choice("cpu", Source.GUESSED, "PyCUDA")
    (tmp_path / "gpubench.toml").write_text('backend = "cuda"\n')
    assert backend_choice.choose(None) == backend_choice.Choice("cuda", Source.PROJECT)
    monkeypatch.setenv("GPUBENCH_BACKEND", "cpu")
    assert backend_choice.choose(None) == backend_choice.Choice("cpu", Source.ENVIRONMENT)
    assert backend_choice.choose("cuda") == backend_choice.Choice("cuda", Source.ASKED)


def test_a_machine_with_the_gpu_stack_guesses_cuda_silently(gpu_stack):
    choice = backend_choice.choose(None)
    assert choice.name == "cuda" and choice.note("--backend") is None


def test_only_a_guessed_cpu_is_announced_and_the_note_names_the_knob_where_it_is_shown(no_gpu_stack, monkeypatch):
    note = backend_choice.choose(None).note("--gpubench-backend")
    assert "PyCUDA is not installed" in note and "--gpubench-backend cuda" in note and "GPUBENCH_BACKEND=cpu" in note
    monkeypatch.setenv("GPUBENCH_BACKEND", "cpu")
    assert backend_choice.choose(None).note("--backend") is None


def test_the_package_check_imports_nothing():
    import sys

    before = set(sys.modules)
    backend_choice.gpu_stack_missing()
    assert not {m for m in set(sys.modules) - before if m.split(".")[0] in ("pycuda", "cupy")}


def test_env_runs_on_the_cpu_without_the_gpu_stack_and_says_so_once(no_gpu_stack):
    r = CliRunner().invoke(cli, ["env"])
    assert r.exit_code == 0, r.output
    assert r.stderr.count("\n") == 1 and "runs on the CPU backend" in r.stderr and "--backend cuda" in r.stderr
    assert json.loads(r.stdout)["device"]["kind"] == "cpu"


def test_gpubench_backend_sets_every_command_and_a_bad_value_is_one_line(no_gpu_stack, tmp_path):
    r = invoke("gemm", "--sizes", "16", "--reps", "5", "-o", str(tmp_path / "g.json"), env={"GPUBENCH_BACKEND": "cpu"})
    assert r.exit_code == 0 and "note:" not in r.stderr, r.output
    r = invoke("env", env={"GPUBENCH_BACKEND": "gpu"})
    assert r.exit_code == 2 and r.output == ("gpubench: error: GPUBENCH_BACKEND='gpu' is not a backend; allowed: "
                                             "cuda, cpu (or leave it unset)\n"), r.output


def test_the_project_file_sets_the_default(gpu_stack, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text('[tool.gpubench]\nbackend = "cpu"\n')
    r = invoke("gemm", "--sizes", "16", "--reps", "5", "-o", "q.json")
    assert r.exit_code == 0, r.output
    assert json.loads((tmp_path / "q.json").read_text())["backend"] == "cpu"
    (tmp_path / "pyproject.toml").write_text('[tool.gpubench]\nbackend = "gpu"\n')
    r = invoke("env")
    assert r.exit_code == 2 and r.output.count("\n") == 1 and "backend must be one of cuda, cpu" in r.output


def test_a_bad_option_stays_one_line_when_the_cpu_is_guessed(no_gpu_stack):
    r = invoke("run", "nosuch.toml")
    assert r.exit_code == 2 and r.output.count("\n") == 1 and r.output.startswith("gpubench: error:"), r.output


def test_the_top_level_help_shows_how_to_run_without_a_gpu():
    text = invoke("--help").output
    assert "GPUBENCH_BACKEND=cpu" in text and "--backend cpu" in text and 'backend = "cpu"' in text
