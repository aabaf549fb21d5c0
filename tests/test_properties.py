"""Property-based tests (hypothesis) of every command's options: whatever a careless or hostile user types, gpubench
answers with its documented exit code, never a traceback, one line on stderr for an error, and it never damages a
file it was not told to replace.

The command lines are generated from the click commands themselves (every option and argument of every command,
so a new option is covered the day it is added): empty strings, whitespace and control characters, any script's
letters and digits, huge and negative numbers, nan and inf, and paths that are files, directories, too long,
missing, corrupt or nested beyond reason. Sweeps do not really run: the worker and the Dask cluster are stand-ins
(tests/hostile.py), so thousands of examples take seconds. The files gpubench reads are generated in
tests/test_properties_files.py. The examples are derandomized, so CI sees the same ones every time.

Two hostile trials, each about 1,200-1,600 real processes of a wheel-installed gpubench on a machine without a GPU,
set what this battery keeps covering. Numeric options meet 0, -1, -0, nan, ±inf, 1e400, 1e-300, 400 digits, `0x10`,
`1_000`, padded, full-width and Arabic-Indic digits and '': they take any script's digits and underscores as Python
does, while comma-separated lists take ASCII digits only, and `--timeout 1e-300` is honoured (every point times out,
exit 1). List options meet gaps, duplicates, trailing commas (`--dtype fp32,` names its empty item and what is
allowed) and other cases. An option that takes one value, given twice, is refused for every command (flags and
repeatable options such as `--mnk` and `--kernel` may repeat); `--pace sustained` is taken by its value, not its
enum member's name. Options that would be ignored are refused instead: `--block-sizes` where no chosen variant takes
it, `--slow-threshold` without `--replicate`, `--settle` where no sweep runs at pace sustained. Every path option and
argument meets '', ' ', '-', '.', a directory, /dev/null, /dev/full, a FIFO, 255- and 5,000-byte names, control
characters, a trailing slash (which pathlib would drop: `-o x.json/` is refused, not saved as x.json) and a
non-UTF-8 byte; a blank path is exit 2 with nothing read or written, never the current directory. `--kernel` names
start with a letter or a digit (`=f.py:mm`, an unset variable, is refused). A run named with a non-UTF-8 byte is
given to every command's arguments and must never meet "the output takes only utf-8".

Left alone on purpose: bare `gpubench` and `gpubench tune` print their help and exit 0; SIGQUIT (Ctrl-\\) ends
gpubench at once, leaving the file marked `running`; `-o` through a symbolic or hard link replaces the link with
the new file (an atomic rename), so two runs through two names each keep their own file; a refused 5,000-byte path
is echoed whole on its one line; `--reps` and `--warmup` of 400 digits are taken (the budget ends the point).
"""

from __future__ import annotations

import json
import os
import signal

import click
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpubench.cli import cli
from hostile import SETTINGS, assert_answered_well, digest, examples, invoke, stand_in

SUPPRESS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]
LONG_NAME = "x" * 300 + ".json"  # past any file system's NAME_MAX
NOT_UTF8 = os.fsdecode(b"run-\xff.json")


def commands() -> dict[str, click.Command]:
    """Every command by the words that call it ("tune gemm" for a subcommand)."""
    found = {}
    for name, command in cli.commands.items():
        if isinstance(command, click.Group):
            found.update({f"{name} {sub}": c for sub, c in command.commands.items()})
        else:
            found[name] = command
    return found


COMMANDS = commands()

# Values chosen to reach past the first check: each option's plausible values, so that a hostile one elsewhere on
# the same line meets the code behind it.
PLAUSIBLE = {
    "sizes": ["16", "8,12", "33"], "mnk": ["8,12,5"], "block_sizes": ["8", "8,16"], "variants": ["numpy", "tiled"],
    "stride": ["1", "1,2"], "batch": ["1", "2"], "in_channels": ["1", "3"], "out_channels": ["1", "2"],
    "kernel_size": ["1", "3"], "padding": ["same", "valid", "1"], "backend": ["cpu"], "reps": ["5"],
    "warmup": ["0", "1"], "budget": ["0.01"], "max_time": ["0.5"], "timeout": ["30"], "seed": ["0", "7"],
    "fmt": ["table", "markdown", "csv", "json"], "threshold": ["0.05"], "alpha": ["0.05"], "arch": ["sm_90"],
    "candidates": ["2"], "refine": ["0"], "variant": ["tuned"], "output": ["out.json", "out.png", "out.html"],
    "html": ["h.html"], "config": ["gpubench.toml"], "kernels": ["k.py:f", "mine=k.py:f", "k.cu:k"],
    "kernel_args": ["A,B,C,M,N,K"], "decide": ["0", "0.05"], "max_noise": ["0.1"], "slow_threshold": ["0.1"],
    "gpus": ["id:0"], "revs": ["HEAD", "HEAD~1"], "rounds": ["6"], "size": ["16"], "op": ["gemm", "conv"], "baseline": ["cublas", "tiled"],
}
ODD = [
    "", " ", "\t", "\n", "x\n", "\x00", "\x1b[31m", "[bold]x[/]", "%s", "{0}", "0", "-0", "-1", "1", "5", "33", "1e9",
    "1e400", "nan", "inf", "-inf", "1.5", "0x10", "1_000", "+5", " 5 ", "2**64", str(2**64), str(10**30), "9" * 5000,
    "²", "٣", "１６", "é", "💥", "a,b", "1,,2", ",", "8,16", "16,x", "sm_90", "sm_90\n", "all", "id:", "id:0,0",
    "tcp://", "tcp://h:1", "h", "same", "valid", "cpu", "cuda", "tiled", "numpy", "lab", "quick", "x.cu:k", "=x.cu:k",
    "a=b=c:d", ":", "k.cu:bad-sym", "k.cu:k\n", "k.py:f", "adir:f", "A,B,C,M,N,K", "a,b,c,m,n,k",
    # paths: a good run, files that are not runs, directories, too long, under a file, unwritable places
    "run.json", "other.json", "missing.json", "empty.json", "corrupt.json", "deep.json", "afile", "afile/x.json",
    "adir", "adir/", "emptydir", LONG_NAME, "x" * 5000, ".json", ".png", ".html", "/proc/x.json", "/", ".", "..",
    "out.json", "out.png", "out.html", "suite.toml", "deep.toml", "gpubench.toml", "badspec.toml",
    # symbolic links: a loop, and one to nowhere
    "loop.json", "dangling.json", "loop.py:f", "loop.cu:k", "loop.toml", "big.json",
    # a good run whose name is not UTF-8 (Python holds the byte as a lone surrogate), blank paths (unset variables)
    NOT_UTF8, "  ",
]
HOSTILE = (st.sampled_from(ODD) | st.text(max_size=10) | st.integers(-2**70, 2**70).map(str)
           | st.floats(allow_nan=True, allow_infinity=True).map(repr))


def _runs() -> tuple[str, str]:
    from conftest import synthetic_run

    run = synthetic_run(samples=6)
    run.points = run.points[:2] + run.points[-1:]
    first = run.to_json()
    run.environment["device"]["name"] = "NVIDIA H100"
    return first, run.to_json()


RUN, OTHER = _runs()


def setup_files(directory) -> None:
    """The files a hostile command line may name, made afresh for each example."""
    (directory / "run.json").write_text(RUN)
    (directory / "other.json").write_text(OTHER)
    (directory / NOT_UTF8).write_text(RUN)
    (directory / "empty.json").write_text("")
    (directory / "corrupt.json").write_text(RUN[:200])
    if not (directory / "deep.json").exists():  # big: made once per test, not per example
        (directory / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
        (directory / "deep.toml").write_text("a = " + "[" * 100_000 + "]" * 100_000 + "\n")
    (directory / "afile").write_text("not a directory")
    (directory / "adir").mkdir(exist_ok=True)
    (directory / "adir" / "run.json").write_text(RUN)
    (directory / "emptydir").mkdir(exist_ok=True)
    (directory / "suite.toml").write_text('[[sweep]]\nop = "gemm"\nsizes = [16]\nreps = 5\n')
    (directory / "k.py").write_text("def f(A, B, C, M, N, K):\n    C[:] = A @ B\n")
    (directory / "k.cu").write_text('extern "C" __global__ void k(float* A) {}\n')
    (directory / "gpubench.toml").write_text('[[variant]]\nname = "mine"\nop = "gemm"\nsource = "k.py"\n'
                                             'kernel = "f"\nargs = ["A", "B", "C", "M", "N", "K"]\n')
    (directory / "badspec.toml").write_text('[[variant]]\nname = "mine\\n"\n')
    for name in ("out.json", "out.png", "out.html", "h.html"):
        (directory / name).unlink(missing_ok=True)
    for name, target in (("loop.json", "loop.json"), ("loop.py", "loop.py"), ("loop.cu", "loop.cu"),
                         ("loop.toml", "loop.toml"), ("dangling.json", "nowhere/run.json")):
        if not (directory / name).is_symlink():
            (directory / name).symlink_to(target)
    (directory / "big.json").write_text(RUN.replace('"m": 1024', '"m": ' + "9" * 5000, 1))  # past Python's 4300 digits


# The ops' own commands run on the CPU (no GPU here: the default backend falls back to it) at sizes that take no
# time: a line that gets past every check may run points (--processes starts real workers).
SMALL = {"gemm": ["--sizes", "16"], "conv": ["--sizes", "16"],
         "attention": ["--seq", "16", "--heads", "2", "--head-dim", "16"],
         "grouped-gemm": ["--groups", "2", "--m", "16", "--n", "16", "--k", "16"]}

ARGUMENTS = {"run": ["suite.toml", "quick", "lab"], "show": ["run.json", NOT_UTF8], "plot": ["run.json"],
             "compare": ["run.json", "other.json", NOT_UTF8], "report": ["run.json", "other.json", "adir", NOT_UTF8],
             "history": ["run.json", "other.json", "adir", NOT_UTF8], "ab": ["numpy", "tiled", "k.py:f", "run.json"]}
OUTPUTS = {"plot": "out.png", "report": "out.html"}  # required options, given unless drawn


@st.composite
def command_line(draw):
    """A command and a line for it: a few of its parameters, most given a plausible value and some a hostile one,
    so that the hostile value meets the code behind the first checks."""
    words = draw(st.sampled_from(sorted(COMMANDS)))
    command = COMMANDS[words]
    args = words.split()
    options = [p for p in command.params if isinstance(p, click.Option) and "--help" not in p.opts]

    def value(plausible):
        return draw(st.sampled_from(plausible)) if plausible and draw(st.integers(0, 3)) else draw(HOSTILE)

    for p in command.params:
        if isinstance(p, click.Argument):
            for _ in range(1 if p.nargs == 1 else draw(st.integers(1, 3))):
                args.append(value(ARGUMENTS.get(words, [])))
    chosen = draw(st.lists(st.sampled_from(options), max_size=5))
    for p in chosen:
        flag = draw(st.sampled_from(p.opts))
        args += [flag] if p.is_flag else [flag, value(PLAUSIBLE.get(p.name, []))]
    if words in OUTPUTS and not any(p.name == "output" for p in chosen) and draw(st.integers(0, 4)):
        args += ["-o", OUTPUTS[words]]
    if words in (*SMALL, "run") and "--backend" not in args and draw(st.integers(0, 4)):
        args += ["--backend", "cpu"]
    if words in SMALL and "--reps" not in args:
        args += ["--reps", "5"]
    if words in SMALL and words not in ("gemm", "conv"):  # gemm's and conv's sizes are drawn like any option
        args += [a for flag, size in zip(SMALL[words][::2], SMALL[words][1::2]) if flag not in args
                 for a in (flag, size)]
    return words.split()[0], args


@settings(max_examples=examples(1200), suppress_health_check=SUPPRESS, **SETTINGS)
@given(line=command_line())
def test_odd_command_lines(tmp_path, line, monkeypatch):
    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    kept = {name: digest(tmp_path / name) for name in ("run.json", "other.json", "suite.toml", "gpubench.toml")}
    command, args = line
    assert_answered_well(invoke(args), command)
    for name, before in kept.items():  # what was not named as an output with --force is never touched
        assert digest(tmp_path / name) == before or ("--force" in args and name in args), name
    for name in ("loop.json", "dangling.json"):  # nor is a link, even one that leads nowhere
        assert (tmp_path / name).is_symlink() or ("--force" in args and name in args), name
    assert not [p for p in tmp_path.rglob("*.tmp")]  # no temporary file is left behind


@pytest.mark.parametrize("words", sorted(COMMANDS))
def test_every_option_of_every_command_alone(tmp_path, monkeypatch, words):
    """Each option by itself with each hostile value: the systematic sweep beside the random one above."""
    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    command = COMMANDS[words]
    base = words.split() + [{"show": "run.json", "plot": "run.json", "run": "suite.toml", "compare": "run.json",
                             "report": "run.json", "history": "run.json"}.get(words, "")]
    base = [w for w in base if w] + (["run.json"] if words == "compare" else [])
    if words in SMALL:
        base += ["--backend", "cpu", *SMALL[words]]
    if words in ("plot", "report"):
        base += ["-o", "out.png" if words == "plot" else "out.html", "--force"]
    for p in command.params:
        if not isinstance(p, click.Option) or p.is_flag or "--help" in p.opts:
            continue
        for value in ODD[::2] if words == "tune gemm" else ODD:  # tune's own checks are few; its start is slow
            assert_answered_well(invoke(base + [p.opts[-1], value]), words.split()[0])
            for name in ("out.json", "out.png", "out.html", "h.html"):
                (tmp_path / name).unlink(missing_ok=True)


@pytest.mark.parametrize("value", [v for v in ODD if v != "/"])  # history / would read every file on the disk
def test_every_argument_of_every_command_alone(tmp_path, monkeypatch, value):
    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    for args in (["show", value], ["show", value, "--format", "csv"], ["compare", value, "run.json"],
                 ["compare", "run.json", value, "--format", "json"], ["plot", value, "-o", "p.png", "--force"],
                 ["plot", value, "--roofline", "-o", "p.svg", "--force"], ["report", value, "-o", "r.html", "--force"],
                 ["report", "run.json", value, "-o", "r.html", "--force"], ["history", value],
                 ["history", "run.json", value], ["run", value, "--backend", "cpu"], ["run", value]):
        assert_answered_well(invoke(args), args[0])


# Where each command takes a path, as a command line with {} in its place.
PATH_PLACES = [["show", "{}"], ["compare", "{}", "run.json"], ["compare", "run.json", "{}"], ["plot", "{}", "-o", "p.png"],
               ["plot", "run.json", "-o", "{}"], ["report", "{}", "-o", "r.html"], ["report", "run.json", "{}", "-o", "r.html"],
               ["report", "run.json", "-o", "{}"], ["history", "{}"], ["history", "run.json", "{}"],
               ["history", "run.json", "--html", "{}"], ["run", "{}", "--backend", "cpu"],
               ["run", "suite.toml", "--backend", "cpu", "-o", "{}"], ["gemm", "--backend", "cpu", "--sizes", "16", "-o", "{}"],
               ["conv", "--backend", "cpu", "--sizes", "8", "-o", "{}"], ["gemm", "--backend", "cpu", "--config", "{}"],
               ["list", "--config", "{}"], ["check", "--config", "{}"], ["gemm", "--backend", "cpu", "--kernel", "{}"]]


@settings(max_examples=examples(120), suppress_health_check=SUPPRESS, **SETTINGS)
@given(place=st.sampled_from(PATH_PLACES), blank=st.text(alphabet=" \t", max_size=3),
       force=st.booleans())
def test_a_blank_path_anywhere_is_refused(tmp_path, monkeypatch, place, blank, force):
    """A path left blank (an unset variable: `gpubench history "$RUNS"`) is refused wherever a command takes one,
    never read or written as the current directory (Path('') is '.': history read every run below it)."""
    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    args = [a.format(blank) for a in place] + (["--force"] if force and "-o" in place else [])
    before = sorted(p.name for p in tmp_path.iterdir())
    r = invoke(args)
    assert_answered_well(r, args[0])
    assert r.exit_code == 2, (args, r.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# Every option that takes one value, with the command that has it.
SINGLE = [(words, o) for words, c in COMMANDS.items() for o in c.params
          if isinstance(o, click.Option) and not (o.multiple or o.is_flag or o.count)]


@settings(max_examples=examples(80), suppress_health_check=SUPPRESS, **SETTINGS)
@given(single=st.sampled_from(SINGLE), first=HOSTILE, second=HOSTILE, long=st.booleans(), joined=st.booleans())
def test_an_option_that_takes_one_value_given_twice_is_refused(tmp_path, monkeypatch, single, first, second, long,
                                                               joined):
    """click kept the last value and dropped the others without a word (`--sizes 16 --sizes 17` measured 17)."""
    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    words, option = single
    name = option.opts[-1] if long or not option.secondary_opts and len(option.opts) == 1 else option.opts[0]
    given = [f"{name}={first}"] if joined and name.startswith("--") else [name, first]
    args = [*words.split(), *given, option.opts[-1], second, *ARGUMENTS.get(words, [])[:1]]
    before = sorted(p.name for p in tmp_path.iterdir())
    r = invoke(args)
    assert_answered_well(r, words.split()[0])
    assert r.exit_code == 2 and f"{option.opts[-1]} is given 2 times" in r.output, (args, r.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


# Where each command writes a file, with the suffix it takes.
OUTPUT_PLACES = [(place, suffix) for place in PATH_PLACES if "{}" == place[-1] and place[-2] in ("-o", "--html")
                 for suffix in [{"plot": ".png", "report": ".html", "history": ".html"}.get(place[0], ".json")]]


@settings(max_examples=examples(60), suppress_health_check=SUPPRESS, **SETTINGS)
@given(place=st.sampled_from(OUTPUT_PLACES), stem=st.text(alphabet="ab_-", min_size=1, max_size=5),
       tail=st.sampled_from(["/", "//", "/.", "/ "]), force=st.booleans())
def test_an_output_named_as_a_directory_is_refused(tmp_path, monkeypatch, place, stem, tail, force):
    """`-o x.json/` names a directory (the shell's `> x.json/` refuses it): pathlib drops the slash, and the run was
    saved as x.json."""
    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    (place, suffix) = place
    args = [a.format(stem + suffix + tail) for a in place] + (["--force"] if force else [])
    before = sorted(p.name for p in tmp_path.iterdir())
    r = invoke(args)
    assert_answered_well(r, args[0])
    assert r.exit_code == 2 and "slash" in r.output, (args, r.output)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


ENVIRONMENT = ["GPUBENCH_CACHE", "GPUBENCH_TUNED", "GPUBENCH_COMMIT", "GPUBENCH_PHASES", "GPUBENCH_CONFIG", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "HOME",
               "COLUMNS", "LINES", "NO_COLOR", "TERM"]


@settings(max_examples=examples(150), suppress_health_check=SUPPRESS, **SETTINGS)
@given(name=st.sampled_from(ENVIRONMENT), value=HOSTILE.filter(lambda v: "\x00" not in v),
       args=st.sampled_from([["gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "-o", "e.json", "--force"],
                             ["list"], ["check"], ["show", "run.json"], ["tune", "gemm"], ["env", "--backend", "cpu"]]))
def test_odd_environment_variables(tmp_path, monkeypatch, name, value, args):
    """What gpubench reads from the environment (its own variables, the XDG directories, the terminal's size)."""
    from click.testing import CliRunner

    stand_in(monkeypatch)
    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    assert_answered_well(CliRunner().invoke(cli, args, env={name: value}), args[0])


@pytest.mark.parametrize("name", ["COLUMNS", "LINES"])
@pytest.mark.parametrize("value", ["²", "9" * 5000, "", "-1", "0"])
def test_a_terminal_size_rich_cannot_read_is_ignored(tmp_path, monkeypatch, name, value):
    from click.testing import CliRunner

    monkeypatch.chdir(tmp_path)
    setup_files(tmp_path)
    r = CliRunner().invoke(cli, ["show", "run.json"], env={name: value})
    assert r.exit_code == 0 and "tiled" in r.output, r.output


# --- real processes: what CliRunner cannot show --------------------------------------------------------------

REAL = [
    (["gemm", "--backend", "cpu", "--sizes", "16", "-o", ""], "-o is empty"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--scheduler", ""], "--scheduler is empty"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--scheduler", "myhost"], "needs a port"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--gpus", "²"], "--gpus '²'"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "-o", LONG_NAME], "the file name is too long"),
    (["run", "deep.toml", "--backend", "cpu"], "nested too deeply"),
    (["show", "deep.json"], "not valid JSON"),
    (["show", "big.json"], "a number has more than 4300 digits"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--kernel", "k.py:f", "--args", ""], "--args '' is empty"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--args", ""], "--args gives the parameter order of a --kernel"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "--kernel", "loop.py:f"], "source loop.py does not exist"),
    (["gemm", "--backend", "cpu", "--sizes", "16", "-o", "dangling.json"], "exists: pass --force"),
    (["report", "run.json", "-o", "r.html", "--threshold", "nan"], "--threshold must be a finite fraction"),
    (["history", "run.json", "--threshold", "inf"], "--threshold must be a finite fraction"),
    (["history", "run.json", "--alpha", "nan"], "--alpha must be within"),
]


@pytest.mark.parametrize("args,words", REAL, ids=[" ".join(a)[:40] for a, _ in REAL])
def test_a_real_process_answers_in_one_line(tmp_path, args, words):
    """In a process of its own, as a shell runs it: one line on stderr, exit 2, no worker left behind."""
    import subprocess
    import sys

    setup_files(tmp_path)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-m", "gpubench", *args], cwd=tmp_path, capture_output=True, text=True,
                       env=env, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and words in p.stderr, p.stderr
    assert p.stderr.startswith("gpubench: error: ") and "Traceback" not in p.stdout + p.stderr
    assert not (tmp_path / "results").exists()  # nothing was written in the default place


def test_an_ascii_only_output_is_one_line(tmp_path):
    import subprocess
    import sys

    setup_files(tmp_path)
    env = {**os.environ, "PYTHONIOENCODING": "ascii",
           "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-m", "gpubench", "show", "run.json"], cwd=tmp_path, capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 2 and p.stderr.count("\n") == 1 and "PYTHONIOENCODING=utf-8" in p.stderr, p.stderr
    assert json.loads((tmp_path / "run.json").read_text())["schema"] == "gpubench-run"


def _gpubench(args, cwd, **popen):
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")])),
           **popen.pop("env", {})}
    return subprocess.Popen([sys.executable, "-m", "gpubench", *args], cwd=cwd, env=env, **popen)


@pytest.mark.parametrize("value,words", [("/proc/x", "cannot be made a directory"), ("afile", "is not a directory"),
                                         (" ", "is set but empty")])
def test_a_phases_directory_that_cannot_be_is_refused_before_the_run(tmp_path, value, words):
    """GPUBENCH_PHASES (profiling gpubench itself) is checked with the output, before any point runs, and named."""
    import subprocess

    setup_files(tmp_path)
    p = _gpubench(["gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5", "-o", "o.json"], tmp_path,
                  env={"GPUBENCH_PHASES": value}, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out, err = p.communicate(timeout=120)
    assert p.returncode == 2 and err == f"gpubench: error: GPUBENCH_PHASES{'=' + value if value.strip() else ''} " \
        f"{words}" + err.split(words, 1)[1], err
    assert err.count("\n") == 1 and not (tmp_path / "o.json").exists() and not (tmp_path / " ").exists()


@pytest.mark.parametrize("args", [["list"], ["show", "run.json"], ["history", "run.json", "other.json"],
                                  ["compare", "run.json", "other.json"], ["env", "--backend", "cpu"]])
def test_a_reader_that_leaves_is_no_error(tmp_path, args):
    """`gpubench list | head -1`: the output's reader gone before it is written is not the command's failure."""
    import subprocess

    setup_files(tmp_path)
    p = _gpubench(args, tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    p.stdout.close()  # before a byte is read: every write meets a closed pipe
    err = p.stderr.read()
    assert p.wait(timeout=120) == 0 and err == "", err


def test_an_unwritable_stderr_still_gives_the_exit_code(tmp_path):
    """stderr on a full disk (or closed): the line cannot be said, but the exit code is still the table's."""
    import subprocess

    setup_files(tmp_path)
    with open("/dev/full", "w") as full:
        for args, code in ((["show", "missing.json"], 2), (["show", "run.json"], 0)):
            p = _gpubench(args, tmp_path, stdout=subprocess.DEVNULL, stderr=full)
            assert p.wait(timeout=120) == code, args


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1, signal.SIGUSR2],
                         ids=lambda s: s.name)
def test_a_signal_while_gpubench_imports_is_one_line(tmp_path, signum):
    """A signal in the few hundred milliseconds that Python takes to import click, rich and NumPy, before the
    command's own handling: the one line and the table's exit code, never an import's traceback."""
    import subprocess
    import sys

    from gpubench.core.exit_codes import Exit

    arrives = (f"import builtins, os, runpy, sys\nreal = builtins.__import__\n"
               f"def hook(name, *a, **k):\n    if name == 'gpubench.cli':\n        os.kill(os.getpid(), {int(signum)})\n"
               f"    return real(name, *a, **k)\nbuiltins.__import__ = hook\nsys.argv = ['gpubench', 'list']\n"
               f"runpy.run_module('gpubench', run_name='__main__')\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-c", arrives], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=120)
    how = "interrupted" if signum == signal.SIGINT else f"terminated by {signum.name}"
    assert p.returncode == Exit.stopped_by(None if signum == signal.SIGINT else signum), p.stderr
    assert p.stderr == f"gpubench: {how}\n" and p.stdout == ""


@pytest.mark.parametrize("args", [["list"], ["gemm", "--backend", "cpu", "--sizes", "16"], ["check"]])
def test_a_current_directory_that_was_deleted_is_named(tmp_path, args):
    """A shell still standing in a directory that was removed: every path relative to it is gone, and the line
    says so rather than a bare "No such file or directory"."""
    import shlex
    import subprocess
    import sys

    gone = tmp_path / "gone"
    gone.mkdir()
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    line = f"cd {gone} && rmdir {gone} && exec {sys.executable} -m gpubench {shlex.join(args)}"
    p = subprocess.run(["bash", "-c", line], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 2 and p.stderr == "gpubench: error: the current directory no longer exists (deleted?): " \
        "cd into one that does\n", p.stderr


@pytest.mark.parametrize("spread", [[], ["--gpus", "2"]], ids=["worker", "dask"])
def test_files_of_the_users_named_like_libraries_are_never_imported_for_them(tmp_path, spread):
    """A student's folder holding numpy.py, socket.py or json.py: the worker (and the command) import the real
    libraries, while a project's module still imports its own helpers from beside it, wherever it lies."""
    import subprocess
    import sys

    for name in ("numpy", "socket", "json", "rich"):
        (tmp_path / f"{name}.py").write_text(f"raise SystemExit('the user\\'s {name}.py was imported')\n")
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "helper.py").write_text("def product(a, b):\n    return a @ b\n")
    (tmp_path / "lib" / "mine.py").write_text("from helper import product\n\n\ndef f(A, B, C, M, N, K):\n"
                                              "    C[:] = product(A, B)\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [os.getcwd(), os.environ.get("PYTHONPATH")]))}
    p = subprocess.run([sys.executable, "-m", "gpubench", "gemm", "--backend", "cpu", "--sizes", "16", "--reps", "5",
                        "-o", "o.json", "--kernel", "lib/mine.py:f", *spread], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0 and "imported" not in p.stdout + p.stderr, p.stderr
    assert {pt.variant for pt in __import__("gpubench.results", fromlist=["load"]).load(tmp_path / "o.json").points} \
        == {"numpy", "f"}
