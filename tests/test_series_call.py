"""tools/gpu/series_call.sh's decisions, with its steps stubbed: the GPU tests (pytest) and target_rounds.sh's pass 0
and rounds are replaced by scripts that say what they were asked and answer as told. What is left is the script's
own logic, which spends or saves a lent GPU's minutes: stop after failing tests, stop where pass 0 or its fixing
failed, stop (successfully) where the guard finds the series' word in no fixed configuration, else run the rounds
with the call's time left."""

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXED_N1 = ("contiguous-4096x7168-fp8-block: 4x8192x4096x7168 FP8 CONTIGUOUS-BLOCK: fp8-grouped 128x128 s5 c2 g8 u1 "
            "d1 q1 t1 n1\n")
FIXED_T1 = ("contiguous-4096x7168-fp8-block: 4x8192x4096x7168 FP8 CONTIGUOUS-BLOCK: fp8-grouped 128x128 s5 c2 g8 u1 "
            "d1 q1 t1\n")


@pytest.fixture
def call(tmp_path):
    """Run series_call.sh from a copy beside a stub target_rounds.sh, with a stub python3 first on PATH; returns
    (exit code, series.txt, the stubs' log)."""
    if not shutil.which("bash"):
        pytest.skip("needs bash")
    tools = tmp_path / "tools" / "gpu"
    tools.mkdir(parents=True)
    shutil.copy(REPO / "tools" / "gpu" / "series_call.sh", tools)
    out, bin_dir, log = tmp_path / "out", tmp_path / "bin", tmp_path / "stubs.log"
    out.mkdir()
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        echo "python3 $*" >> {log}
        sleep 1  # the tests take time, which the rounds' budget must lose
        echo "1 passed"
        exit ${{TESTS_EXIT:-0}}
        """))
    (tools / "target_rounds.sh").write_text(textwrap.dedent(f"""\
        #!/bin/bash
        echo "target_rounds $1 SECONDS_LEFT=${{SECONDS_LEFT:-}} ROUND_GUESS=${{ROUND_GUESS:-}}" >> {log}
        if [ "$1" = pass0 ]; then
          [ -n "$FIXED" ] && printf '%s' "$FIXED" > "$OUT/fixed.txt" && echo "[[sweep]]" > "$OUT/rounds.toml"
          printf '%s' "$FIXED"
          exit ${{FIX_EXIT:-0}}
        fi
        echo "round 1: exit 0"
        """))
    for stub in (bin_dir / "python3", tools / "target_rounds.sh"):
        stub.chmod(0o755)

    def run(required: str | None, fixed: str = FIXED_N1, tests_exit: int = 0, fix_exit: int = 0):
        shutil.rmtree(out)  # each device call starts with $OUT empty
        out.mkdir()
        log.unlink(missing_ok=True)
        env = {**os.environ, "OUT": str(out), "PATH": f"{bin_dir}:{os.environ['PATH']}", "FIXED": fixed,
               "TESTS_EXIT": str(tests_exit), "FIX_EXIT": str(fix_exit), "CALL_SECONDS": "500"}
        args = ["bash", str(tools / "series_call.sh"), "fp8-grouped and n1", "suite.toml",
                *([required] if required else [])]
        done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
        said = (out / "series.txt").read_text() if (out / "series.txt").exists() else ""
        return done.returncode, said, log.read_text() if log.exists() else ""

    return run


def test_the_rounds_run_where_pass_0_fixed_what_the_series_judges(call):
    code, said, log = call("n1")
    assert code == 0 and "round 1: exit 0" in said
    rounds = next(line for line in log.splitlines() if line.startswith("target_rounds rounds"))
    left = int(rounds.split("SECONDS_LEFT=")[1].split()[0])
    assert 400 < left < 500 and "ROUND_GUESS=70" in rounds  # the call's 500 s less what tests and pass 0 took


def test_no_round_runs_where_pass_0_fixed_it_nowhere(call):
    code, said, log = call("n1", fixed=FIXED_T1)
    assert code == 0 and "pass 0 fixed n1 on no problem" in said and "target_rounds rounds" not in log


def test_the_guard_reads_the_configuration_not_the_sweep_or_the_problem(call):
    """A word that stands in a sweep's name or a problem's label ("block", "FP8") is not a configuration's."""
    code, said, log = call("block", fixed=FIXED_T1)
    assert "fixed block on no problem" in said and "target_rounds rounds" not in log


def test_failing_tests_stop_the_call_before_pass_0(call):
    code, said, log = call("n1", tests_exit=1)
    assert code == 1 and "target_rounds" not in log


def test_a_failed_fixing_stops_the_call_before_any_round(call):
    code, said, log = call("n1", fix_exit=1)
    assert code == 1 and "fixing failed" in said and "target_rounds rounds" not in log
    code, said, log = call("n1", fixed="")  # the fixing wrote nothing
    assert code == 1 and "fixing failed" in said and "target_rounds rounds" not in log
