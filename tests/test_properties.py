"""Property-based tests (hypothesis): whatever comes in, gpubench answers with its documented exit code, never a
traceback, one line for an error, and it never damages an existing file.

Three kinds of input are generated: results files corrupted byte by byte or value by value (read by `show`,
`compare` and `plot`), suite files with odd keys and values, and odd command lines for every command. Sweeps do
not really run here: the worker is replaced by a stand-in that reports nothing, so thousands of examples take
seconds while everything in front of it (parsing, checks, output paths, the results file) is the real code.
The examples are derandomized, so CI sees the same few thousand every time.
"""

import hashlib
import json
import math
from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.cli import cli
from gpubench.exit_codes import Exit

SETTINGS = dict(deadline=None, derandomize=True, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                          HealthCheck.too_slow])
ALLOWED = {  # the exit codes each command may give for any input
    "show": {Exit.OK, Exit.USAGE}, "plot": {Exit.OK, Exit.USAGE}, "list": {Exit.OK, Exit.USAGE},
    "compare": {Exit.OK, Exit.FAILED, Exit.USAGE, Exit.INCONCLUSIVE},
    "gemm": {Exit.OK, Exit.USAGE}, "conv": {Exit.OK, Exit.USAGE}, "run": {Exit.OK, Exit.USAGE},
    "check": {Exit.OK, Exit.USAGE}, "tune": {Exit.OK, Exit.USAGE}, "env": {Exit.OK, Exit.USAGE},
}


class StandInWorker:
    """Opens like a CPU worker, refuses like a machine without a GPU, and runs no points."""

    def __init__(self, options):
        self.options, self.incidents = options, []

    def start(self):
        if self.options.backend == "cuda":
            from gpubench.errors import GpubenchError

            raise GpubenchError("PyCUDA is not installed: pip install 'gpubench[gpu]', or use --backend cpu")
        return {"device": "CPU: stand-in", "arch": None, "max_threads": None, "libraries": {}}

    def environment(self):
        return {"device": {"name": "CPU: stand-in", "kind": "cpu"}, "software": {}}

    def check(self, variants):
        pass

    def run_all(self, work, on_point):
        pass

    def run(self, task, on_point):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


@pytest.fixture(autouse=True)
def no_real_work(monkeypatch):
    from gpubench import executors, nvcc

    monkeypatch.setattr(executors, "Worker", StandInWorker)  # every executor comes from the one factory
    monkeypatch.setattr(nvcc, "compile_all", lambda jobs, threads=None: [])  # compiling is tested in test_nvcc


def invoke(args: list[str]):
    return CliRunner().invoke(cli, args, catch_exceptions=True)


def assert_answered_well(result, command: str) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Traceback" not in result.output
    assert result.exit_code in ALLOWED[command], (result.exit_code, result.output)
    if result.exit_code == Exit.USAGE:
        assert result.output.startswith("gpubench: error: ") and result.output.count("\n") == 1, result.output


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- corrupted results files ----------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70)
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6)


def paths_in(value, prefix=()):
    """Every path (tuple of keys and indices) into a JSON value."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            yield from paths_in(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from paths_in(v, prefix + (i,))


def replaced(value, path, new, delete=False):
    if not path:
        return new
    head, rest = path[0], path[1:]
    copy = dict(value) if isinstance(value, dict) else list(value)
    if delete and not rest:
        del copy[head]
        return copy
    copy[head] = replaced(value[head], rest, new, delete)
    return copy


@pytest.fixture(scope="module")
def valid_run_text():
    from conftest import synthetic_run

    run = synthetic_run(samples=6)
    run.points = run.points[:2] + run.points[-1:]
    return run.to_json()


@st.composite
def corrupted(draw, text):
    kind = draw(st.sampled_from(["value", "value", "delete", "truncate", "bytes"]))
    if kind in ("value", "delete"):
        data = json.loads(text)
        places = [p for p in paths_in(data) if p]
        path = draw(st.sampled_from(places))
        data = replaced(data, path, None if kind == "delete" else draw(JSON_VALUES), delete=kind == "delete")
        return json.dumps(data, allow_nan=True).encode()
    raw = text.encode()
    if kind == "truncate":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    at = draw(st.integers(0, len(raw) - 1))
    return raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at + 1:]


@settings(max_examples=700, **SETTINGS)
@given(data=st.data())
def test_corrupted_results_files(tmp_path, valid_run_text, data):
    good = tmp_path / "good.json"
    good.write_text(valid_run_text)
    bad = tmp_path / "bad.json"
    bad.write_bytes(data.draw(corrupted(valid_run_text)))
    before = {p: digest(p) for p in (good, bad)}
    assert_answered_well(invoke(["show", str(bad)]), "show")
    assert_answered_well(invoke(["show", str(bad), "--format", "csv"]), "show")
    assert_answered_well(invoke(["compare", str(good), str(bad)]), "compare")
    assert_answered_well(invoke(["compare", str(bad), str(good), "--format", "json"]), "compare")
    assert {p: digest(p) for p in (good, bad)} == before  # reading never writes


@settings(max_examples=150, **SETTINGS)
@given(data=st.data())
def test_corrupted_results_files_plot(tmp_path, valid_run_text, data):
    pytest.importorskip("matplotlib")
    bad = tmp_path / "bad.json"
    bad.write_bytes(data.draw(corrupted(valid_run_text)))
    out = tmp_path / "p.png"
    out.unlink(missing_ok=True)
    assert_answered_well(invoke(["plot", str(bad), "-o", str(out)]), "plot")


# --- odd suite files ------------------------------------------------------------------------------------------

SUITE_KEYS = ["name", "description", "tf32", "defaults", "sweep", "colour"]
SWEEP_KEYS = ["name", "op", "variants", "sizes", "mnk", "strides", "block_sizes", "batch", "in_channels",
              "out_channels", "kernel", "padding", "warmup", "reps", "budget", "max_noise", "max_time", "flush",
              "colour"]
TOML_SCALARS = (st.integers(-3, 70) | st.sampled_from([0, 1, 5, 16, 33, 2**40]) | st.booleans()
                | st.floats(-2, 100, allow_nan=False) | st.sampled_from(["gemm", "conv", "same", "valid", "tiled",
                                                                        "numpy", "sliding", "", "x"]))
TOML_VALUES = TOML_SCALARS | st.lists(TOML_SCALARS, max_size=3) | st.lists(st.lists(st.integers(-1, 40), max_size=3),
                                                                             max_size=2)


def toml_value(v) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else "nan"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return str(v)


@st.composite
def suite_text(draw):
    lines = [f"{k} = {toml_value(draw(TOML_VALUES))}" for k in draw(st.lists(st.sampled_from(SUITE_KEYS[:3]),
                                                                            unique=True, max_size=2))]
    if draw(st.booleans()):
        lines.append("[defaults]")
        lines += [f"{k} = {toml_value(draw(TOML_VALUES))}" for k in draw(
            st.lists(st.sampled_from(["warmup", "reps", "budget", "max_noise", "max_time", "flush", "colour"]),
                     unique=True, max_size=3))]
    for _ in range(draw(st.integers(0, 2))):
        lines.append("[[sweep]]")
        keys = draw(st.lists(st.sampled_from(SWEEP_KEYS), unique=True, max_size=6))
        for k in keys:
            value = draw(st.sampled_from(["gemm", "conv"])) if k == "op" and draw(st.booleans()) else draw(TOML_VALUES)
            lines.append(f"{k} = {toml_value(value)}")
    if draw(st.integers(0, 9)) == 0:
        lines.append(draw(st.sampled_from(["[[sweep]", "= 3", "name = 'unterminated", "\x00"])))
    return "\n".join(lines) + "\n"


@settings(max_examples=900, **SETTINGS)
@given(text=suite_text(), backend=st.sampled_from(["cpu", "cuda"]))
def test_odd_suite_files(tmp_path, text, backend):
    suite = tmp_path / "s.toml"
    suite.write_text(text)
    out = tmp_path / "out.json"
    out.write_text("an earlier run")
    before = digest(out)
    r = invoke(["run", str(suite), "--backend", backend, "-o", str(out)])
    assert_answered_well(r, "run")
    assert digest(out) == before  # an existing output is never touched without --force
    assert digest(suite) == hashlib.sha256(text.encode()).hexdigest()


# --- odd command lines ----------------------------------------------------------------------------------------

ODD = st.sampled_from(["", " ", "0", "-1", "1", "5", "16", "33", "512", "1e9", "nan", "inf", "-inf", "1.5", "abc",
                       "1,,2", ",", "8,16", "99999999999999999999", "é", "1,2,3", "16,x", "0.0", "300", "sm_90",
                       "a,b,c,m,n,k", "A,B,C,M,N,K", "x.cu:k", "=x.cu:k", "same", "valid", "cpu", "cuda", "tiled",
                       "numpy", "lab", "out.json", "out.txt", "."])
OPTIONS = {
    "gemm": ["--sizes", "--mnk", "--block-sizes", "--variants", "--kernel", "--args", "--warmup", "--reps",
             "--budget", "--max-noise", "--max-time", "--seed", "--timeout", "--backend", "-o", "--config"],
    "conv": ["--sizes", "--stride", "--batch", "--in-channels", "--out-channels", "--kernel-size", "--padding",
             "--block-sizes", "--variants", "--reps", "--backend", "-o", "--kernel", "--args"],
    "run": ["--backend", "--max-noise", "--max-time", "--timeout", "-o", "--seed", "--config"],
    "show": ["--format", "--threshold"],
    "compare": ["--threshold", "--alpha", "--format"],
    "plot": ["-o"],
    "list": ["--config"],
    "check": ["--arch", "--block-sizes", "--config"],
    "tune": ["--sizes", "--mnk", "--candidates", "--refine", "--variant", "--timeout"],
    "env": ["--backend"],
}
FLAGS = {"gemm": ["--tf32", "--no-flush", "--force"], "conv": ["--tf32", "--force"], "run": ["--tf32", "--force"],
         "compare": ["--strict-env", "--fail-on-inconclusive"], "check": ["--builtin"], "plot": ["--force"]}


@st.composite
def command_line(draw):
    command = draw(st.sampled_from(sorted(OPTIONS)))
    args = ["tune", "gemm"] if command == "tune" else [command]
    if command in ("show", "plot"):
        args.append(draw(st.sampled_from(["missing.json", "run.json", "."])))
    if command == "compare":
        args += [draw(st.sampled_from(["run.json", "missing.json"])), draw(st.sampled_from(["run.json", "."]))]
    if command == "run":
        args.append(draw(st.sampled_from(["quick", "nosuch", "run.json", "."])))
    for option in draw(st.lists(st.sampled_from(OPTIONS[command]), max_size=4)):
        args += [option, draw(ODD)]
    args += draw(st.lists(st.sampled_from(FLAGS.get(command, ["--help"])), max_size=1, unique=True))
    if command in ("gemm", "conv") and "--backend" not in args:
        args += ["--backend", "cpu"]
    return command, args


@settings(max_examples=1500, **SETTINGS)
@given(line=command_line())
def test_odd_command_lines(tmp_path, valid_run_text, line, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.json").write_text(valid_run_text)
    for name in ("out.json", "out.txt"):
        (tmp_path / name).unlink(missing_ok=True)
    before = digest(tmp_path / "run.json")
    command, args = line
    assert_answered_well(invoke(args), command)
    assert digest(tmp_path / "run.json") == before
