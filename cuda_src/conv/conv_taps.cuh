// Visiting a filter's R×S taps in the direct-convolution kernels (conv/04_sliding_tiled.cu, conv/05_sliding_rows.cu).
#pragma once

// tap(r, s, weight) for every tap of one filter channel (wc points at its R·S weights). With R_ and S_ known
// at compile time (> 0) the loops unroll completely: the weights sit in registers and every window offset
// is a constant, which is what lets the compiler reuse one loaded input value for all the outputs it feeds.
// With R_ = S_ = 0 the run-time sizes r_n × s_n are looped over instead.
template <int R_, int S_, class Tap>
__device__ __forceinline__ void for_each_tap(const float* __restrict__ wc, int r_n, int s_n, Tap tap)
{
    if constexpr (R_ > 0) {
#pragma unroll
        for (int r = 0; r < R_; ++r)
#pragma unroll
            for (int s = 0; s < S_; ++s) tap(r, s, __ldg(wc + r * S_ + s));
    } else {
        for (int r = 0; r < r_n; ++r)
            for (int s = 0; s < s_n; ++s) tap(r, s, __ldg(wc + r * s_n + s));
    }
}
