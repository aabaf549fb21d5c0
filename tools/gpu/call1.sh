python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl || exit 1
for v in 13.4.92 13.0.85; do python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/c$v .cuptiwheels/cupti_python*.whl .cuptiwheels/pyelftools*.whl .cuptiwheels/cuda_bindings*.whl .cuptiwheels/cuda_pathfinder*.whl .cuptiwheels/nvidia_cuda_cupti-$v*.whl; done
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/csys .cuptiwheels/cupti_python*.whl .cuptiwheels/pyelftools*.whl .cuptiwheels/cuda_bindings*.whl .cuptiwheels/cuda_pathfinder*.whl
{
python3 -c "import cupy, sys; print('cupy', cupy.__version__, sys.version)"; pip list 2>/dev/null | grep -i -E "cuda|cupti|nvidia" 
ls /usr/local/cuda/extras/CUPTI/lib64 2>&1 | head; ls -la /usr/local/cuda 2>&1 | head -2
for v in 13.4.92 13.0.85; do echo "=== cupti lib $v (raw)"; PYTHONPATH=/tmp/c$v:/tmp/site:$PWD timeout 60 python3 tools/gpu/cupti_probe.py 2>&1 | tail -25
 echo "=== cupti lib $v (gpubench)"; PYTHONPATH=/tmp/c$v:/tmp/site:$PWD timeout 60 python3 tools/gpu/cupti_probe.py --gpubench 2>&1 | tail -12; done
echo "=== system libcupti"; PYTHONPATH=/tmp/csys:/tmp/site:$PWD LD_LIBRARY_PATH=/usr/local/cuda/extras/CUPTI/lib64:$LD_LIBRARY_PATH timeout 60 python3 tools/gpu/cupti_probe.py 2>&1 | tail -25
echo "=== ncu names"; ncu --version | tail -1
ncu --query-metrics 2>/dev/null | grep -i -E "gmma|pipe_tensor|launch__" | head -30
ncu --print-units base --metrics launch__registers_per_thread,launch__block_size,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_tensor_op_gmma.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active python3 -c "import cupy as cp; x=cp.ones(1000); (x*2).sum(); cp.cuda.Device().synchronize()" 2>&1 | tail -20
} > $OUT/probe.log 2>&1
echo probes done; tail -5 $OUT/probe.log
timeout 420 bash tools/gpu/stability.sh aa; echo "stability rc $?"
ls $OUT
