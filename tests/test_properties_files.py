"""Property-based tests (hypothesis) of every file gpubench reads: results files (`show`, `compare`, `plot`,
`report`, `history`), suites (`run`) and kernel specs (a project's gpubench.toml, read by every command that
lists or runs variants). Each is generated truncated, byte-flipped, nested beyond reason, huge, or with values of
the wrong type; whatever comes in, gpubench answers with its documented exit code, never a traceback, one line
on stderr for an error, and it never damages an existing file. Sweeps do not really run (tests/hostile.py).

The hostile trials behind it threw at these readers files with a byte-order mark, CRLF, UTF-16, trailing data, two
documents, an array, schema versions from the past and the future (99, -1, 0, 1.0, "3", true, null, 2**70), samples
empty, negative, zero, NaN, Infinity, 1e308, 5e-324 and strings, two million samples, a point given twice, missing,
extra and mistyped keys, unknown enum values, a lone surrogate or a NUL in a name and 100,000-deep nesting; suites of
0 and 100,000 sweeps, duplicate sweeps, unicode names, TOML dates, 2**63, inf and nan, and a 200 kB description; specs
whose labels try format tricks (`{X!r:>99999999}`, `{X.__class__}`), whose conditions divide by zero or nest 5,000
deep, and whose launches pass CUDA's limits. What they found, each fixed with a test: every file is read and written
as UTF-8 whatever the locale, and a byte-order mark is no error; a results file's names (variant, configuration,
GPU) are printable text and its objects give each key once; `history` and `report` refuse a point given twice, as
`compare` does (`show` and `plot` show what the file holds); a file marked running whose writer has ended is said
to be so (its claim, `.NAME.lock`, tells); a point's reason is one printable line of at most 2,000 characters, so an
exception's escape sequences, NULs or 10 MB message cannot spoil a file; a spec's `requires` that divides by zero is
refused with the spec, as a bad launch is, not left to fail each point; a project's `[[family]]` is taken; a
variant's summary is one printable line. Left alone: a symbolic-link loop given as a file "does not exist", and a
broken pyproject.toml above the current directory is somebody else's and is skipped.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hostile import SETTINGS, assert_answered_well, digest, examples, invoke, stand_in

REPO = Path(__file__).resolve().parent.parent
SUPPRESS = [HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large]


@pytest.fixture(autouse=True)
def no_real_work(monkeypatch):
    stand_in(monkeypatch)


# --- results files --------------------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.sampled_from([2**63, 10**30, 2**1000, -0.0])
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


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.fixture(scope="module")
def valid_run_text():
    from conftest import synthetic_run

    run = synthetic_run(samples=6, clocks=1980)
    run.points = run.points[:2] + run.points[-1:]
    return run.to_json()


@st.composite
def corrupted(draw, text):
    """A results file spoilt one way: a value replaced (any type, huge, nested), a key deleted, cut short, bytes
    flipped, nested deeply at some place, or re-encoded."""
    kind = draw(st.sampled_from(["value", "value", "delete", "truncate", "bytes", "deep", "digits", "encoding"]))
    if kind in ("value", "delete", "deep", "digits"):
        data = json.loads(text)
        places = [p for p in paths_in(data) if p]
        path = draw(st.sampled_from(places))
        if kind in ("deep", "digits"):  # JSON text at that place nested past what any reader should recurse into,
            marker = "__deep__"  # or a number longer than Python converts (4300 digits)
            data = replaced(data, path, marker)
            odd = nested(draw(st.sampled_from([65, 1000, 100_000]))) if kind == "deep" else \
                draw(st.sampled_from(["9" * 5000, "-" + "1" * 4301, "0." + "5" * 5000, "1e" + "9" * 5000]))
            return json.dumps(data).replace(json.dumps(marker), odd, 1).encode()
        data = replaced(data, path, None if kind == "delete" else draw(JSON_VALUES), delete=kind == "delete")
        return json.dumps(data, allow_nan=True).encode()
    raw = text.encode()
    if kind == "truncate":
        return raw[: draw(st.integers(0, len(raw) - 1))]
    if kind == "encoding":
        return draw(st.sampled_from([text.encode("utf-16"), b"\xef\xbb\xbf" + raw, raw.replace(b'"', b"\xff", 1)]))
    at = draw(st.integers(0, len(raw) - 1))
    return raw[:at] + draw(st.binary(min_size=1, max_size=4)) + raw[at + 1:]


@settings(max_examples=examples(800), suppress_health_check=SUPPRESS, **SETTINGS)
@given(data=st.data())
def test_corrupted_results_files(tmp_path, valid_run_text, data):
    good = tmp_path / "good.json"
    good.write_text(valid_run_text)
    bad = tmp_path / "bad.json"
    bad.write_bytes(data.draw(corrupted(valid_run_text)))
    before = {p: digest(p) for p in (good, bad)}
    fmt = data.draw(st.sampled_from(["csv", "markdown", "json"]))
    assert_answered_well(invoke(["show", str(bad)]), "show")
    assert_answered_well(invoke(["show", str(bad), "--format", fmt]), "show")
    assert_answered_well(invoke(["compare", str(good), str(bad)]), "compare")
    assert_answered_well(invoke(["compare", str(bad), str(good), "--format", "json", "--allow-partial"]), "compare")
    assert_answered_well(invoke(["history", str(good), str(bad)]), "history")
    assert {p: digest(p) for p in (good, bad)} == before  # reading never writes


@settings(max_examples=examples(80), suppress_health_check=SUPPRESS, **SETTINGS)
@given(data=st.data())
def test_corrupted_results_files_drawn(tmp_path, valid_run_text, data):
    """plot and report draw what they read: axes, bands and rooflines from whatever the file holds."""
    pytest.importorskip("matplotlib")
    bad = tmp_path / "bad.json"
    bad.write_bytes(data.draw(corrupted(valid_run_text)))
    roofline = ["--roofline"] if data.draw(st.booleans()) else []
    for out in ("p.png", "r.html"):
        (tmp_path / out).unlink(missing_ok=True)
    assert_answered_well(invoke(["plot", str(bad), "-o", str(tmp_path / "p.png"), *roofline]), "plot")
    assert_answered_well(invoke(["report", str(bad), "-o", str(tmp_path / "r.html")]), "report")


@pytest.mark.parametrize("key", ['"status": ', '"variant": ', '"m": ', '"samples_ms": ', '"name": '])
def test_a_key_given_twice_in_one_object_is_refused(tmp_path, valid_run_text, key):
    """JSON readers settle a key given twice each their own way (Python's keeps the last): a hand-edited file that
    says "interrupted" and then "complete" is ambiguous, so it is refused in one line naming the key."""
    text = json.dumps(json.loads(valid_run_text))
    at = text.index(key)
    end = text.index(", ", at)  # the key and its value (a scalar, or a list of numbers without ", " in it)
    if text[at + len(key)] == "[":
        end = text.index("]", at) + 1
    path = tmp_path / "twice.json"
    path.write_text(text[:at] + text[at:end] + ", " + text[at:])
    for args in (["show", str(path)], ["compare", str(path), str(path), "--allow-partial"]):
        r = invoke(args)
        assert_answered_well(r, args[0])
        assert r.exit_code == 2 and f"the key {key.split(':')[0]!s} is given twice".replace('"', "'") in r.stderr, \
            r.stderr


NAMES = [("points", 0, "variant"), ("points", 0, "config"), ("points", 0, "device"), ("environment", "device", "name")]


@pytest.mark.parametrize("where", NAMES, ids=lambda w: ".".join(map(str, w)))
@pytest.mark.parametrize("name", ["", "\x1b[2J\x1b[31m", "a\x00b", "a\nb", "tab\there", "\u202etxet", "\x7f"])
def test_a_name_that_is_not_printable_text_is_refused(tmp_path, valid_run_text, where, name):
    """A name a run shows on the terminal (variant, configuration, GPU) that holds an escape sequence, a newline, a
    NUL or nothing at all: refused in one line that does not carry it, never sent to the terminal."""
    data = replaced(json.loads(valid_run_text), where, name)
    path = tmp_path / "names.json"
    path.write_text(json.dumps(data))
    for args in (["show", str(path)], ["compare", str(path), str(path)], ["history", str(path)]):
        r = invoke(args)
        assert_answered_well(r, args[0])
        assert r.exit_code == 2 and "must be" in r.stderr and "\x1b" not in r.output, r.output


MISTYPED = [(("points", 0, "samples_ms", 0), "1.5", "samples_ms must be"),  # a number as text
            (("points", 0, "samples_ms", 0), True, "samples_ms must be"),
            (("points", 0, "telemetry", "reasons"), [4], "reasons must be a list of strings"),
            (("points", 0, "telemetry", "reasons"), [None, "power cap"], "reasons must be a list of strings")]


@pytest.mark.parametrize("where,value,words", MISTYPED, ids=lambda x: repr(x)[:30])
def test_a_saved_value_of_the_wrong_type_is_refused(tmp_path, valid_run_text, where, value, words):
    """What the corrupted-file battery finds only now and then, on purpose: a sample given as text (which float()
    would take) and throttle reasons that are not names, refused in one line where a run is read."""
    data = replaced(json.loads(valid_run_text), where, value)
    path = tmp_path / "typed.json"
    path.write_text(json.dumps(data))
    for args in (["show", str(path)], ["compare", str(path), str(path)], ["history", str(path)]):
        r = invoke(args)
        assert_answered_well(r, args[0])
        assert r.exit_code == 2 and words in r.stderr, r.output


@settings(max_examples=examples(30), suppress_health_check=SUPPRESS, **SETTINGS)
@given(m=st.integers(1, 2**60), n=st.integers(1, 2**60), k=st.integers(1, 2**60), size=st.integers(1, 2**60),
       batch=st.integers(1, 2**60))
def test_huge_problems_in_a_file(tmp_path, valid_run_text, m, n, k, size, batch):
    """Shapes of any size a file may claim (up to 10**18 here): read, or refused in one line."""
    data = json.loads(valid_run_text)
    for p in data["points"]:
        if p["op"] == "gemm":
            p["problem"] = {"m": m, "n": n, "k": k}
        else:
            p["problem"].update(height=size, width=size, batch=batch)
        p.pop("flops", None), p.pop("min_bytes", None)
    path = tmp_path / "huge.json"
    path.write_text(json.dumps(data))
    for args in (["show", str(path)], ["show", str(path), "--format", "csv"], ["compare", str(path), str(path)],
                 ["plot", str(path), "-o", str(tmp_path / "h.png"), "--force"]):
        assert_answered_well(invoke(args), args[0])


# --- suites ---------------------------------------------------------------------------------------------------

SUITE_KEYS = ["name", "description", "tf32", "defaults", "sweep", "colour"]
SWEEP_KEYS = ["name", "op", "variants", "sizes", "mnk", "strides", "block_sizes", "batch", "in_channels",
              "out_channels", "kernel", "padding", "warmup", "reps", "budget", "max_noise", "max_time", "flush",
              "decide", "discard_throttled", "colour"]
TOML_SCALARS = (st.integers(-3, 70) | st.sampled_from([0, 1, 5, 16, 33, 2**40, 2**53 + 1, 2**63 - 1, -2**63])
                | st.booleans() | st.floats(-2, 100, allow_nan=False)
                | st.sampled_from(["gemm", "conv", "same", "valid", "tiled", "numpy", "sliding", "", "x", "x\n",
                                   " x", "\t", "٣", "💥", "a" * 300]) | st.text(max_size=6))
TOML_VALUES = (TOML_SCALARS | st.lists(TOML_SCALARS, max_size=3)
               | st.lists(st.lists(st.integers(-1, 40), max_size=3), max_size=2))


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
            st.lists(st.sampled_from(["warmup", "reps", "budget", "max_noise", "max_time", "flush", "decide",
                                      "colour"]), unique=True, max_size=3))]
    for _ in range(draw(st.integers(0, 2))):
        lines.append("[[sweep]]")
        keys = draw(st.lists(st.sampled_from(SWEEP_KEYS), unique=True, max_size=6))
        for k in keys:
            value = draw(st.sampled_from(["gemm", "conv"])) if k == "op" and draw(st.booleans()) else draw(TOML_VALUES)
            lines.append(f"{k} = {toml_value(value)}")
    tail = draw(st.integers(0, 9))
    if tail == 0:
        lines.append(draw(st.sampled_from(["[[sweep]", "= 3", "name = 'unterminated", "\x00", "reps = " + "9" * 5000,
                                           "sizes = [" + "1" * 4400 + "]"])))
    elif tail == 1:  # nested past what a reader should recurse into, under some key
        lines.append(f"{draw(st.sampled_from(SWEEP_KEYS))} = {nested(draw(st.sampled_from([64, 5000, 100_000])))}")
    return "\n".join(lines) + "\n"


@settings(max_examples=examples(700), suppress_health_check=SUPPRESS, **SETTINGS)
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
    assert digest(suite) == __import__("hashlib").sha256(text.encode()).hexdigest()


SHIPPED = sorted((REPO / "configs").glob("*.toml"))


@settings(max_examples=examples(200), suppress_health_check=SUPPRESS, **SETTINGS)
@given(data=st.data())
def test_shipped_suites_spoilt(tmp_path, data):
    """The shipped suites, cut short or with bytes flipped: a real suite's every key is somewhere near."""
    raw = data.draw(st.sampled_from(SHIPPED)).read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1))
    spoilt = raw[:at] if data.draw(st.booleans()) else raw[:at] + data.draw(st.binary(min_size=1, max_size=3)) + \
        raw[at + 1:]
    suite = tmp_path / "s.toml"
    suite.write_bytes(spoilt)
    (tmp_path / "o.json").unlink(missing_ok=True)
    assert_answered_well(invoke(["run", str(suite), "--backend", "cpu", "-o", str(tmp_path / "o.json"),
                                 "--max-time", "0.01"]), "run")


# --- kernel specs: a project's gpubench.toml ------------------------------------------------------------------

GOOD_VARIANT = {"name": "mine", "op": "gemm", "source": "k.cu", "kernel": "k", "args": ["A", "B", "C", "M", "N", "K"],
                "axis": "block", "grid": ["cdiv(N, BLOCK)", "cdiv(M, BLOCK)"], "block": ["BLOCK", "BLOCK"]}
SPEC_VALUES = (TOML_VALUES | st.sampled_from([
    "k.py", "k.cu", "../k.cu", "/", "missing.cu", "f", "k", "cpu", "cuda", "python", "numpy", "block", "configs",
    "tuned", "none", ["N ** 99"], ["cdiv(N, 0)"], ["2147483648"], ["1", "65536"], ["1025"], ["1", "1", "65"],
    ["M * N * K * M * N * K"], ["-1"], "{BM}", "{", "sm_90", "sm_9x", ["sm_90"], ["x", "w", "y"], ["A", "A"],
    "loop.cu", "loop.py", "loop", ["loop"], "a\x00b.cu", ["a\x00b"], "nowhere.py",  # links to themselves, NUL
]))


def toml_table_value(v) -> str:
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{k} = {toml_table_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list) and any(isinstance(x, dict) for x in v):
        return "[" + ", ".join(toml_table_value(x) for x in v) + "]"
    return toml_value(v)


TABLES = (st.dictionaries(st.sampled_from(["BM", "BN", "BLOCK", "label", "N", "x y", "U"]), TOML_SCALARS,
                          max_size=3)
          | st.lists(st.dictionaries(st.sampled_from(["BM", "BN", "BLOCK", "label"]), TOML_SCALARS, max_size=3),
                     max_size=2))


@st.composite
def spec_text(draw):
    from gpubench.specs.parse import KEYS

    tables = []
    for _ in range(draw(st.integers(1, 2))):
        table = dict(GOOD_VARIANT) if draw(st.booleans()) else {}
        for key in draw(st.lists(st.sampled_from(sorted(KEYS | {"colour"})), max_size=4)):
            table[key] = draw(SPEC_VALUES | TABLES)
        tables.append(table)
    text = "".join("[[variant]]\n" + "".join(f"{k} = {toml_table_value(v)}\n" for k, v in t.items())
                   for t in tables)
    if draw(st.integers(0, 9)) == 0:
        text += draw(st.sampled_from(["[[family]]\nname = 3\n", "[sets]\nx = 1\n", "tuned = 5\n",
                                      f"x = {nested(100_000)}\n", "[[variant]\n", 'tuned = "loop"\n',
                                      'tuned = "a\\u0000b"\n', f"tolerance = {'9' * 5000}\n"]))
    return text


@settings(max_examples=examples(600), suppress_health_check=SUPPRESS, **SETTINGS)
@given(text=spec_text(), command=st.sampled_from([["list"], ["gemm", "--backend", "cpu", "--sizes", "16"],
                                                  ["conv", "--backend", "cpu", "--sizes", "8"], ["check"],
                                                  ["run", "quick", "--backend", "cpu"]]))
def test_odd_spec_files(tmp_path, monkeypatch, text, command):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "k.cu").write_text('extern "C" __global__ void k(float* A, float* B, float* C, int M, int N, int K) '
                                   '{}\n')
    (tmp_path / "k.py").write_text("def f(A, B, C, M, N, K):\n    C[:] = A @ B\n")
    (tmp_path / "gpubench.toml").write_text(text)
    (tmp_path / "out.json").unlink(missing_ok=True)
    for name in ("loop.cu", "loop.py", "loop"):  # symbolic links to themselves
        if not (tmp_path / name).is_symlink():
            (tmp_path / name).symlink_to(name)
    args = command + (["-o", "out.json", "--max-time", "0.01"] if command[0] in ("gemm", "conv", "run") else [])
    assert_answered_well(invoke(args), command[0])


@settings(max_examples=examples(150), suppress_health_check=SUPPRESS, **SETTINGS)
@given(data=st.data())
def test_the_labs_spec_spoilt(tmp_path, monkeypatch, data):
    """examples/lab's gpubench.toml, cut short or with bytes flipped, beside its kernels."""
    import shutil

    lab = tmp_path / "lab"
    if not lab.exists():
        shutil.copytree(REPO / "examples" / "lab", lab)
    raw = (REPO / "examples" / "lab" / "gpubench.toml").read_bytes()
    at = data.draw(st.integers(0, len(raw) - 1))
    spoilt = raw[:at] if data.draw(st.booleans()) else raw[:at] + data.draw(st.binary(min_size=1, max_size=3)) + \
        raw[at + 1:]
    (lab / "gpubench.toml").write_bytes(spoilt)
    monkeypatch.chdir(lab)
    for args in (["list"], ["check"]):
        assert_answered_well(invoke(args), args[0])


# --- what an editor does to a file that is still the same file ------------------------------------------------

@st.composite
def edited(draw, raw: bytes) -> bytes:
    """The same text as an editor may save it: a byte-order mark before it (Notepad), CRLF line ends (Windows),
    a trailing newline added or taken away."""
    text = raw
    if draw(st.booleans()):
        text = text.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
    if draw(st.booleans()):
        text = text.rstrip(b"\r\n") if text.endswith(b"\n") else text + b"\n"
    if draw(st.booleans()) or text == raw:
        text = b"\xef\xbb\xbf" + text
    return text


@settings(max_examples=examples(60), suppress_health_check=SUPPRESS, **SETTINGS)
@given(data=st.data())
def test_an_editors_saving_changes_nothing(tmp_path, monkeypatch, valid_run_text, data):
    """A results file, a suite and a project file, each saved by an editor as above, read as they were (a
    byte-order mark made every one of them "not valid")."""
    from gpubench import results
    from gpubench.specs import project
    from gpubench.planning import suites

    monkeypatch.chdir(tmp_path)
    clean, run = tmp_path / "clean.json", tmp_path / "run.json"
    clean.write_text(valid_run_text)
    run.write_bytes(data.draw(edited(valid_run_text.encode())))
    assert results.load(run).to_json() == results.load(clean).to_json()
    shipped = data.draw(st.sampled_from(SHIPPED))
    suite = tmp_path / "s.toml"
    suite.write_bytes(data.draw(edited(shipped.read_bytes())))
    assert [s.name for s in suites.load(suite, backend="cpu").sweeps] == \
        [s.name for s in suites.load(shipped, backend="cpu").sweeps]
    lab = REPO / "examples" / "lab"
    (tmp_path / "gpubench.toml").write_bytes(data.draw(edited((lab / "gpubench.toml").read_bytes())))
    for f in lab.iterdir():
        if f.name != "gpubench.toml" and f.is_file():
            (tmp_path / f.name).write_bytes(f.read_bytes())
    assert [v.name for v in project.load(start=tmp_path).variants] == \
        [v.name for v in project.load(start=lab).variants]
