// The anchor of `qd bench`: NVIDIA's CUB on the same sizes, dtypes and inputs, timed the same way.
//
//   nvcc -O3 -arch=sm_90 -o cub_bench bench/cub_bench.cu
//   ./cub_bench reduce|scan|copy i32|f32 LOG2N REPS SEED
//
// reduce: cub::DeviceReduce::Sum; scan: cub::DeviceScan::InclusiveSum (i32); copy: cudaMemcpyAsync
// device to device (the bandwidth ceiling; its bytes count the read and the write). Each timed launch
// is the library call between two CUDA events on the default stream, after 3 untimed calls; the
// temporary storage is allocated once, before. The inputs are the ones `qd bench` draws for the same
// seed (the same splitmix64 stream); the result is checked on the host like `qd bench` does (i32
// exactly, with wrapping arithmetic; f32 within the bound of `qd_cli::bench::f32_sum_tolerance`).
// Prints a `# device` line, then `bench ALGO DTYPE n=2^N device=cub median_ms=... min_ms=...
// gbps=... check=ok|fail` (device=memcpy for copy). Exit status 1 on a CUDA error or a wrong result.
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t err_ = (call);                                                               \
        if (err_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "cub_bench: %s failed: %s (%s:%d)\n", #call,                    \
                         cudaGetErrorString(err_), __FILE__, __LINE__);                          \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

// The conformance suite's Rng (crates/qd-cli/src/conformance/rng.rs): splitmix64.
struct Rng {
    uint64_t s;
    explicit Rng(uint64_t seed) : s(seed ^ 0x9E3779B97F4A7C15ull) {}
    uint64_t next() {
        s += 0x9E3779B97F4A7C15ull;
        uint64_t z = s;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
};

static const int WARMUP = 3;

struct Timer {
    cudaEvent_t start, stop;
    Timer() {
        CHECK(cudaEventCreate(&start));
        CHECK(cudaEventCreate(&stop));
    }
    ~Timer() {
        cudaEventDestroy(start);
        cudaEventDestroy(stop);
    }
    // Times `f` (which enqueues work on the default stream) `reps` times after WARMUP calls.
    template <class F>
    std::vector<double> run(int reps, F f) {
        for (int i = 0; i < WARMUP; i++) f();
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        std::vector<double> ms;
        for (int i = 0; i < reps; i++) {
            CHECK(cudaEventRecord(start, 0));
            f();
            CHECK(cudaEventRecord(stop, 0));
            CHECK(cudaEventSynchronize(stop));
            CHECK(cudaGetLastError());
            float t = 0;
            CHECK(cudaEventElapsedTime(&t, start, stop));
            ms.push_back(t);
        }
        return ms;
    }
};

static void report(const char* algo, const char* dtype, int log2n, const char* device, std::vector<double> ms,
                   double bytes, bool ok) {
    std::sort(ms.begin(), ms.end());
    size_t l = ms.size();
    double median = l % 2 ? ms[l / 2] : (ms[l / 2 - 1] + ms[l / 2]) / 2;
    std::printf("bench %s %s n=2^%d device=%s median_ms=%.4f min_ms=%.4f gbps=%.1f check=%s\n", algo, dtype, log2n,
                device, median, ms[0], bytes / (median * 1e-3) / 1e9, ok ? "ok" : "fail");
}

static void describe() {
    int dev = 0, driver = 0, runtime = 0;
    CHECK(cudaGetDevice(&dev));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, dev));
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    std::printf("# device %s, sm_%d%d, %d SMs, L2 %d MiB, driver CUDA %d.%d, runtime %d.%d, CUB %d.%d.%d\n", p.name,
                p.major, p.minor, p.multiProcessorCount, p.l2CacheSize >> 20, driver / 1000, driver % 1000 / 10,
                runtime / 1000, runtime % 1000 / 10, CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
}

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: cub_bench reduce|scan|copy i32|f32 LOG2N REPS SEED\n");
        return 2;
    }
    std::string algo = argv[1], dtype = argv[2];
    int log2n = std::atoi(argv[3]), reps = std::atoi(argv[4]);
    uint64_t seed = std::strtoull(argv[5], nullptr, 10);
    bool f32 = dtype == "f32";
    if ((algo != "reduce" && algo != "scan" && algo != "copy") || (dtype != "i32" && !f32) ||
        (f32 && algo != "reduce") || log2n < 0 || log2n > 30 || reps < 1) {
        std::fprintf(stderr, "cub_bench: bad arguments (f32 is for reduce only; LOG2N in 0..30; REPS >= 1)\n");
        return 2;
    }
    describe();
    size_t n = size_t(1) << log2n;
    Rng rng(seed);
    std::vector<uint32_t> bits(n);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng.next();
        bits[i] = f32 ? 0 : uint32_t(r >> 32);
        if (f32) {
            float x = float(r >> 40) / float(1u << 24);
            std::memcpy(&bits[i], &x, 4);
        }
    }
    void* d_in = nullptr;
    void* d_out = nullptr;
    size_t out_elems = algo == "reduce" ? 1 : n;
    CHECK(cudaMalloc(&d_in, n * 4));
    CHECK(cudaMalloc(&d_out, out_elems * 4));
    CHECK(cudaMemcpy(d_in, bits.data(), n * 4, cudaMemcpyHostToDevice));
    CHECK(cudaMemset(d_out, 0x5A, out_elems * 4));
    void* temp = nullptr;
    size_t temp_bytes = 0;
    Timer timer;
    bool ok = true;
    if (algo == "reduce" && !f32) {
        int* in = static_cast<int*>(d_in);
        int* out = static_cast<int*>(d_out);
        CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, int(n)));
        CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 1)));
        auto ms = timer.run(reps, [&] { cub::DeviceReduce::Sum(temp, temp_bytes, in, out, int(n)); });
        uint32_t want = 0, got = 0;
        for (size_t i = 0; i < n; i++) want += bits[i];
        CHECK(cudaMemcpy(&got, d_out, 4, cudaMemcpyDeviceToHost));
        ok = got == want;
        if (!ok) std::fprintf(stderr, "cub_bench: sum = %d, expected %d\n", int(got), int(want));
        report("reduce", "i32", log2n, "cub", ms, double(n) * 4, ok);
    } else if (algo == "reduce") {
        float* in = static_cast<float*>(d_in);
        float* out = static_cast<float*>(d_out);
        CHECK(cub::DeviceReduce::Sum(temp, temp_bytes, in, out, int(n)));
        CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 1)));
        auto ms = timer.run(reps, [&] { cub::DeviceReduce::Sum(temp, temp_bytes, in, out, int(n)); });
        double exact = 0;
        for (size_t i = 0; i < n; i++) {
            float x;
            std::memcpy(&x, &bits[i], 4);
            exact += x;
        }
        float got = 0;
        CHECK(cudaMemcpy(&got, d_out, 4, cudaMemcpyDeviceToHost));
        // The bound of qd_cli::bench::f32_sum_tolerance: (ceil(n / 2^15) + 64) * 2^-24 * sum|x|.
        double tol = (double((n + (1u << 15) - 1) >> 15) + 64.0) * std::ldexp(1.0, -24) * std::fabs(exact);
        ok = std::fabs(double(got) - exact) <= tol;
        if (!ok) std::fprintf(stderr, "cub_bench: sum = %.9g, exact %.9g, bound %.3g\n", got, exact, tol);
        report("reduce", "f32", log2n, "cub", ms, double(n) * 4, ok);
    } else if (algo == "scan") {
        int* in = static_cast<int*>(d_in);
        int* out = static_cast<int*>(d_out);
        CHECK(cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, int(n)));
        CHECK(cudaMalloc(&temp, std::max<size_t>(temp_bytes, 1)));
        auto ms = timer.run(reps, [&] { cub::DeviceScan::InclusiveSum(temp, temp_bytes, in, out, int(n)); });
        std::vector<uint32_t> got(n);
        CHECK(cudaMemcpy(got.data(), d_out, n * 4, cudaMemcpyDeviceToHost));
        uint32_t acc = 0;
        for (size_t i = 0; i < n && ok; i++) {
            acc += bits[i];
            if (got[i] != acc) {
                std::fprintf(stderr, "cub_bench: out[%zu] = %d, expected %d\n", i, int(got[i]), int(acc));
                ok = false;
            }
        }
        report("scan", "i32", log2n, "cub", ms, double(n) * 8, ok);
    } else {
        auto ms = timer.run(reps, [&] { cudaMemcpyAsync(d_out, d_in, n * 4, cudaMemcpyDeviceToDevice, 0); });
        std::vector<uint32_t> got(n);
        CHECK(cudaMemcpy(got.data(), d_out, n * 4, cudaMemcpyDeviceToHost));
        ok = got == bits;
        if (!ok) std::fprintf(stderr, "cub_bench: the copy differs from its source\n");
        report("copy", "i32", log2n, "memcpy", ms, double(n) * 8, ok);
    }
    cudaFree(temp);
    cudaFree(d_in);
    cudaFree(d_out);
    return ok ? 0 : 1;
}
