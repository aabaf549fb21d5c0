import json

import pytest

from gpubench import results
from gpubench.errors import GpubenchError
from gpubench.results import Point, RunWriter


def test_round_trip_keeps_every_field(make_run, tmp_path):
    run = make_run()
    path = results.save(run, tmp_path / "r.json")
    back = results.load(path)
    assert back == run
    p = back.points[0]
    assert p.samples_ms == run.points[0].samples_ms and p.stats["median"] == run.points[0].median_ms
    assert p.gflops == pytest.approx(p.flops / p.median_ms / 1e6)


def test_measured_point_fails_over_tolerance():
    p = Point.measured("gemm", "x", "-", {"m": 1, "n": 1, "k": 1}, samples_ms=[1.0, 2.0, 3.0], flops=2.0,
                       min_bytes=12.0, rel_err=2e-3, tolerance=1e-4, extra={})
    assert p.status == "fail" and "over tolerance" in p.reason
    assert p.median_ms == 2.0


def test_writer_leaves_a_valid_file_after_every_point(make_run, tmp_path):
    full = make_run()
    run = make_run()
    run.points, run.status = [], "running"
    writer = RunWriter(run, tmp_path / "w.json")
    for i, p in enumerate(full.points):
        writer.add(p)
        on_disk = results.load(tmp_path / "w.json")
        assert len(on_disk.points) == i + 1 and on_disk.status == "running"
    writer.finish("interrupted")
    assert results.load(tmp_path / "w.json").status == "interrupted"
    assert not list(tmp_path.glob("*.tmp"))


@pytest.mark.parametrize("content,match", [
    ("", "is empty"),
    ('{"schema": "gpubench-run", "schema_version": 1, "points": [', "not valid JSON"),
    ("[1, 2]", "not a gpubench results file"),
    ('{"schema": "other"}', "not a gpubench results file"),
    ('{"schema": "gpubench-run", "schema_version": 99}', "schema version 99"),
    ('{"schema": "gpubench-run", "schema_version": 1, "backend": "cuda", "environment": {}, "settings": {},'
     ' "points": [{"op": "gemm"}]}', "lacks variant, config, params, status"),
    ('{"schema": "gpubench-run", "schema_version": 1, "backend": "cuda", "environment": {}, "settings": {},'
     ' "points": [{"op": "gemm", "variant": "x", "config": "-", "params": {}, "status": "great"}]}', "status 'great'"),
    ('{"schema": "gpubench-run", "schema_version": 1, "points": []}', "corrupt"),
])
def test_bad_files_say_what_is_wrong(tmp_path, content, match):
    path = tmp_path / "bad.json"
    path.write_text(content)
    with pytest.raises(GpubenchError, match=match):
        results.load(path)


def test_missing_file(tmp_path):
    with pytest.raises(GpubenchError, match="does not exist"):
        results.load(tmp_path / "nope.json")


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
    assert saved["schema"] == "gpubench-run" and saved["schema_version"] == 1
