#!/bin/bash
# A bit-for-bit gpu test run on a copy of this tree whose kernel a sed expression broke on purpose (e.g. a slot's k
# steps issued last to first: the same products summed in another order, within the tolerance but not bit for bit):
# the test must fail. Prints the kernel's diff and pytest's last lines (wgmma_carry.sh check, tc_conv.sh carry).
#   bash tools/gpu/broken_kernel.sh cuda_src/gemm/10_wgmma_tma.cu 'SED EXPRESSION' PYTEST_K "what was broken"
# Run from the tree's root; the device call's wheels are read from /tmp/site, as the calls install them.
set -u
kernel=$1 expression=$2 tests=$3 what=$4
rm -rf /tmp/broken && mkdir /tmp/broken && tar cf - --exclude=./results --exclude=./docs . | tar xf - -C /tmp/broken
sed -i "$expression" "/tmp/broken/$kernel"
echo "# $tests on $(basename "$kernel") with $what (sed in a copy):"
diff "$kernel" "/tmp/broken/$kernel"
cd /tmp/broken && PYTHONPATH=/tmp/site:/tmp/broken timeout "${BROKEN_SECONDS:-150}" python3 -m pytest \
  tests/test_gpu.py -k "$tests" -q -p no:cacheprovider 2>&1 | grep -v "^  \|^$" | tail -25
