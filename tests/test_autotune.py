"""The tuner's search: its space comes from the spec's [variant.search] and constraints, and it runs candidates in
a worker like any sweep point (here on the CPU, with a Python function as the 'kernel')."""

import json

import pytest

from gpubench.usecases import autotune as tune
from gpubench.specs import catalog
from gpubench.specs import files
from gpubench.core.errors import GpubenchError
from gpubench.ops.gemm import GemmShape

TUNED = catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "tuned")


def test_space_meets_the_constraints():
    space = tune.space(TUNED)
    assert space and all(TUNED.space.satisfies(c) is None for c in space)
    threads = {TUNED.code.launch_for({"M": 1, "N": 1, "K": 1}, c).threads for c in space}
    assert threads <= {128, 256, 512}


def test_candidates_are_reproducible_and_start_with_the_variants_own():
    a, b = tune.candidates(TUNED, 20, seed=3), tune.candidates(TUNED, 20, seed=3)
    assert [c.label for c in a] == [c.label for c in b] and len(a) == 20
    assert a[0] == TUNED.space.configs[0]
    assert [c.label for c in tune.candidates(TUNED, 20, seed=4)] != [c.label for c in a]


def test_neighbours_differ_in_one_parameter_and_are_valid():
    c = TUNED.space.configs[0]
    near = tune.neighbours(TUNED, c)
    assert near and all(TUNED.space.satisfies(n) is None for n in near)
    assert all(sum(n.values[k] != c.values[k] for k in c.values) == 1 for n in near)


def test_a_variant_without_a_search_space_says_so():
    with pytest.raises(GpubenchError, match="no search space"):
        tune.space(catalog.Catalog(catalog.builtin()).get("gemm", "cuda", "tiled"))


def tuned(variant, tmp_path, search) -> tuple[dict, list[str]]:
    """Tune `variant` for one small GEMM on the CPU: the saved entry, and the lines tune printed."""
    lines = []

    class Out:
        def print(self, text):
            lines.append(text)

    path = tune.run(variant, [GemmShape(24, 20, 16)], search, seed=0, timeout_s=60, tuned_dir=tmp_path, out=Out())
    return json.loads(path.read_text())["entries"][0], lines


def test_tune_end_to_end_on_the_cpu(tmp_path, monkeypatch):
    """A Python 'kernel' whose speed depends on its parameter, searched, verified and saved per shape."""
    (tmp_path / "k.py").write_text(
        "import time\nimport numpy as np\n"
        "def blocked(A, B, C, M, N, K, TILE, EXTRA):\n"
        "    time.sleep(0.0005 * TILE)\n"
        "    np.matmul(A, B, out=C)\n"
        "    if TILE == 3:\n        C *= 2  # a wrong answer: must never win\n")
    (variant,) = files.parse_specs({"variant": [{
        "name": "blocked", "op": "gemm", "source": "k.py", "kernel": "blocked", "args": ["A", "B", "C", "M", "N", "K"],
        "configs": [{"TILE": 4, "EXTRA": 0}], "label": "t{TILE} e{EXTRA}",
        "search": {"TILE": [1, 2, 3, 4], "EXTRA": [0, 1]}, "constraints": ["TILE != 2 or EXTRA == 0"]}]},
        "gpubench.toml", tmp_path)
    entry, lines = tuned(variant, tmp_path, tune.Search(candidates=3, refine=2))
    assert entry["variant"] == "blocked" and entry["params"]["TILE"] == 1  # the fastest correct one
    assert entry["shape"] == {"m": 24, "n": 20, "k": 16, "dtype": "fp32", "layout": "nn"} and entry["tried"] >= 3
    assert any("fail" in line for line in lines)  # TILE=3 was tried and refused


def test_tune_without_the_gpu_stack_says_so_before_starting_a_worker(monkeypatch):
    """It took 2 s (a worker started, then refused) to say that it needs a GPU."""
    from click.testing import CliRunner

    from gpubench.cli import cli
    from gpubench.specs import backend_choice
    from gpubench.usecases import autotune

    def no_worker(*args, **kw):
        raise AssertionError("a worker was started to find out")

    monkeypatch.setattr(backend_choice, "gpu_stack_missing", lambda: "PyCUDA")
    monkeypatch.setattr(autotune, "open_executor", no_worker)
    r = CliRunner().invoke(cli, ["tune", "gemm", "--sizes", "256"])
    assert r.exit_code == 2 and r.output == ("gpubench: error: PyCUDA is not installed: pip install 'gpubench[gpu]' "
                                             "(`gpubench tune` searches on an NVIDIA GPU; it has no CPU backend)\n"), \
        r.output


def test_tune_records_other_processes_on_the_gpu_with_each_winner(tmp_path, monkeypatch):
    """A winner picked while another process computed on the GPU is saved with that record, and tune says so."""
    from gpubench.results.neighbours import GpuNeighbours, Neighbour

    class Watch:
        def start(self, executor):
            return GpuNeighbours(start=(Neighbour(4242, "python burn.py", 512),))

        def end(self, executor, record):
            return record.ended(())

    monkeypatch.setattr(tune, "watch_for", lambda backend, info: Watch())
    (tmp_path / "k.py").write_text("import numpy as np\ndef mm(A, B, C, M, N, K, T):\n    np.matmul(A, B, out=C)\n")
    (variant,) = files.parse_specs({"variant": [{
        "name": "mm", "op": "gemm", "source": "k.py", "kernel": "mm", "args": ["A", "B", "C", "M", "N", "K"],
        "configs": [{"T": 1}], "label": "t{T}", "search": {"T": [1, 2]}}]}, "gpubench.toml", tmp_path)
    entry, lines = tuned(variant, tmp_path, tune.Search(candidates=2, refine=0))
    assert entry["gpu_neighbours"]["start"] == [{"pid": 4242, "name": "python burn.py", "used_mib": 512}]
    assert any("1 other process was computing on this GPU" in line and "4242" in line for line in lines), lines
