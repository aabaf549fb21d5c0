"""tools/gpu/fix_configs.py and tools/gpu/judge_rounds.py on the H200's real exploratory pass
(results/nvidia-h200/targets-pass0.json.gz): the rounds' suite keeps each problem's fastest configuration, and the
judge applies each row's threshold (docs/evidence/int8-attention-rounds.md)."""

import importlib.util
import statistics
from pathlib import Path

from gpubench.planning import suites
from gpubench.results import load

REPO = Path(__file__).resolve().parent.parent
PASS0 = REPO / "results" / "nvidia-h200" / "targets-pass0.json.gz"
SUITE = REPO / "tools" / "gpu" / "targets-explore.toml"


def tool(name):
    spec = importlib.util.spec_from_file_location(name, REPO / "tools" / "gpu" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_rounds_suite_runs_each_problems_fastest_configuration_and_no_other(tmp_path, capsys):
    target = tmp_path / "rounds.toml"
    tool("fix_configs").main(str(SUITE), str(PASS0), str(target))
    rounds = suites.load(target, "cuda")
    run = load(PASS0)
    for sweep in rounds.sweeps:
        kept = {(v.name, c.label) for _, v, c in sweep.points()}
        for shape in sweep.shapes:
            mine = [p for p in run.points if p.problem == shape and p.variant == "tc-wgmma-int8" and p.samples_ms]
            if mine:
                best = min(mine, key=lambda p: statistics.median(p.samples_ms))
                assert ("tc-wgmma-int8", best.config) in kept
        assert sum(1 for name, _ in kept if name == "tc-wgmma-int8") <= len(sweep.shapes)
    timing = rounds.sweeps[0].policy
    assert timing.reps == 30 and timing.max_time_s == 3.0  # the rounds sample as the shipped suites do
    assert "int8-gemm: 4096 INT8 NT: int8-wgmma-tma" in capsys.readouterr().out


def test_the_judge_holds_each_row_to_its_threshold(capsys):
    tool("judge_rounds").main(str(PASS0), [str(PASS0)] * 5)  # the pass as five identical rounds
    lines = [x for x in capsys.readouterr().out.splitlines() if x.startswith("| ") and "INT8" in x.upper()]
    stride2 = [x for x in lines if " s2 " in x and "tc-wgmma-int8" in x]
    assert stride2 and all("| 0.90 |" in x for x in stride2)
    gemm = [x for x in lines if "int8-wgmma-tma" in x]
    assert len(gemm) == 2
    for row in gemm:  # five identical rounds: an interval of one value, on one side of 0.95 or the other
        ratio = float(row.split("|")[5].split()[0])
        assert f"| 0.95 | {'met' if ratio >= 0.95 else 'not met'} |" in row
    assert sorted(float(row.split("|")[5].split()[0]) >= 0.95 for row in gemm) == [False, True]  # 0.910, 0.971
