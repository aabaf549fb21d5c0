// The lab's sliding-window convolution: NCHW float32 images, KCRS square filters, zero padding, any stride.
// One thread per output pixel, BLOCK_SIZE × BLOCK_SIZE threads over a tile of one output plane; grid z runs
// over (image, filter) pairs. Padding is handled by skipping taps outside the image.

#ifndef BLOCK_SIZE
#define BLOCK_SIZE 16
#endif

extern "C" __global__ void conv2d_sliding(const float *image, const float *filters, float *out, int batch,
                                          int channels, int height, int width, int n_filters, int fsize,
                                          int stride, int pad, int out_h, int out_w)
{
    int ox = blockIdx.x * BLOCK_SIZE + threadIdx.x;
    int oy = blockIdx.y * BLOCK_SIZE + threadIdx.y;
    int img = blockIdx.z / n_filters, f = blockIdx.z % n_filters;
    if (ox >= out_w || oy >= out_h || img >= batch) return;

    float sum = 0.0f;
    for (int ch = 0; ch < channels; ++ch) {
        const float *plane = image + ((size_t)img * channels + ch) * height * width;
        const float *taps = filters + ((size_t)f * channels + ch) * fsize * fsize;
        for (int r = 0; r < fsize; ++r) {
            int y = oy * stride - pad + r;
            if (y < 0 || y >= height) continue;
            for (int s = 0; s < fsize; ++s) {
                int x = ox * stride - pad + s;
                if (x >= 0 && x < width) sum += plane[y * width + x] * taps[r * fsize + s];
            }
        }
    }
    out[(((size_t)img * n_filters + f) * out_h + oy) * out_w + ox] = sum;
}
