"""The phase timers gpubench profiles itself with (GPUBENCH_PHASES): nested totals, self time, files per process,
and nothing at all when switched off."""

import json
import time

import pytest

from gpubench.core import phases


@pytest.fixture
def recording(tmp_path):
    phases.enable(tmp_path)
    yield tmp_path
    phases.enable(None)


def test_nested_phases_add_up_with_their_own_time(recording):
    for _ in range(2):
        with phases.phase("point"):
            with phases.phase("measure"):
                time.sleep(0.01)
                phases.add("timed", 0.004)
            time.sleep(0.005)
    path = phases.save("worker")
    data = json.loads(path.read_text())
    assert data["counts"] == {"point": 2, "point>measure": 2}
    assert data["seconds"]["point"] > data["seconds"]["point>measure"] >= 0.02
    assert data["amounts"] == {"point>measure>timed": pytest.approx(0.008)}
    (point, depth, total, own, count), (measure, *_rest) = phases.tree(phases.merged(recording)["worker"])
    assert (point, depth, count) == ("point", 0, 2) and measure == "point>measure"
    assert own == pytest.approx(total - data["seconds"]["point>measure"]) and own >= 0.01


def test_files_of_several_processes_are_added_per_role(tmp_path):
    for pid, seconds in ((1, 2.0), (2, 3.0)):
        (tmp_path / f"phases-worker-{pid}.json").write_text(json.dumps(
            {"role": "worker", "seconds": {"task": seconds}, "counts": {"task": 1}, "amounts": {}}))
    merged = phases.merged(tmp_path)["worker"]
    assert merged["seconds"] == {"task": 5.0} and merged["processes"] == 2


def test_switched_off_nothing_is_recorded_or_written(tmp_path):
    phases.enable(None)
    with phases.phase("anything"):
        phases.add("timed", 1.0)
    assert not phases.enabled() and phases.save("worker") is None and not list(tmp_path.iterdir())


def test_the_report_prints_the_tree(recording):
    import importlib.util
    from pathlib import Path

    with phases.phase("sweep"):
        with phases.phase("save point"):
            time.sleep(0.06)
    phases.save("coordinator")
    spec = importlib.util.spec_from_file_location("phases_tool", Path(__file__).parent.parent / "tools" / "phases.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    text = tool.report(recording)
    assert "## coordinator (1 process)" in text and "\n  save point" in text
