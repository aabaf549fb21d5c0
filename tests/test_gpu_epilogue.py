"""On a GPU: cuda_src/include/epilogue.cuh's int8 chunks, which convert through the float adder and byte permutes
instead of the conversion unit, against the conversion unit's own instructions (cvt.rni.sat.s8.f32 out,
the int8-to-float conversion in) and NumPy's rule (rint, then clip). A probe kernel runs both ways on the same
values: every int8 byte in, and out, whole numbers, every quarter between -200 and 200 (each tie at .5 must go to
the even neighbour), the saturating ends and a random spread."""

import numpy as np
import pytest

from gpubench.specs import catalog

pytestmark = pytest.mark.gpu

EPILOGUE = catalog.kernels_dir() / "include" / "epilogue.cuh"
PROBE = """#include "%s"
// Thread i: chunk i of `bytes` through int8x16_load (and, for comparison, through the conversion unit), and the 16
// floats of chunk i through int8x16_store (and through cvt.rni.sat).
extern "C" __global__ void chunk_probe(const uint4* bytes, const float* values, int chunks, float* loaded,
                                       float* converted, uint4* stored, uint4* rounded)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= chunks) return;
    float z[16], v[16];
    int8x16_load(bytes[i], z);
    const int8_t* b = reinterpret_cast<const int8_t*>(bytes + i);
    for (int q = 0; q < 16; ++q) loaded[16 * i + q] = z[q], converted[16 * i + q] = static_cast<float>(b[q]);
    for (int q = 0; q < 16; ++q) v[q] = values[16 * i + q];
    stored[i] = int8x16_store(v);
    int8_t* r = reinterpret_cast<int8_t*>(rounded + i);
    for (int q = 0; q < 16; ++q) r[q] = epilogue_store<int8_t>(v[q]);
}
"""


def probe_values(rng) -> np.ndarray:
    quarters = np.arange(-800, 801, dtype=np.float32) / 4  # -200 .. 200: every tie, both signs
    ends = np.array([-1e9, -129.5, -128.5, -128.49, 126.5, 127.49, 127.5, 128.5, 1e9, -0.0, 0.0], np.float32)
    spread = rng.uniform(-300, 300, 4000).astype(np.float32)
    values = np.concatenate([quarters, ends, spread])
    return np.concatenate([values, np.zeros(-len(values) % 16, np.float32)])


def test_int8_chunks_convert_as_the_conversion_unit_does(cuda, tmp_path):
    cp, rng = cuda.cp, np.random.default_rng(11)
    source = tmp_path / "chunk_probe.cu"
    source.write_text(PROBE % EPILOGUE.as_posix())
    fn = cuda.function(source, "chunk_probe", {})
    values = probe_values(rng)
    chunks = len(values) // 16
    raw = np.concatenate([np.arange(-128, 128, dtype=np.int8), rng.integers(-128, 128, 16 * chunks - 256, np.int8)])
    bytes_, floats = cp.asarray(raw), cp.asarray(values)
    loaded, converted = cp.full(16 * chunks, np.nan, cp.float32), cp.full(16 * chunks, np.nan, cp.float32)
    stored, rounded = cp.full(16 * chunks, 99, cp.int8), cp.full(16 * chunks, 99, cp.int8)  # poisoned
    fn(*(np.uintp(a.data.ptr) for a in (bytes_, floats)), np.int32(chunks),
       *(np.uintp(a.data.ptr) for a in (loaded, converted, stored, rounded)), block=(128, 1, 1),
       grid=((chunks + 127) // 128, 1))
    cp.cuda.Device().synchronize()
    assert np.array_equal(loaded.get(), raw.astype(np.float32)), "every int8 byte in, exactly"
    assert np.array_equal(loaded.get(), converted.get())
    rule = np.clip(np.rint(values.astype(np.float64)), -128, 127).astype(np.int8)
    assert np.array_equal(rounded.get(), rule), "cvt.rni.sat: the rule the adder must meet"
    assert np.array_equal(stored.get(), rule), "rounded half to even and saturated, through the adder"
