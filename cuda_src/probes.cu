// Kernels that measure the machine rather than a problem: what the timer needs, and the roofline's ceilings.

// Only waits. Queued before a timed call (or a queued batch of them), it keeps the GPU busy while the host
// enqueues the events and the launches, so every measured interval holds the GPU's work alone and never the
// host's launch latency. (A flush of L2 gives the same cover for a single call when it runs.)
extern "C" __global__ void spin(long long nanoseconds)
{
    long long start;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    for (long long now = start; now - start < nanoseconds;) {
        __nanosleep(1000);
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    }
}

// How far a buffer's lines are from the SM that reads them: one thread follows `lines` loads `step` bytes apart,
// each address depending on the value before it (times a `zero` the compiler cannot see), so no load starts
// before the last returns. Timed after a flush, every load is a miss, and on Hopper a tiny buffer whose lines sit
// in the far L2 partition takes ~0.1 µs longer a miss (placement.py): a 7 µs convolution moves by 5-15%.
extern "C" __global__ void line_chain(const unsigned char* buffer, int lines, int step, int zero, int* sink)
{
    long long offset = 0;
    int sum = 0;
    for (int i = 0; i < lines; ++i) {
        int value = buffer[offset];
        sum += value;
        offset = (long long)(i + 1) * step + (long long)value * zero;
    }
    *sink = sum;
}

// Does nothing: timed like any point, it is the floor under every measurement (launch, events, scheduling).
extern "C" __global__ void empty() {}

// FP32 FFMA peak: FFMA_CHAINS independent accumulators per thread, so the FMA pipes never wait on a result.
// Every thread does 2 * FFMA_CHAINS * iterations FLOPs; the result is stored (where nobody looks) so that the
// compiler keeps the work.
#ifndef FFMA_CHAINS
#define FFMA_CHAINS 8
#endif
extern "C" __global__ void __launch_bounds__(256) ffma_peak(float* sink, int iterations, float a, float b)
{
    float acc[FFMA_CHAINS];
#pragma unroll
    for (int i = 0; i < FFMA_CHAINS; ++i) acc[i] = threadIdx.x + i;
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int r = 0; r < 16; ++r) {
#pragma unroll
            for (int i = 0; i < FFMA_CHAINS; ++i) acc[i] = fmaf(acc[i], a, b);
        }
    }
    float total = 0.0f;
#pragma unroll
    for (int i = 0; i < FFMA_CHAINS; ++i) total += acc[i];
    if (total == 1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = total;  // never true for these a, b
}

// L2 bandwidth: every block reads the same small buffer (it stays in L2 after the first pass) as 16-byte
// vectors, `passes` times; one value per thread is stored so the loads are kept.
extern "C" __global__ void __launch_bounds__(256) l2_read(const float4* buffer, long long count, int passes,
                                                          float* sink)
{
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    for (int p = 0; p < passes; ++p) {
        for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < count;
             i += (long long)gridDim.x * blockDim.x) {
            float4 v = __ldcg(buffer + i);  // cache-global: served by L2, not held in L1
            acc.x += v.x; acc.y += v.y; acc.z += v.z; acc.w += v.w;
        }
    }
    if (acc.x + acc.y + acc.z + acc.w == 1.2345f) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc.x;
}
