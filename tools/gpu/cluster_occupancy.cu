// How many clusters of 1, 2, 4 and 8 blocks can be resident at once for a launch shaped like wgmma-tma's
// (384 threads, one block per SM, its shared memory), as the driver reports it (cudaOccupancyMaxActiveClusters):
// a persistent kernel's grid must not ask for more whole clusters than that, or the extra ones run after the
// others. A cluster's blocks share one GPC, so a 132-SM Hopper holds 66 of 2 but at most 32 of 4.
//   nvcc -arch=sm_90a -o /tmp/cluster_occupancy tools/gpu/cluster_occupancy.cu && /tmp/cluster_occupancy [SMEM]
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

__global__ void __launch_bounds__(384, 1) shaped_like_wgmma_tma(int* sink)
{
    extern __shared__ int smem[];
    if (sink) sink[blockIdx.x] = smem[threadIdx.x];
}

int main(int argc, char** argv)
{
    // wgmma-tma at BN = 256, 4 slots: 4·(128 + 256)·128 + 2·16384 + 1024 + 16·4 bytes
    const int smem = argc > 1 ? atoi(argv[1]) : 4 * (128 + 256) * 128 + 2 * 16384 + 1024 + 16 * 4;
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    cudaFuncSetAttribute(shaped_like_wgmma_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
    cudaFuncSetAttribute(shaped_like_wgmma_tma, cudaFuncAttributeNonPortableClusterSizeAllowed, 1);
    printf("%s, %d SMs, %d bytes of shared memory a block\n", prop.name, prop.multiProcessorCount, smem);
    for (int size : {1, 2, 4, 8}) {
        cudaLaunchConfig_t config = {};
        cudaLaunchAttribute attr;
        attr.id = cudaLaunchAttributeClusterDimension;
        attr.val.clusterDim.x = size, attr.val.clusterDim.y = 1, attr.val.clusterDim.z = 1;
        config.gridDim = dim3(size * (prop.multiProcessorCount / size));
        config.blockDim = dim3(384);
        config.dynamicSmemBytes = smem;
        config.attrs = &attr;
        config.numAttrs = 1;
        int clusters = -1;
        cudaError_t e = cudaOccupancyMaxActiveClusters(&clusters, shaped_like_wgmma_tma, &config);
        printf("clusters of %d: %d resident at once (%d blocks)%s%s\n", size, clusters, clusters * size,
               e == cudaSuccess ? "" : ": ", e == cudaSuccess ? "" : cudaGetErrorString(e));
    }
    return 0;
}
