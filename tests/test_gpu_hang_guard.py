"""tests/gpu_hang_guard.py: a gpu-marked test that hangs ends its process in its time, with its stack on the
terminal; a test without the marker, or one that ends in time, is left alone. Checked in a pytest of its own (the
guard ends the whole process), whose conftest takes the same fixture body as tests/conftest.py."""

import subprocess
import sys
import textwrap
import time
from pathlib import Path

TESTS = Path(__file__).resolve().parent

CONFTEST = f"""
import sys
import pytest
sys.path.insert(0, {str(TESTS)!r})
import gpu_hang_guard

def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: a GPU test")

@pytest.fixture(autouse=True)
def guard(request):
    yield from gpu_hang_guard.guard(request)
"""


def run_pytest(tmp_path, body: str, seconds: float):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_body.py").write_text(textwrap.dedent(body))
    env = {"GPUBENCH_GPU_TEST_SECONDS": str(seconds), "PATH": "/usr/bin:/bin"}
    start = time.monotonic()
    proc = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist", "-q",
                           str(tmp_path)], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    return proc, time.monotonic() - start


def test_a_hanging_gpu_test_ends_its_process_in_time_and_names_itself(tmp_path):
    proc, took = run_pytest(tmp_path, """
        import time, pytest

        @pytest.mark.gpu
        def test_waits_on_a_barrier_forever():
            time.sleep(30)
        """, seconds=1)
    assert proc.returncode != 0 and took < 20
    assert "Timeout" in proc.stderr and "test_waits_on_a_barrier_forever" in proc.stderr


def test_tests_that_end_in_time_or_carry_no_gpu_marker_are_left_alone(tmp_path):
    proc, _ = run_pytest(tmp_path, """
        import time, pytest

        @pytest.mark.gpu
        def test_quick_gpu_test():
            pass

        @pytest.mark.gpu
        def test_a_second_gpu_test_its_own_time_not_the_first_ones():
            time.sleep(0.8)

        def test_slow_cpu_test():
            time.sleep(1.5)
        """, seconds=1.2)  # 2.3 s in all: each gpu test is timed on its own, and the timer is off after it
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "3 passed" in proc.stdout
