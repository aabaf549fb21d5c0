"""gpubench/execution/profiled.py: one point's process under ncu (a fake ncu on PATH, tests/ncu_fakes.py), the
profile read from the page it wrote, every refusal as the point's gap, and the profiled process itself on the CPU
backend (one line, exit 3)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpubench.execution import profiled
from gpubench.results.profile import Gap
from ncu_fakes import FIXTURES, fake_ncu, options, task  # noqa: F401 (fake_ncu: a fixture)

# --- the coordinator's side of one point --------------------------------------------------------------------------


def test_a_point_profiled_through_ncu_reads_the_log_it_wrote(fake_ncu):
    profile = profiled.profile_point(task(), "cuda", options(fake_ncu("set-nvjet-bf16-h100.txt"), tool="ncu x"))
    assert profile.taken and profile.kernel == "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"
    assert profile.metrics["sm_pct"] == 90.03 and profile.tool == "ncu x"


@pytest.mark.parametrize("name,gap", [("not-permitted.txt", Gap.NOT_PERMITTED),
                                      ("replay-failed-h100.txt", Gap.NO_REPLAY), ("unknown-error.txt", Gap.FAILED)])
def test_refusals_become_the_points_gap(fake_ncu, name, gap):
    profile = profiled.profile_point(task(), "cuda", options(fake_ncu(name, CODE="1")))
    assert profile.gap == gap and profile.reason


def test_a_call_that_cannot_run_says_why(fake_ncu):
    path = fake_ncu("unknown-error.txt", FIXTURE=os.devnull, CODE="3",
                    SAY=profiled.PREFIX + "the cpu backend has no GPU kernels to profile")
    profile = profiled.profile_point(task(), "cuda", options(path))
    assert profile.gap == Gap.FAILED and profile.reason == "the call could not run: the cpu backend has no GPU " \
                                                           "kernels to profile"


def test_ncu_that_does_not_finish_is_a_gap(fake_ncu):
    profile = profiled.profile_point(task(), "cuda", options(fake_ncu("not-permitted.txt", HANG="1"), timeout_s=1))
    assert profile.gap == Gap.FAILED and "did not finish within 1 s" in profile.reason


def test_the_profiled_process_refuses_the_cpu_backend_in_one_line(tmp_path):
    """The entry ncu starts, run for real on the CPU backend: exit 3 and one line, no traceback."""
    import pickle

    (tmp_path / "task.pickle").write_bytes(pickle.dumps(task()))
    root = Path(__file__).resolve().parent.parent
    done = subprocess.run([sys.executable, "-P", "-m", "gpubench.execution.profiled", str(tmp_path / "task.pickle"),
                           "cpu"], capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(root)})
    assert done.returncode == profiled.CANNOT_RUN
    assert done.stderr.strip() == profiled.PREFIX + "the cpu backend has no GPU kernels to profile"


def test_ncu_pages_are_kept_where_asked(fake_ncu, tmp_path, monkeypatch):
    monkeypatch.setenv(profiled.KEEP_LOGS, str(tmp_path / "logs"))
    profiled.profile_point(task(), "cuda", options(fake_ncu("set-nvjet-bf16-h100.txt")))
    kept = list((tmp_path / "logs").iterdir())
    assert len(kept) == 1 and kept[0].read_text() == (FIXTURES / "set-nvjet-bf16-h100.txt").read_text()
    assert "/" not in kept[0].name.replace(str(tmp_path), "")
