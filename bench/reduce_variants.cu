// Which load form a device-wide i32 sum needs to match CUB's DeviceReduce::Sum on a large input:
// hand-written kernels of qd's reduce shape (256 threads, 16 items per thread and tile pass, a
// grid of one wave whose blocks take equal numbers of passes) that differ only in how they load,
// timed beside CUB in the same process.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o reduce_variants bench/reduce_variants.cu
//   ./reduce_variants LOG2N REPS
//
// Variants (one line each: median ms over REPS launches after warm-up, CUDA events, GB/s read,
// ratio of CUB's time over the variant's, and the sum checked against the host's):
//   scalar      four-byte loads, striped (thread t loads tile + t + j * 256), tiles strided over
//               the grid (block b takes tiles b, b + grid, ...): qd's kernel today
//   scalar_nc   the same through the read-only path (ld.global.nc)
//   scalar_plain the same with plain `ld.global` (LDG.E, not LDG.E.CONSTANT: what a kernel whose
//               input pointer is not known read-only gets)
//   vec2/vec4   eight- and sixteen-byte loads (int2/int4 of consecutive elements), striped
//   vec4_nc     sixteen-byte loads through the read-only path (CUB's LDG.E.128.CONSTANT)
//   *_blocked   block b takes the contiguous tiles [b * per, (b + 1) * per) instead, as CUB's
//               even-share grid
#include <cub/cub.cuh>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e = (x);                                                              \
        if (e != cudaSuccess) {                                                           \
            fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__, cudaGetErrorString(e));    \
            exit(1);                                                                      \
        }                                                                                 \
    } while (0)

constexpr int BLOCK = 256;
constexpr int ITEMS = 16;
constexpr int TILE = BLOCK * ITEMS;

__device__ __forceinline__ int ld_plain(const int* p) {
    int v;
    asm volatile("ld.global.u32 %0, [%1];" : "=r"(v) : "l"(p));
    return v;
}

// VEC 0: scalar through plain ld.global.
template <int VEC, bool NC>
__device__ __forceinline__ int load_sum(const int* __restrict__ in, long tile, int t) {
    int s = 0;
    if constexpr (VEC == 0) {
        int v[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; j++) v[j] = ld_plain(in + tile * TILE + t + j * BLOCK);
#pragma unroll
        for (int j = 0; j < ITEMS; j++) s += v[j];
    } else if constexpr (VEC == 1) {
        int v[ITEMS];
#pragma unroll
        for (int j = 0; j < ITEMS; j++) {
            const int* p = in + tile * TILE + t + j * BLOCK;
            v[j] = NC ? __ldg(p) : *p;
        }
#pragma unroll
        for (int j = 0; j < ITEMS; j++) s += v[j];
    } else if constexpr (VEC == 2) {
        int2 v[ITEMS / 2];
        const int2* base = reinterpret_cast<const int2*>(in + tile * TILE);
#pragma unroll
        for (int j = 0; j < ITEMS / 2; j++) v[j] = NC ? __ldg(base + t + j * BLOCK) : base[t + j * BLOCK];
#pragma unroll
        for (int j = 0; j < ITEMS / 2; j++) s += v[j].x + v[j].y;
    } else {
        int4 v[ITEMS / 4];
        const int4* base = reinterpret_cast<const int4*>(in + tile * TILE);
#pragma unroll
        for (int j = 0; j < ITEMS / 4; j++) v[j] = NC ? __ldg(base + t + j * BLOCK) : base[t + j * BLOCK];
#pragma unroll
        for (int j = 0; j < ITEMS / 4; j++) s += v[j].x + v[j].y + v[j].z + v[j].w;
    }
    return s;
}

// Sum of the full tiles (the bench's n is a multiple of TILE), one atomic per block.
template <int VEC, bool NC, bool BLOCKED>
__global__ void __launch_bounds__(BLOCK) sum_kernel(const int* __restrict__ in, long tiles, int* out) {
    int t = threadIdx.x;
    int acc = 0;
    if (BLOCKED) {
        long per = (tiles + gridDim.x - 1) / gridDim.x;
        long lo = blockIdx.x * per, hi = min(tiles, lo + per);
        for (long tile = lo; tile < hi; tile++) acc += load_sum<VEC, NC>(in, tile, t);
    } else {
        for (long tile = blockIdx.x; tile < tiles; tile += gridDim.x) acc += load_sum<VEC, NC>(in, tile, t);
    }
    using BlockReduce = cub::BlockReduce<int, BLOCK, cub::BLOCK_REDUCE_WARP_REDUCTIONS>;
    __shared__ typename BlockReduce::TempStorage tmp;
    int total = BlockReduce(tmp).Sum(acc);
    if (t == 0) atomicAdd(out, total);
}

static float median(std::vector<float> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename Launch>
static float time_ms(Launch launch, int* d_out, int reps, int* got) {
    cudaEvent_t a, b;
    CHECK(cudaEventCreate(&a));
    CHECK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < reps + 3; r++) {
        CHECK(cudaMemset(d_out, 0, sizeof(int)));
        CHECK(cudaEventRecord(a));
        launch();
        CHECK(cudaEventRecord(b));
        CHECK(cudaEventSynchronize(b));
        float t;
        CHECK(cudaEventElapsedTime(&t, a, b));
        if (r >= 3) ms.push_back(t);
    }
    CHECK(cudaMemcpy(got, d_out, sizeof(int), cudaMemcpyDeviceToHost));
    return median(ms);
}

int main(int argc, char** argv) {
    int log2n = argc > 1 ? atoi(argv[1]) : 28;
    int reps = argc > 2 ? atoi(argv[2]) : 20;
    long n = 1L << log2n;
    long tiles = n / TILE;
    std::vector<int> h(n);
    std::mt19937 rng(20261128);
    for (auto& x : h) x = int(rng() % 2001) - 1000;
    long long want = 0;
    for (int x : h) want += x;
    int *d_in, *d_out;
    CHECK(cudaMalloc(&d_in, n * sizeof(int)));
    CHECK(cudaMalloc(&d_out, sizeof(int)));
    CHECK(cudaMemcpy(d_in, h.data(), n * sizeof(int), cudaMemcpyHostToDevice));
    int sms;
    CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));

    size_t tmp_bytes = 0;
    CHECK(cub::DeviceReduce::Sum(nullptr, tmp_bytes, d_in, d_out, n));
    void* d_tmp;
    CHECK(cudaMalloc(&d_tmp, tmp_bytes));
    int got;
    float cub_ms = time_ms([&] { cub::DeviceReduce::Sum(d_tmp, tmp_bytes, d_in, d_out, n); }, d_out, reps, &got);
    double gb = n * 4.0 / 1e9;
    printf("log2n=%d n=%ld\n", log2n, n);
    printf("%-20s grid=%-6s %.4f ms %7.1f GB/s  cub/this=%.3f  check=%s\n", "cub", "-", cub_ms, gb / cub_ms * 1e3,
           1.0, (int)want == got ? "ok" : "BAD");

    auto run = [&](const char* name, auto kernel) {
        int per_sm;
        CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, BLOCK, 0));
        long resident = (long)per_sm * sms;
        for (int over : {1, 2}) {
            // qd's grid: at most `resident * over` blocks, each given the same number of passes.
            long per_block = (tiles + resident * over - 1) / (resident * over);
            int grid = (int)((tiles + per_block - 1) / per_block);
            int got;
            float ms = time_ms([&] { kernel<<<grid, BLOCK>>>(d_in, tiles, d_out); }, d_out, reps, &got);
            CHECK(cudaGetLastError());
            printf("%-20s grid=%-6d %.4f ms %7.1f GB/s  cub/this=%.3f  check=%s\n", name, grid, ms, gb / ms * 1e3,
                   cub_ms / ms, (int)want == got ? "ok" : "BAD");
        }
    };
    run("scalar", sum_kernel<1, false, false>);
    run("scalar_nc", sum_kernel<1, true, false>);
    run("scalar_plain", sum_kernel<0, false, false>);
    run("vec2", sum_kernel<2, false, false>);
    run("vec4", sum_kernel<4, false, false>);
    run("vec4_nc", sum_kernel<4, true, false>);
    run("scalar_blocked", sum_kernel<1, false, true>);
    run("vec4_nc_blocked", sum_kernel<4, true, true>);
    // CUB again, so drift over the run shows.
    cub_ms = time_ms([&] { cub::DeviceReduce::Sum(d_tmp, tmp_bytes, d_in, d_out, n); }, d_out, reps, &got);
    printf("%-20s grid=%-6s %.4f ms %7.1f GB/s  cub/this=%.3f  check=%s\n", "cub (again)", "-", cub_ms,
           gb / cub_ms * 1e3, 1.0, (int)want == got ? "ok" : "BAD");
    return 0;
}
