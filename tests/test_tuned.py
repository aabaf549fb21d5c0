"""Tuned configurations: read from the project, the user's directory and the shipped ones; exact shape first."""

import json

import pytest

from gpubench.specs import catalog
from gpubench.core.errors import GpubenchError
from gpubench.results import Details
from gpubench.ops.gemm import GemmShape
from gpubench.specs.tuned import Tuned, shipped_dir, slug

TUNED = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "tuned")


@pytest.fixture(autouse=True)
def user_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUBENCH_TUNED", str(tmp_path / "user"))
    return tmp_path / "user"


def params(**change):
    return {**TUNED.space.configs[0].values, **change}


def write(directory, device, entries):
    directory.mkdir(parents=True, exist_ok=True)
    (directory / f"{slug(device)}.json").write_text(json.dumps({"device": device, "entries": entries}))


def test_exact_shape_then_nearest_size_then_the_variants_own(user_dir):
    write(user_dir, "GPU X", [{"variant": "tuned", "shape": [1024, 1024, 1024], "params": params(BM=64)},
                              {"variant": "tuned", "shape": {"m": 8192, "n": 8192, "k": 8192}, "params": params(BM=256)}])
    t = Tuned("GPU X")
    assert t.resolve(TUNED, GemmShape(8192, 8192, 8192), TUNED.space.configs[0])[0].values["BM"] == 256
    assert t.resolve(TUNED, GemmShape(1000, 1000, 1000), TUNED.space.configs[0])[0].values["BM"] == 64
    config, note = t.resolve(TUNED, GemmShape(6000, 6000, 6000), TUNED.space.configs[0])
    assert config.values["BM"] == 256 and note.tuned and not note.tuned_exact
    assert Tuned("GPU Y").resolve(TUNED, GemmShape(64, 64, 64), TUNED.space.configs[0]) == (TUNED.space.configs[0],
                                                                                      Details(tuned=False))


def test_the_project_wins_over_the_user_and_saves_go_there(user_dir, tmp_path):
    write(user_dir, "GPU X", [{"variant": "tuned", "shape": [64, 64, 64], "params": params(BM=64)}])
    write(tmp_path / "proj", "GPU X", [{"variant": "tuned", "shape": [64, 64, 64], "params": params(BM=256)}])
    t = Tuned("GPU X", tmp_path / "proj")
    assert t.resolve(TUNED, GemmShape(64, 64, 64), TUNED.space.configs[0])[0].values["BM"] == 256
    path = t.save("tuned", GemmShape(32, 32, 32), TUNED.space.configs[0], {"ms": 1.0})
    assert path.parent == tmp_path / "proj"
    assert {tuple(e["shape"].values())[:3] if isinstance(e["shape"], dict) else tuple(e["shape"])
            for e in json.loads(path.read_text())["entries"]} == {(64, 64, 64), (32, 32, 32)}


def test_shipped_h200_configurations_still_resolve():
    t = Tuned("NVIDIA H200")
    config, note = t.resolve(TUNED, GemmShape(4096, 4096, 4096), TUNED.space.configs[0])
    assert note.tuned_exact and config.label == "256x128x16 w128x32 t16x8 s2 g4"
    assert str(shipped_dir()) in note.tuned_from


@pytest.mark.parametrize("text", ["{not json", '{"entries": [{"variant": "tuned"}]}', '{"entries": 3}'])
def test_corrupt_files_are_one_line(user_dir, text):
    user_dir.mkdir(parents=True)
    (user_dir / "gpu.json").write_text(text)
    with pytest.raises(GpubenchError, match="tuned configurations .*gpu.json"):
        Tuned("gpu")
