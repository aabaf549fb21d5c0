"""On a GPU: a run made while another process computes on the same GPU names that process in its record (settings
`gpu_neighbours`, gpubench/execution/neighbours.py), at its start and its end, leaves out its own worker processes,
and says so on stderr. Needs a GPU with CuPy; this test's own process opens no CUDA context."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from gpubench import results
from gpubench.measure import telemetry
from gpubench.results import neighbours

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parent.parent
BUSY = """
import os, sys, time
import cupy as cp

a = cp.random.random((4096, 4096), dtype=cp.float32)
c = a @ a
cp.cuda.Stream.null.synchronize()
print("busy", flush=True)
end = time.monotonic() + float(sys.argv[1])
parent = int(sys.argv[2])
while time.monotonic() < end and os.getppid() == parent:  # ends with the test's process (the hang guard's exit too)
    cp.matmul(a, a, out=c)
    cp.cuda.Stream.null.synchronize()
"""


@pytest.fixture
def busy():
    """A process multiplying 4096² matrices on the GPU back to back until it is ended, its parent ends or 10 minutes
    pass."""
    if not telemetry.device_count():
        pytest.skip("no NVIDIA GPU that NVML sees here")
    process = subprocess.Popen([sys.executable, "-c", BUSY, "600", str(os.getpid())], stdout=subprocess.PIPE,
                               text=True)
    try:
        if process.stdout.readline().strip() != "busy":
            pytest.fail(f"the busy process did not start (exit {process.wait()})")
        yield process
    finally:
        process.kill()
        process.wait()


def test_a_run_beside_a_busy_process_names_it_and_not_its_own_workers(busy, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "gpubench", "gemm", "--variants", "cublas", "--sizes", "256,512",
                           "--warmup", "1", "--reps", "5", "-o", "r.json"], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=200)
    assert busy.poll() is None, "the busy process ended before the run did"
    assert done.returncode == 0, done.stderr
    record = neighbours.of(results.load(tmp_path / "r.json").settings)
    assert record is not None, "a CUDA run keeps the record"
    if not record.checked:
        pytest.skip(f"this machine could not be checked: {record.unchecked}")
    for moment in (record.start, record.end):
        pids = {n.pid for n in moment}
        assert busy.pid in pids, (busy.pid, record)
        assert not [n for n in moment if "gpubench.execution.child" in (n.name or "")], record  # the run's own
    seen = next(n for n in record.start if n.pid == busy.pid)
    assert seen.used_mib is None or seen.used_mib > 0
    err = " ".join(done.stderr.split())
    assert "computing on this GPU during the run" in err and str(busy.pid) in err, done.stderr
    print(neighbours.warning(record))


def test_an_ab_beside_a_busy_process_names_it_in_its_json(busy, tmp_path):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-m", "gpubench", "ab", "cublas", "cublas", "--size", "512", "--rounds",
                           "4", "--reps", "5", "--format", "json"], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=200)
    assert busy.poll() is None, "the busy process ended before the A/B did"
    # any verdict (an A/A beside a busy process may even read "slower"), but an answer, not a usage error or a crash
    assert done.returncode in (0, 1, 3), done.stderr
    record = neighbours.GpuNeighbours.from_dict(json.loads(done.stdout)["gpu_neighbours"])
    if not record.checked:
        pytest.skip(f"this machine could not be checked: {record.unchecked}")
    assert busy.pid in {n.pid for n in record.start} | {n.pid for n in record.end}, record
