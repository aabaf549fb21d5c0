"""The results model: versioned JSON with raw samples, checked on every load, migrated from version 1, written
atomically; a file is claimed by one run at a time."""

import gzip
import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from gpubench.core.dtypes import DType
from gpubench.ops.conv import ConvLayout
from gpubench.ops.gemm import GemmLayout

from gpubench import results
from gpubench.core.errors import GpubenchError
from gpubench.ops.conv import ConvShape, conv_shape
from gpubench.ops.epilogue import NO_EPILOGUE, Epilogue, Fused, Scaling
from gpubench.ops.gemm import GemmShape
from gpubench.results import Details, Point, Run, RunStatus, RunWriter, Status
from gpubench.measure.timing import Stop

REPO = Path(__file__).resolve().parent.parent
DEEP: object = 1
for _ in range(70):
    DEEP = [DEEP]


def test_round_trip_keeps_every_field(make_run, tmp_path):
    run = make_run()
    path = results.save(run, tmp_path / "r.json")
    back = results.load(path)
    assert back == run
    p = back.points[0]
    assert p.samples_ms == run.points[0].samples_ms and p.median_ms == run.points[0].median_ms
    assert p.gflops == pytest.approx(p.flops / p.median_ms / 1e6)
    assert back.baseline("gemm") == "cublas" and back.baseline("conv") == "cudnn"


def test_statistics_are_derived_from_the_samples_not_read_back(make_run, tmp_path):
    path = results.save(make_run(), tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert data["points"][0]["stats"]["median"] > 0  # written for readers such as jq ...
    data["points"][0]["stats"]["median"] = 1e9  # ... but a reader of gpubench recomputes them
    data["points"][0]["gflops"] = -1
    path.write_text(json.dumps(data))
    p = results.load(path).points[0]
    assert p.median_ms < 1e3 and p.gflops > 0


def test_measured_point_fails_over_tolerance():
    p = Point.measured(GemmShape(1, 1, 1), "x", "-", samples_ms=[1.0, 2.0, 3.0], rel_err=2e-3, tolerance=1e-4)
    assert p.status == Status.FAIL and "over tolerance" in p.reason and p.median_ms == 2.0 and p.flops == 2.0


def test_a_point_checks_itself_when_made():
    with pytest.raises(ValueError, match="status ok needs samples_ms"):
        Point(GemmShape(1, 1, 1), "x", "-", Status.OK)
    with pytest.raises(ValueError, match="status ok disagrees"):
        Point(GemmShape(1, 1, 1), "x", "-", Status.OK, rel_err=0.5, tolerance=1e-4, samples_ms=(1.0,))
    with pytest.raises(ValueError, match="'great' is not a valid Status"):
        Point(GemmShape(1, 1, 1), "x", "-", "great")
    with pytest.raises(ValueError, match="engine has the wrong type"):
        Details(engine=3)
    with pytest.raises(ValueError, match="stop 'bored'"):
        Details(stop="bored")
    assert Details(stop="reps").stop is Stop.REPS
    with pytest.raises(Exception):
        Point(GemmShape(1, 1, 1), "x", "-", Status.SKIPPED).variant = "y"  # frozen


def test_writer_leaves_a_valid_file_after_every_point(make_run, tmp_path):
    full = make_run()
    run = make_run()
    run.points, run.status = [], results.RunStatus.RUNNING
    writer = RunWriter(run, tmp_path / "w.json")
    for i, p in enumerate(full.points):
        writer.add(p)
        on_disk = results.load(tmp_path / "w.json")
        assert len(on_disk.points) == i + 1 and on_disk.status == "running"
    writer.finish("interrupted")
    assert results.load(tmp_path / "w.json").status == "interrupted"
    assert not list(tmp_path.glob("*.tmp")) and not list(tmp_path.glob(".*.tmp"))


def test_a_failed_write_keeps_the_last_complete_file(make_run, tmp_path, monkeypatch):
    path = results.save(make_run(), tmp_path / "r.json")
    before = path.read_text()

    def full_disk(*a, **k):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(GpubenchError, match=r"\(No space left on device\); the file keeps its last complete save"):
        results.save(make_run(seed=3), path)
    assert path.read_text() == before and not list(tmp_path.glob(".*.tmp"))


def test_version_1_files_still_load():
    run = results.load(REPO / "results" / "nvidia-h200" / "ci-1.json.gz")
    assert run.schema_version == results.SCHEMA_VERSION and run.baseline("gemm") == "cublas" and run.baseline("conv") == "cudnn"
    assert len(run.points) == 12 and all(p.status == "ok" and p.median_ms > 0 for p in run.points)


def test_version_2_points_become_typed_records():
    """params become the problem's shape object; extra's fields become the details record, `<step>_ms` its
    parts_ms, anything unknown its reported; --gpus N's old code "nN" becomes N."""
    data = valid_v2()
    data["settings"] = {"gpus": "n2"}
    data["points"][0]["extra"] = {"stop": "decided", "batch": 8, "im2col_ms": 0.25, "engine": "eng1", "mine": [1]}
    conv = {**data["points"][0], "op": "conv", "extra": {},
            "params": {"batch": 2, "in_channels": 3, "out_channels": 4, "height": 9, "width": 7, "kernel": 3,
                       "stride": 2, "padding": 1}}
    data["points"].append(conv)
    run = results.load(write(data))
    gemm, conv = run.points
    assert gemm.problem == GemmShape(2, 2, 2) and conv.problem == ConvShape(2, 3, 4, 9, 7, 3, 2, 1)
    assert gemm.details == Details(stop=Stop.DECIDED, batch=8, engine="eng1", parts_ms={"im2col": 0.25},
                                   reported={"mine": [1]})
    assert run.settings["gpus"] == "2" and run.schema_version == results.SCHEMA_VERSION
    back = results.load(results.save(run, _tmp() / "v3.json"))
    assert back == run


def _tmp() -> Path:
    import tempfile

    return Path(tempfile.mkdtemp())


def write(data: dict) -> Path:
    path = _tmp() / "run.json"
    path.write_text(json.dumps(data))
    return path


SAVED = results.saved_under(REPO / "results")


def raw_json(path: Path) -> dict:
    """A saved file as written, before any migration (plain or compressed)."""
    return json.loads(results.decompressed(path.read_bytes()))


@pytest.mark.parametrize("version", sorted(results.schema.MIGRATIONS))
def test_every_older_version_under_results_migrates(version):
    """Each migration has files of its version under results/ to prove it on (and they all load). No run was
    saved at version 3 (the redesign's runs were compared, not kept): its migration is proven on the saved
    version-2 files as the version-2 migration leaves them, which is exactly what a version-3 file holds. Nor at
    version 5 (no run saved under results/ holds a profile): its migration is proven on the version-4 files so."""
    files = [f for f in SAVED if raw_json(f)["schema_version"] == version]
    lifted = [f for f in SAVED if raw_json(f)["schema_version"] == version - 1] if version in (3, 5) else []
    assert files or lifted, f"no file of schema version {version} under results/ to test its migration on"
    for f in files:
        run = results.load(f)
        assert run.schema_version == results.SCHEMA_VERSION and run.points
        assert all(p.problem.record() == p.to_dict()["problem"] for p in run.points)
    for f in lifted:
        data = results.schema.MIGRATIONS[version - 1](raw_json(f))
        assert data["schema_version"] == version
        data = results.schema.MIGRATIONS[version](data)
        assert data["schema_version"] == version + 1
        assert all({"dtype", "layout"} <= set(p["problem"]) for p in data["points"])


def test_version_3_tf32_points_become_tf32_problems():
    """Before the precision axis a TF32 point said so in its details; after, its problem is a tf32 problem, so it
    never pairs with an fp32 point of the same size."""
    point = {"op": "gemm", "variant": "cublas", "config": "-", "problem": {"m": 2, "n": 2, "k": 2}, "status": "ok",
             "rel_err": 1e-4, "tolerance": 5e-3, "samples_ms": [1.0, 1.1], "details": {"tf32": True}}
    fp32 = {**point, "variant": "tiled", "details": {}, "rel_err": 1e-7, "tolerance": 1e-4}
    conv = {"op": "conv", "variant": "cudnn", "config": "-", "status": "skipped", "reason": "x",
            "problem": {"batch": 1, "in_channels": 3, "out_channels": 1, "height": 8, "width": 8, "kernel": 3,
                        "stride": 1, "padding": 1}}
    run = results.load(write({"schema": "gpubench-run", "schema_version": 3, "backend": "cuda", "environment": {},
                              "settings": {}, "points": [point, fp32, conv]}))
    assert [(p.problem.dtype, p.problem.layout) for p in run.points] == [
        (DType.TF32, GemmLayout.NN), (DType.FP32, GemmLayout.NN), (DType.FP32, ConvLayout.NCHW)]
    assert run.points[0].tf32 and not run.points[1].tf32


def valid_v2() -> dict:
    point = {"op": "gemm", "variant": "x", "config": "-", "params": {"m": 2, "n": 2, "k": 2}, "status": "ok",
             "rel_err": 1e-7, "tolerance": 1e-4, "samples_ms": [1.0, 1.1], "flops": 16.0, "min_bytes": 48.0}
    return {"schema": "gpubench-run", "schema_version": 2, "backend": "cuda", "environment": {}, "settings": {},
            "points": [point]}


def corrupt(**change):
    data = valid_v2()
    for key, value in change.items():
        if key.startswith("p_"):
            data["points"][0][key[2:]] = value
        else:
            data[key] = value
    return json.dumps(data, allow_nan=True)


@pytest.mark.parametrize("content,match", [
    ("", "is empty"),
    ('{"schema": "gpubench-run", "schema_version": 2, "points": [', "not valid JSON"),
    ("[1, 2]", "not a gpubench results file"),
    ('{"schema": "other"}', "not a gpubench results file"),
    ('{"schema": "gpubench-run", "schema_version": 99}', "schema version 99; this gpubench reads versions 1 to 6; "
                                                         "upgrade gpubench"),
    ('{"schema": "gpubench-run", "schema_version": "2"}', "schema version '2'"),
    ('{"schema": "gpubench-run", "schema_version": 2, "points": []}', "lacks backend"),
    (corrupt(points=[{"op": "gemm"}]), "lacks variant, config, problem, status"),
    (corrupt(p_status="great"), "status 'great'"),
    (corrupt(p_samples_ms=[1.0, -2.0]), "samples_ms must be finite positive numbers"),
    (corrupt(p_samples_ms=[1.0, float("nan")]), "samples_ms must be finite positive"),
    (corrupt(p_samples_ms=["1"]), "samples_ms must be finite positive"),
    (corrupt(p_samples_ms=[]), "needs samples_ms"),
    (corrupt(p_rel_err=0.5), "status ok disagrees with rel_err"),
    (corrupt(p_tolerance=-1), "tolerance must be a number from 0 to 1"),
    (corrupt(p_flops=10**400), "flops must be a number"),
    (corrupt(p_samples_ms=[1e308, 1e308]), "samples_ms must be finite positive numbers of milliseconds"),
    (corrupt(p_samples_ms=[5e-324, 1.0]), "samples_ms must be finite"),
    (corrupt(p_extra={"im2col_ms": "x"}), "parts_ms must map step names to milliseconds"),
    (corrupt(p_extra={"engine": [1]}), "engine has the wrong type"),
    (corrupt(p_extra={"stop": "bored"}), r"details: stop 'bored'; allowed are reps"),
    (corrupt(p_telemetry={"reasons": 5}), "reasons has the wrong type"),
    (corrupt(environment={"device": {"ceilings": "fast"}}), "ceilings has the wrong type"),
    (corrupt(environment={"device": {"ceilings": {"ffma_gflops": "x"}}}), "ffma_gflops has the wrong type"),
    (corrupt(environment={"device": {"floor_ms": -1}}), "floor_ms must be a number"),
    (corrupt(settings={"a": DEEP}), "nested more than 64"),
    (corrupt(p_params={"m": 2, "n": 2}), "a gemm problem has the keys m, n, k, dtype, layout, got m, n"),
    (corrupt(p_params={"m": 2, "n": 2, "k": 2, "q": 1}), "a gemm problem has the keys m, n, k, dtype, layout, not q"),
    (corrupt(p_params={"m": 2, "n": 2, "k": True}), r"k must be a positive integer \(at most 2\*\*63 - 1\), got True"),
    (corrupt(p_op="conv", p_params={"batch": 1, "in_channels": 1, "out_channels": 1, "height": 4, "width": 4,
                                    "kernel": 3, "stride": 1, "padding": "1"}), r"pad must be 0 or more \(at most 2\*\*63 - 1\), got '1'"),
        (corrupt(p_params={"m": 2, "n": 2**63, "k": 2}), r"n must be a positive integer \(at most 2\*\*63 - 1\)"),
        (corrupt(p_params={"m": 10**30, "n": 10**30, "k": 10**30}), r"m must be a positive integer \(at most"),
        (corrupt(settings={"replicate": True, "slow_threshold": "x"}), "settings: slow_threshold has the wrong type"),
        (corrupt(settings={"replicate": "yes"}), "settings: replicate has the wrong type"),
        (corrupt(settings={"slow_threshold": float("nan")}), "settings: slow_threshold must be a number"),
    (corrupt(p_params={"m": 2, "n": 0, "k": 2}), "n must be a positive integer"),
    (corrupt(p_op="fft"), "op 'fft'"),
    (corrupt(p_flops=float("inf")), "flops must be a number"),
    (corrupt(environment=[]), "environment has the wrong type"),
    (corrupt(status="exploded"), "status 'exploded'"),
])
def test_bad_files_say_what_is_wrong(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(GpubenchError, match=match) as e:
        results.load(path)
    assert "\n" not in str(e.value)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(GpubenchError, match="does not exist"):
        results.load(tmp_path / "nope.json")
    with pytest.raises(GpubenchError, match="is not a file"):
        results.load(tmp_path)


def test_truncated_real_file(make_run, tmp_path):
    path = results.save(make_run(), tmp_path / "r.json")
    text = path.read_text()
    path.write_text(text[: len(text) // 2])
    with pytest.raises(GpubenchError, match="truncated or corrupt"):
        results.load(path)


def test_point_keys_identify_points_across_runs(make_run):
    a, b = make_run(seed=1), make_run(seed=2)
    assert [p.key() for p in a.points] == [p.key() for p in b.points]
    assert len({p.key() for p in a.points}) == len(a.points)
    saved = json.loads(a.to_json())
    assert saved["schema"] == "gpubench-run" and saved["schema_version"] == results.SCHEMA_VERSION


def test_a_runs_text_is_one_json_dump_whatever_was_cached(make_run):
    """to_json makes each point's text once (a writer rewrites the file after every point); the file is exactly
    json.dumps of the whole run, with no points and with some."""
    from dataclasses import fields

    def plain(run):
        data = {f.name: getattr(run, f.name) for f in fields(run)}
        data.update(status=str(run.status), points=[p.to_dict() for p in run.points])
        return json.dumps(data, indent=1, allow_nan=True)

    run = make_run()
    points, run.points = run.points, []
    assert run.to_json() == plain(run)
    for p in points:
        run.points.append(p)
        assert run.to_json() == plain(run)
    assert json.loads(run.to_json())["points"][0]["samples_ms"] == list(points[0].samples_ms)


def test_a_claim_is_exclusive_and_names_its_holder(tmp_path):
    path = tmp_path / "r.json"
    with results.claim(path):
        with pytest.raises(GpubenchError, match=rf"-o {path} is being written by another gpubench run \(pid "
                                                rf"{os.getpid()} on .*, since .*\): wait for it to end"):
            results.claim(path)
    with results.claim(path):  # released
        pass
    assert not (tmp_path / ".r.json.lock").exists()


def test_the_claim_of_a_dead_process_is_no_claim(tmp_path):
    """A lock file left behind (its process killed outright: no clean-up ran) does not block the next run."""
    path = tmp_path / "r.json"
    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from gpubench import results; "
                               "c = results.claim(sys.argv[1]); print('held', flush=True); time.sleep(60)", str(path)],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(REPO)})
    assert holder.stdout.readline() == "held\n"
    with pytest.raises(GpubenchError, match=f"pid {holder.pid} on"):
        results.claim(path)
    holder.kill()
    holder.wait()
    assert (tmp_path / ".r.json.lock").exists()
    with results.claim(path):
        pass


# --- whatever gpubench writes, it reads back ---------------------------------------------------------------------

DIM = st.sampled_from([1, 2, 7, 8_000_000_000, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1]) | st.integers(1, 2**63 - 1)
MS = st.floats(results.model.SAMPLE_RANGE[0], results.model.SAMPLE_RANGE[1])


EPILOGUES = st.sampled_from([NO_EPILOGUE, Fused(Epilogue.BIAS_RELU_ADD), Fused(Epilogue.BIAS, 0.5, 2.0),
                             Fused(Epilogue.NONE, alpha=0.3, scaling=Scaling.CHANNEL),
                             Fused(Epilogue.BIAS_RELU_ADD, 2.0, 1.0, -4.0)])


@st.composite
def shapes(draw):
    dtype = draw(st.sampled_from(list(DType)))
    if draw(st.booleans()):
        return GemmShape(draw(DIM), draw(DIM), draw(DIM), dtype, draw(st.sampled_from(list(GemmLayout))))
    try:
        return conv_shape(draw(DIM), draw(DIM), batch=draw(DIM), in_channels=draw(DIM), out_channels=draw(DIM),
                          kernel=draw(DIM), padding=draw(st.sampled_from(["same", "valid", 0, 1, 2**40])),
                          dtype=dtype, layout=draw(st.sampled_from(list(ConvLayout))), fused=draw(EPILOGUES))
    except GpubenchError:  # a filter larger than its padded input, channels not in whole vectors, factors an
        # exact precision refuses: not a problem gpubench runs
        assume(False)


@st.composite
def points(draw):
    shape = draw(shapes())
    name = draw(st.text(min_size=1, max_size=12).filter(str.isprintable))  # a name is printable text (the model)
    if draw(st.booleans()):
        return Point(shape, name, "-", Status.SKIPPED, reason=draw(st.text(max_size=40)))
    samples = draw(st.lists(MS, min_size=1, max_size=8))
    joules = draw(st.floats(1e-9, 1e3))
    telemetry = {"sm_mhz": draw(st.floats(1, 5000)), "joules_per_call": joules,
                 "gflops_per_w": shape.flops / joules / 1e9}  # as the CUDA backend derives it: as large as flops
    return Point.measured(shape, name, draw(st.sampled_from(["-", "16", "128x128x8/8x8"])), samples_ms=samples,
                          rel_err=draw(st.floats(0, math.inf)), tolerance=draw(st.floats(1e-9, 1.0)),
                          telemetry=telemetry)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(st.lists(points(), min_size=1, max_size=5, unique_by=lambda p: (p.key(), p.device)),
       st.sampled_from(list(RunStatus)))
def test_any_run_gpubench_writes_it_reads_back(tmp_path_factory, made, status):
    """Extreme sizes included: a GEMM of 8e9 cubed (flops past 1e30), int64 dimensions, femtosecond and
    thirty-year samples, infinite errors. (A run holds each point once: suites refuse sweeps that overlap; a file
    holding one twice is read as one point, tests/test_compare.py.)"""
    run = Run(backend="cuda", environment={}, settings={}, points=made, status=status)
    path = tmp_path_factory.mktemp("roundtrip") / "r.json"
    results.save(run, path)
    again = results.load(path)
    assert again.points == made and again.status == status


@pytest.mark.parametrize("blank", ["", " "])
@pytest.mark.parametrize("command", [["show", "{}"], ["compare", "{}", "{}"], ["history", "{}"],
                                     ["report", "{}", "-o", "r.html"], ["plot", "{}", "-o", "p.png"]])
def test_an_empty_results_path_is_refused_not_read_as_the_current_directory(tmp_path, monkeypatch, blank, command):
    """`gpubench history "$RUNS"` with RUNS unset: Path('') is the current directory, which history read (every
    *.json below it, exit 0) and the others called "results file . is not a file"."""
    from click.testing import CliRunner

    from gpubench.cli import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "stray.json").write_text("{}")
    r = CliRunner().invoke(cli, [a.format(blank) for a in command])
    assert r.exit_code == 2 and r.output.count("\n") == 1, r.output
    assert f"a results file is given as {blank!r} (an unset variable?)" in r.output, r.output


def test_a_results_file_with_a_byte_order_mark_loads(make_run, tmp_path):
    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + make_run().to_json().encode())
    assert results.load(path).points


# --- compressed runs: a name ending in .gz is written with gzip; reading goes by the file's first bytes -----------


def test_a_run_saved_as_json_gz_is_compressed_and_reads_back_equal(make_run, tmp_path):
    run = make_run()
    plain = results.save(run, tmp_path / "r.json")
    packed = results.save(run, tmp_path / "r.json.gz")
    assert packed.read_bytes()[:2] == b"\x1f\x8b" and plain.read_bytes()[:1] == b"{"
    assert packed.stat().st_size < plain.stat().st_size
    assert results.load(packed) == run == results.load(plain)


def test_a_compressed_save_gives_the_same_bytes_each_time(make_run, tmp_path):
    """No time stamp in the gzip header: saving a run again changes nothing in a repository's diff."""
    run = make_run()
    first = results.save(run, tmp_path / "a.json.gz").read_bytes()
    second = results.save(run, tmp_path / "b.json.gz").read_bytes()
    assert first == second


def test_a_compressed_run_loads_whatever_its_name(make_run, tmp_path):
    run = make_run()
    renamed = tmp_path / "renamed.json"
    renamed.write_bytes(results.save(run, tmp_path / "r.json.gz").read_bytes())
    assert results.load(renamed) == run


def test_a_truncated_compressed_run_is_one_line(make_run, tmp_path):
    path = results.save(make_run(), tmp_path / "r.json.gz")
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(GpubenchError, match="gzip-compressed but cannot be decompressed") as e:
        results.load(path)
    assert "\n" not in str(e.value)


def test_the_writer_keeps_a_compressed_run_valid_after_every_point(make_run, tmp_path):
    full = make_run()
    run = make_run()
    run.points, run.status = [], RunStatus.RUNNING
    writer = RunWriter(run, tmp_path / "w.json.gz")
    for i, p in enumerate(full.points):
        writer.add(p)
        assert len(results.load(tmp_path / "w.json.gz").points) == i + 1
    interim = (tmp_path / "w.json.gz").read_bytes()
    writer.finish(RunStatus.COMPLETE)
    assert results.load(tmp_path / "w.json.gz").points == full.points
    # the interim saves are compressed faster (gzip's level 1), the finished file as save() compresses it
    finished = results.save(run, tmp_path / "saved.json.gz").read_bytes()
    assert (tmp_path / "w.json.gz").read_bytes() == finished
    assert gzip.decompress(interim) != gzip.decompress(finished)  # (the status differs: running, then complete)
    assert interim[8] == 4 and finished[8] == 0  # gzip's XFL byte: 4 for the fastest level, 0 for the default


def test_unknown_keys_are_named_in_one_warning_per_file(make_run, tmp_path):
    """A point's `params` from an older tool, in a current file, was ignored without a word (and the unchanged
    problem plotted)."""
    data = json.loads(results.save(make_run(), tmp_path / "r.json").read_text())
    for p in data["points"]:
        p["params"] = {"m": 99, "n": 99, "k": 99}
    data["points"][0]["note"] = "mine"
    data["legacy"] = True
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(data))
    with pytest.warns(results.schema.UnknownKeys) as caught:
        results.load(path)
    n = len(data["points"])
    assert [str(w.message) for w in caught] == [
        f"results file {path}: unknown key(s) ignored: legacy (top level), note (in 1 of {n} points), params (in {n} "
        f"of {n} points); a version-{results.SCHEMA_VERSION} file has no such field, so what they hold is not in what "
        "is shown"]


def test_no_file_gpubench_saved_has_an_unknown_key(make_run, tmp_path):
    """Every field a run and a point write is one the reader knows, and so is every field of every saved file of
    every version (after its migration)."""
    from dataclasses import replace

    run = make_run()
    point = run.points[0]
    several = replace(point, processes=(1, len(point.samples_ms) - 1))  # measured in two worker processes
    assert set(point.to_dict()) | set(several.to_dict()) == results.schema.POINT_KEYS
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", results.schema.UnknownKeys)
        warnings.simplefilter("ignore", results.schema.PointsMerged)  # the lab runs of before 1.0: their own test
        results.load(results.save(make_run(), tmp_path / "r.json"))
        run.points[0] = several
        assert results.load(results.save(run, tmp_path / "k2.json")).points[0].processes == several.processes
        for path in SAVED:
            results.load(path)


def test_the_command_line_writes_the_warning_as_one_line(make_run, tmp_path):
    data = json.loads(results.save(make_run(), tmp_path / "r.json").read_text())
    data["points"][0]["params"] = {"m": 1}
    (tmp_path / "edited.json").write_text(json.dumps(data))
    r = subprocess.run([sys.executable, "-m", "gpubench", "show", "edited.json"], cwd=tmp_path, capture_output=True,
                       text=True, env={**os.environ, "PYTHONPATH": str(REPO)}, timeout=120)
    assert r.returncode == 0 and r.stderr.startswith("gpubench: warning: results file edited.json: unknown key(s) "
                                                     "ignored: params (in 1 of ") and r.stderr.count("\n") == 1, r.stderr


def test_a_point_held_twice_pools_two_measurements_keeps_one_copy_and_keeps_a_failure(make_run, tmp_path):
    run = make_run()
    first = run.points[0]
    other = Point.measured(first.problem, first.variant, first.config, samples_ms=[1.0, 1.1, 1.2], rel_err=1e-6,
                           tolerance=1e-4)
    failed = Point(first.problem, first.variant, first.config, Status.ERROR, reason="it raised")
    for i, (extra, expected) in enumerate((([other], [*first.samples_ms, 1.0, 1.1, 1.2]),
                                           ([first], list(first.samples_ms)), ([failed], []))):
        run.points = [first, *make_run().points[1:], *extra]
        path = results.save(run, tmp_path / f"r{i}.json")
        with pytest.warns(results.schema.PointsMerged, match="1 point"):
            (kept,) = [p for p in results.load(path).points if p.key() == first.key()]
        assert list(kept.samples_ms) == expected and kept.status == (Status.ERROR if not expected else Status.OK)
    assert len(results.load(path, each_once=False).points) == len(run.points)
