"""One Winograd configuration on one ResNet layer at N = 32, launched back to back: the program ncu profiles
(tools/gpu/winograd.sh ncu), outside gpubench's harness (no wait kernels, no flush; outputs not verified here).

    CONFIG="BM=64,BN=128,BK=32,WM=32,WN=64,STAGES=3,MIN_BLOCKS=2,SPLIT=2" python3 tools/gpu/winograd_probe.py 7x512
"""

import os
import sys

from gpubench.specs import catalog
from gpubench.backends.cuda import CudaBackend
from gpubench.ops.conv import conv_shape


def main(layer: str):
    size, channels = (int(t) for t in layer.split("x"))
    shape = conv_shape(size, 1, batch=32, in_channels=channels, out_channels=channels, padding=1)
    v = catalog.Catalog(catalog.builtin()).get("conv", "cuda", os.environ.get("VARIANT", "winograd-tf32x3"))
    config = os.environ.get("CONFIG", "BM=64,BN=128,BK=32,WM=32,WN=64,STAGES=3,MIN_BLOCKS=2,SPLIT=2")
    params = dict((kv.split("=")[0], int(kv.split("=")[1])) for kv in config.split(","))
    backend = CudaBackend()
    prepared = backend.prepare(v, v.space.config(params), shape, backend.inputs(shape, seed=1))
    for _ in range(int(os.environ.get("REPS", 3))):
        prepared.run()
    prepared.release()


if __name__ == "__main__":
    main(sys.argv[1])
