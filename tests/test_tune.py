import json

import pytest

from gpubench import registry, tune
from gpubench.errors import GpubenchError
from gpubench.problems import GemmShape


def test_candidates_are_valid_reproducible_and_start_with_the_default():
    a, b = tune.candidates(20, seed=3), tune.candidates(20, seed=3)
    assert [c.label for c in a] == [c.label for c in b] and len(a) == 20
    assert a[0] == registry.get("gemm", "cuda", tune.SEARCH_VARIANT).configs[0]
    assert all(registry.valid_warp_config(c.values) for c in a)
    assert [c.label for c in tune.candidates(20, seed=4)] != [c.label for c in a]


def test_lookup_prefers_the_same_shape_then_the_nearest(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_TUNED", str(tmp_path))
    assert tune.lookup("NVIDIA H200", "tuned", GemmShape(64, 64, 64)) is None
    small = registry.warp_config(64, 64, 8, 32, 32, 4, 8, 2)
    big = registry.warp_config(128, 128, 16, 64, 32, 8, 8, 2, swizzle=8, min_blocks=2)
    entries = [{"variant": "tuned", "shape": [1024, 1024, 1024], "params": small.values},
               {"variant": "tuned", "shape": [8192, 8192, 8192], "params": big.values}]
    tune.cache_path("NVIDIA H200").write_text(json.dumps({"device": "NVIDIA H200", "entries": entries}))
    assert tune.lookup("NVIDIA H200", "tuned", GemmShape(8192, 8192, 8192)) == big
    assert tune.lookup("NVIDIA H200", "tuned", GemmShape(1000, 1000, 1000)) == small
    assert tune.lookup("NVIDIA H200", "tuned", GemmShape(6000, 6000, 6000)) == big
    assert tune.lookup("NVIDIA H100 80GB HBM3", "tuned", GemmShape(8192, 8192, 8192)) is None


def test_corrupt_cache_is_a_one_line_error(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_TUNED", str(tmp_path))
    tune.cache_path("gpu").write_text("{not json")
    with pytest.raises(GpubenchError, match="tuning cache .* is corrupt"):
        tune.lookup("gpu", "tuned", GemmShape(1, 1, 1))


def test_neighbours_differ_in_one_parameter_and_are_valid():
    c = registry.warp_config(128, 128, 8, 64, 32, 8, 8, 2)
    near = tune.neighbours(c)
    assert near and all(registry.valid_warp_config(n.values) for n in near)
    assert all(sum(n.values[k] != c.values[k] for k in c.values) == 1 for n in near)
    assert registry.warp_config(128, 128, 8, 64, 32, 8, 8, 2, swizzle=8).label in {n.label for n in near}


def test_tune_end_to_end_with_a_stand_in_backend(tmp_path, monkeypatch):
    """The search itself on the CPU: a backend whose 'kernel' is NumPy and whose speed depends on BK."""
    from gpubench.backends import Prepared
    from gpubench.backends.cpu import CpuBackend

    monkeypatch.setenv("GPUBENCH_TUNED", str(tmp_path))
    monkeypatch.setattr(tune, "precompile", lambda backend, variant, configs: list(configs))

    class StandIn(CpuBackend):
        device_name = "Stand-in GPU"
        calls: list = []

        def prepare(self, variant, config, shape, inputs):
            real = super().prepare(registry.get("gemm", "cpu", "numpy"), config, shape, inputs)
            if config.values["BM"] == 64:
                raise RuntimeError("too many resources requested for launch")
            self.calls.append(config.label)
            return Prepared(real.run, real.output)

    seen = []
    path = tune.tune(StandIn(), [GemmShape(48, 40, 32)], tune.candidates(6, seed=1), seed=0, refine=1,
                     on_result=lambda shape, config, ms, why: seen.append((config.label, ms, why)))
    entry = json.loads(path.read_text())["entries"][0]
    assert entry["shape"] == [48, 40, 32] and entry["variant"] == "tuned"
    assert entry["tried"] == len(StandIn.calls) > 6  # the sample, then the neighbours of the best two
    assert any("too many resources" in why for _, ms, why in seen if ms is None)
    assert tune.lookup("Stand-in GPU", "tuned", GemmShape(48, 40, 32)).values["BM"] != 64
