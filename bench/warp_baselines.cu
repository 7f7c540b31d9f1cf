// Hand-written CUDA warp primitives: the anchors for issue 4's SASS instruction counts.
// Built on the GPU machine with `nvcc -arch=sm_90 -cubin`, then `cuobjdump -sass`; each kernel
// does one warp-wide operation on values loaded from memory so the compiler cannot fold it.
#include <cstdint>

extern "C" __global__ void reduce_add_i32_redux(const int* in, int* out) {
    int v = in[threadIdx.x];
    out[threadIdx.x] = __reduce_add_sync(0xFFFFFFFFu, v);
}

extern "C" __global__ void reduce_add_i32_shfl(const int* in, int* out) {
    int v = in[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, off);
    out[threadIdx.x] = v;
}

extern "C" __global__ void reduce_add_f32_shfl(const float* in, float* out) {
    float v = in[threadIdx.x];
    for (int off = 16; off > 0; off >>= 1) v += __shfl_down_sync(0xFFFFFFFFu, v, off);
    out[threadIdx.x] = v;
}

extern "C" __global__ void reduce_all_add_i32_shfl(const int* in, int* out) {
    int v = in[threadIdx.x];
    for (int m = 1; m < 32; m <<= 1) v += __shfl_xor_sync(0xFFFFFFFFu, v, m);
    out[threadIdx.x] = v;
}

extern "C" __global__ void inclusive_add_i32_shfl(const int* in, int* out) {
    int v = in[threadIdx.x];
    int lane = threadIdx.x & 31;
    for (int off = 1; off < 32; off <<= 1) {
        int p = __shfl_up_sync(0xFFFFFFFFu, v, off);
        if (lane >= off) v += p;
    }
    out[threadIdx.x] = v;
}

extern "C" __global__ void bitonic_sort_i32_shfl(const int* keys, const int* vals, int* ko, int* vo) {
    int k = keys[threadIdx.x], v = vals[threadIdx.x];
    int lane = threadIdx.x & 31;
    for (int size = 2; size <= 32; size <<= 1) {
        for (int j = size >> 1; j > 0; j >>= 1) {
            int pk = __shfl_xor_sync(0xFFFFFFFFu, k, j);
            int pv = __shfl_xor_sync(0xFFFFFFFFu, v, j);
            bool low = (lane & j) == 0;
            bool up = ((lane & size) & 31) == 0;
            bool partner_less = pk < k || (pk == k && pv < v);
            bool take = (low == up) ? partner_less : (!partner_less && (pk != k || pv != v));
            if (take) { k = pk; v = pv; }
        }
    }
    ko[threadIdx.x] = k;
    vo[threadIdx.x] = v;
}
