#!/bin/bash
# The GPU runs behind docs/evidence/python-kernels.md, in one device call (run from the repo root; OUT set there):
#   1. gpubench built into a wheel and installed (non-editable) beside the carried wheels, the pytest plugin with it;
#   2. from a project outside the repository (the Triton and CuPy examples copied into /tmp): the examples verified
#      and timed beside cuBLAS, cuDNN and built-in kernels (one suite, one results file);
#   3. the same Triton kernels timed by gpubench's API at both paces (idle, sustained), by triton.testing.do_bench
#      and by events behind a long sleep, in one process (TIMER_DTYPES); then cuBLAS and a built-in kernel timed by
#      the CLI (the clock on PyCUDA's launches);
#   4. the gpu tests of Python variants and the clock (tests/test_gpu_python.py), from the checkout's tests on the
#      installed wheel (the new ones first, then the examples' verification; TESTS_K: the -k selections, `;`-separated);
#   5. a sweep with a Triton kernel that stores out of bounds and one that never ends;
#   6. the pytest plugin from the installed wheel in a user's test project.
# Steps to run: the arguments (sweep timers clock tests faults plugin), all of them by default.
set -u
STEPS=${*:-sweep timers clock tests faults plugin}
step() { [[ " $STEPS " == *" $1 "* ]]; }
REPO=$PWD
python3 -m pip wheel -q --no-deps --no-build-isolation -w /tmp/w . > /dev/null || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site ../../.devwheels/*.whl \
    /tmp/w/gpubench-*.whl || exit 1
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 GPUBENCH_CACHE=/tmp/gpubench-cache
{ nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit --format=csv
  python3 -c "import torch, triton, cupy; print('torch', torch.__version__, 'triton', triton.__version__, 'cupy', cupy.__version__)"
} | tee "$OUT/machine.txt"

P=/tmp/my-kernels && rm -rf $P && mkdir -p $P
cp examples/triton/*.py examples/cupy/*.py $P/
cat examples/triton/gpubench.toml examples/cupy/gpubench.toml > $P/gpubench.toml
SIZES=${SIZES:-"[1024, 2048, 4096]"}
DTYPES=${DTYPES:-'["fp32", "tf32"]'}
cat > $P/python-kernels.toml <<TOML
name = "python-kernels"
description = "Triton, PyTorch and CuPy kernels declared in a project, beside cuBLAS, cuDNN and built-in kernels"
[defaults]
reps = 30
[[sweep]]
name = "gemm"
op = "gemm"
variants = ["triton", "torch-matmul", "cupy-tiled", "tiled", "tf32-tma", "cublas"]
sizes = $SIZES
mnk = [[1000, 1500, 777]]
dtypes = $DTYPES
[[sweep]]
name = "conv"
op = "conv"
variants = ["triton-conv", "sliding", "cudnn"]
sizes = [1000, 4096]
strides = [1, 2]
block_sizes = [16]
dtypes = $DTYPES
[[sweep]]
name = "resnet"
op = "conv"
variants = ["triton-conv", "implicit", "cudnn"]
dtypes = $DTYPES
sizes = [56, 14]
strides = [1]
batch = 32
in_channels = 64
out_channels = 64
padding = 1
TOML
cd $P
python3 -c "import gpubench; print('gpubench', gpubench.__version__, 'from', gpubench.__file__)" | tee -a "$OUT/machine.txt"
if step sweep; then
  python3 -m gpubench list 2>&1 | grep -E "triton|torch-matmul|cupy|project" > "$OUT/python-kernels.log"
  python3 -m gpubench run python-kernels.toml -o "$OUT/python-kernels.json" >> "$OUT/python-kernels.log" 2>&1
  echo "exit code: $?" | tee -a "$OUT/python-kernels.log"
  python3 -m gpubench show "$OUT/python-kernels.json" --format markdown >> "$OUT/python-kernels.log" 2>&1
fi
step timers && timeout ${TIMERS_TIMEOUT:-300} python3 "$REPO/tools/gpu/api_vs_do_bench.py" $P \
    "${TIMER_DTYPES:-$(echo "$DTYPES" | tr -d '[]" ')}" 2>&1 | tee "$OUT/api-vs-do-bench.md"
# the clock on gpubench's own kernels (PyCUDA launches), to hold against the saved runs
step clock && { timeout 120 python3 -m gpubench gemm --variants cublas,tiled --sizes 2048,4096 -o "$OUT/clock-check.json" \
    2>&1 | tail -25; } > "$OUT/clock-check.log"
# the gpu tests of Python variants and of the clock: the new ones first, so that a call cut short still has them
step tests && (cd /tmp && IFS=';' && for k in ${TESTS_K:-not examples;examples}; do
    timeout ${TESTS_TIMEOUT:-300} python3 -m pytest -q -m gpu "$REPO/tests/test_gpu_python.py" -k "$k" -p no:cacheprovider \
    --rootdir "$REPO" -c "$REPO/pyproject.toml" 2>&1 | tee -a "$OUT/gpu-tests.txt" | tail -6; done)

# the planted faults of tests/test_gpu_python.py: a Triton store far out of bounds, a Triton loop that never ends
python3 -c "import sys; sys.path.insert(0, '$REPO/tests'); from test_gpu_python import FAULTS; print(FAULTS)" > $P/faults.py
for k in out_of_bounds forever; do printf '\n[[variant]]\nname = "%s"\nop = "gemm"\nbackend = "cuda"\nsource = "faults.py"\nkernel = "%s"\nargs = ["A", "B", "C", "M", "N", "K"]\noptions = { arrays = "torch" }\n' $k $k >> $P/gpubench.toml; done
if step faults; then
  python3 -m gpubench gemm --variants cublas,triton,out_of_bounds,cupy-tiled,forever --sizes 1024,2048 \
    --timeout 20 -o "$OUT/python-kernels-faults.json" > "$OUT/python-kernels-faults.log" 2>&1
  echo "exit code: $?" | tee -a "$OUT/python-kernels-faults.log"
  grep -E "FAIL|ERROR|TIMEOUT|worker|saved|exit code" "$OUT/python-kernels-faults.log"
fi

step plugin || exit 0
# The pytest plugin from the installed wheel (its pytest11 entry point), in a user's test project on the GPU.
T=/tmp/my-tests && rm -rf $T && mkdir -p $T && cp $P/matmul.py $T/
cat > $T/test_speed.py <<'PY'
from matmul import matmul


def test_triton_tf32(gpubench):
    m = gpubench(matmul, gpubench.gemm(4096, dtype="tf32"), arrays="torch", precision="precision")
    assert m.ok and m.reported["autotuned"]
PY
cd $T
{ python3 -m pytest --help | grep -E "gpubench-(save|compare)"
  python3 -m pytest -q -p no:cacheprovider --gpubench-save base.json; echo "exit code: $?"
  python3 -m pytest -q -p no:cacheprovider --gpubench-compare base.json; echo "exit code: $?"; } > "$OUT/pytest-plugin.log" 2>&1
cat "$OUT/pytest-plugin.log"
