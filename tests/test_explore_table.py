"""tools/gpu/explore_table.py on the H200's saved pass 0 (results/nvidia-h200/targets-pass0.json.gz): one row per
problem and hand kernel, its fastest configuration beside the fastest library, and the ratio between them."""

import importlib.util
import statistics
from pathlib import Path

from gpubench.results import load

REPO = Path(__file__).resolve().parent.parent
PASS0 = REPO / "results" / "nvidia-h200" / "targets-pass0.json.gz"


def explore_table():
    spec = importlib.util.spec_from_file_location("explore_table", REPO / "tools" / "gpu" / "explore_table.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_row_sets_the_hand_kernels_fastest_configuration_beside_the_fastest_library():
    run = load(PASS0)
    rows = [line for line in explore_table().table(str(PASS0)).splitlines() if line.startswith("| 4096 INT8 NT |")]
    assert len(rows) == 1
    cells = [c.strip() for c in rows[0].strip("|").split("|")]
    gemm = [p for p in run.points if p.problem.label == "4096" and p.samples_ms]
    hand = min((p for p in gemm if p.variant == "int8-wgmma-tma"), key=lambda p: statistics.median(p.samples_ms))
    library = min((p for p in gemm if p.variant == "cublaslt"), key=lambda p: statistics.median(p.samples_ms))
    assert cells[1] == "cublaslt" and cells[3] == f"int8-wgmma-tma `{hand.config}`"
    assert float(cells[5]) == round(library.median_ms / hand.median_ms, 3)


def test_every_problem_with_a_hand_kernel_has_a_row_for_each_of_them():
    text = explore_table().table(str(PASS0))
    assert text.count("| fa3-wgmma `") == 12 and text.count("| flash-mma `") == 12  # S 4k-16k, causal or not, 2 types
    assert text.count("| tc-wgmma-int8 `") == 5  # four stride-1 layers and the stride-2 one, in NHWC
