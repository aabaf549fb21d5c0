// Winograd F(TILE×TILE, 3×3)'s one-dimensional transforms (Lavin and Gray, 2016), shared by conv/09_winograd.cu
// (fused) and conv/10_winograd_gemm.cu (transforms and products as separate kernels). Each 2-D transform applies
// one of them to every column of a tile, then to every row. TILE is the including kernel's -D parameter: 2 or 4.
#pragma once

#ifndef TILE
#define TILE 2
#endif
static_assert(TILE == 2 || TILE == 4, "F(2x2,3x3) and F(4x4,3x3) are implemented");

constexpr int ALPHA = TILE + 2;  // the input patch (and transformed tile) is ALPHA×ALPHA
constexpr int E = ALPHA * ALPHA;  // transform elements: one independent product (a GEMM over channels) each

__device__ __forceinline__ void filter_line(const float (&g)[3], float (&u)[ALPHA])  // G g
{
#if TILE == 2
    u[0] = g[0];
    u[1] = 0.5f * (g[0] + g[1] + g[2]);
    u[2] = 0.5f * (g[0] - g[1] + g[2]);
    u[3] = g[2];
#else
    u[0] = 0.25f * g[0];
    u[1] = -(g[0] + g[1] + g[2]) * (1.0f / 6);
    u[2] = -(g[0] - g[1] + g[2]) * (1.0f / 6);
    u[3] = g[0] * (1.0f / 24) + g[1] * (1.0f / 12) + g[2] * (1.0f / 6);
    u[4] = g[0] * (1.0f / 24) - g[1] * (1.0f / 12) + g[2] * (1.0f / 6);
    u[5] = g[2];
#endif
}

__device__ __forceinline__ void input_line(float (&d)[ALPHA])  // Bᵀ d, in place
{
#if TILE == 2
    const float v0 = d[0] - d[2], v1 = d[1] + d[2], v2 = d[2] - d[1], v3 = d[1] - d[3];
    d[0] = v0, d[1] = v1, d[2] = v2, d[3] = v3;
#else
    const float v0 = 4.0f * d[0] - 5.0f * d[2] + d[4];
    const float v1 = -4.0f * (d[1] + d[2]) + d[3] + d[4];
    const float v2 = 4.0f * (d[1] - d[2]) - d[3] + d[4];
    const float v3 = 2.0f * (d[3] - d[1]) - d[2] + d[4];
    const float v4 = 2.0f * (d[1] - d[3]) - d[2] + d[4];
    const float v5 = 4.0f * d[1] - 5.0f * d[3] + d[5];
    d[0] = v0, d[1] = v1, d[2] = v2, d[3] = v3, d[4] = v4, d[5] = v5;
#endif
}

__device__ __forceinline__ void output_line(const float (&m)[ALPHA], float (&o)[TILE])  // Aᵀ m
{
#if TILE == 2
    o[0] = m[0] + m[1] + m[2];
    o[1] = m[1] - m[2] - m[3];
#else
    const float s12 = m[1] + m[2], d12 = m[1] - m[2], s34 = m[3] + m[4], d34 = m[3] - m[4];
    o[0] = m[0] + s12 + s34;
    o[1] = d12 + 2.0f * d34;
    o[2] = s12 + 4.0f * s34;
    o[3] = d12 + 8.0f * d34 + m[5];
#endif
}

// U = G g Gᵀ for one filter and channel, g its 3×3 taps in row-major order.
__device__ __forceinline__ void filter_tile(const float* g, float (&u)[ALPHA][ALPHA])
{
    float t[ALPHA][3];  // G g: the three filter columns, each transformed
#pragma unroll
    for (int s = 0; s < 3; ++s) {
        const float col[3] = {g[s], g[3 + s], g[6 + s]};
        float out[ALPHA];
        filter_line(col, out);
#pragma unroll
        for (int i = 0; i < ALPHA; ++i) t[i][s] = out[i];
    }
#pragma unroll
    for (int i = 0; i < ALPHA; ++i) filter_line(t[i], u[i]);  // (G g) Gᵀ: each row
}
