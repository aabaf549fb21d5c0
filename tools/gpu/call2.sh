python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .devwheels/*.whl || exit 1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/c130 .cuptiwheels/cupti_python*.whl .cuptiwheels/pyelftools*.whl .cuptiwheels/cuda_bindings*.whl .cuptiwheels/cuda_pathfinder*.whl .cuptiwheels/nvidia_cuda_cupti-13.0.85*.whl
PYTHONPATH=/tmp/c130:/tmp/site:$PWD timeout 200 python3 tools/gpu/cupti_probe.py > $OUT/cupti.log 2>&1
export PYTHONPATH=/tmp/site:$PWD
S=$SECONDS; timeout 290 bash tools/gpu/stability.sh aa; echo "aa rc $? in $((SECONDS-S)) s"
S=$SECONDS; timeout 260 bash tools/gpu/profile_spread.sh > /dev/null 2>&1; echo "spread rc $? in $((SECONDS-S)) s"
ls $OUT
