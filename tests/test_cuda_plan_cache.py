"""cuDNN's plan choices kept between runs (gpubench/backends/cuda/plan_cache.py): no GPU needed."""

import json

from gpubench.backends.cuda.plan_cache import PlanCache

LAYER = {"batch": 1, "height": 32, "width": 32, "stride": 2, "dtype": "fp32", "layout": "nchw"}


def test_a_choice_is_kept_for_the_next_run(tmp_path):
    path = tmp_path / "plans" / "h100.json"
    PlanCache(path).put(LAYER, "eng70_k2=12_k18=0")
    later = PlanCache(path)  # a new process reads the file
    assert later.get(LAYER) == "eng70_k2=12_k18=0"
    assert later.get({**LAYER, "stride": 1}) is None  # another problem is searched


def test_the_key_does_not_depend_on_the_order_of_fields(tmp_path):
    cache = PlanCache(tmp_path / "c.json")
    cache.put(dict(reversed(list(LAYER.items()))), "eng28")
    assert cache.get(LAYER) == "eng28"


def test_the_file_is_per_device_and_cudnn_under_the_cache_directory(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_CACHE", str(tmp_path))
    a = PlanCache.for_device("NVIDIA H100 80GB HBM3", "frontend 1.32.0 / backend 9.15.0")
    b = PlanCache.for_device("NVIDIA H200", "frontend 1.32.0 / backend 9.15.0")
    c = PlanCache.for_device("NVIDIA H100 80GB HBM3", "frontend 1.32.0 / backend 9.16.0")
    assert len({a.path, b.path, c.path}) == 3 and all(p.parent == tmp_path / "cudnn-plans" for p in (a.path, b.path, c.path))
    # the name earlier versions gave it, so that a kept plan is still found after an upgrade
    assert a.path.name == "nvidia-h100-80gb-hbm3--cudnn-frontend-1.32.0-backend-9.15.0.json"
    assert PlanCache.for_device("", None).path.name == "unknown--cudnn-unknown.json"


def test_a_damaged_file_reads_as_empty_and_is_rewritten(tmp_path):
    path = tmp_path / "c.json"
    for damaged in ["{not json", "[1, 2]", json.dumps({"k": 3}), "[" * 100_000]:
        path.write_text(damaged)
        cache = PlanCache(path)
        assert cache.get(LAYER) is None
        cache.put(LAYER, "eng0")
        assert PlanCache(path).get(LAYER) == "eng0"


def test_an_unwritable_cache_does_not_fail_the_run(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    cache = PlanCache(blocker / "plans.json")  # its directory cannot be made: a file is in the way
    cache.put(LAYER, "eng0")
    assert cache.get(LAYER) == "eng0"  # still known to this process
