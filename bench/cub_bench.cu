// The anchor of `qd bench`: NVIDIA's CUB on the same algorithms, dtypes, sizes and inputs, timed the
// same way.
//
//   nvcc -O3 -std=c++17 -arch=sm_90 -o cub_bench bench/cub_bench.cu   (every dtype; add
//   -DONE_DTYPE -DDTYPE_I32 for one, which compiles several times faster)
//   ./cub_bench ALGO DTYPE LOG2N REPS SEED [--json]
//
// ALGO: reduce (DeviceReduce::Sum), scan (DeviceScan::InclusiveSum), exclusive-scan (ExclusiveSum),
// select (DeviceSelect::Flagged, u8 flags), reduce-by-key (DeviceReduce::ReduceByKey, u32 keys, sum),
// histogram (DeviceHistogram::HistogramEven, 256 bins) or copy (cudaMemcpyAsync device to device, the
// bandwidth ceiling). DTYPE: i32 u32 i64 u64 f32 f64. Each timed launch is the library call between
// two CUDA events on the default stream, after 3 untimed calls; temporary storage is allocated once,
// before. The inputs are the ones `qd bench` draws for the same seed (crates/qd-cli/src/bench.rs:
// the same splitmix64 stream and formulas); results are checked on the host as `qd bench` checks
// them. Prints a `# device` line, then `bench ALGO DTYPE n=2^N device=cub median_ms=... min_ms=...
// gbps=... check=ok|fail` (device=memcpy for copy), or with --json the record `qd plot` reads.
// Exit status 1 on a CUDA error or a wrong result.
#include <cub/cub.cuh>
#include <cuda/std/functional>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>
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

// bench.rs's BenchType: draw, sample, small, and the value on the 2^-24 grid (floats) or itself.
template <class T>
T draw(uint64_t r) {
    if constexpr (std::is_floating_point_v<T>) return T(r >> 40) / T(1u << 24);
    else if constexpr (sizeof(T) == 4) return T(r >> 32);
    else return T(r);
}
template <class T>
T sample(uint64_t r) {
    if constexpr (std::is_floating_point_v<T>) return draw<T>(r);
    else return T(r >> 48);
}
template <class T>
T small(uint64_t r) { return T(r >> 61); }
// a + b as the device computes it (integers wrap; C++ signed overflow would be undefined).
template <class T>
T add(T a, T b) {
    if constexpr (std::is_integral_v<T>) {
        using U = std::make_unsigned_t<T>;
        return T(U(a) + U(b));
    } else {
        return a + b;
    }
}
template <class T>
double eps() {
    if constexpr (std::is_same_v<T, float>) return std::ldexp(1.0, -24);
    else if constexpr (std::is_same_v<T, double>) return std::ldexp(1.0, -53);
    else return 0.0;
}
// Whether `got` is within `depth` roundings of the exact non-negative `exact` (integers: equal).
template <class T>
bool close(T got, T want_int, double exact, double depth) {
    if constexpr (std::is_floating_point_v<T>) return std::fabs(double(got) - exact) <= depth * eps<T>() * exact + 1e-30;
    else return got == want_int;
}

static const int WARMUP = 3;
static bool JSON = false;

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

static std::string DEVICE;

static void report(const std::string& algo, const char* dtype, int log2n, const char* impl, std::vector<double> ms,
                   double bytes, bool ok) {
    std::sort(ms.begin(), ms.end());
    size_t l = ms.size();
    double median = l % 2 ? ms[l / 2] : (ms[l / 2 - 1] + ms[l / 2]) / 2;
    double gbps = bytes / (median * 1e-3) / 1e9;
    if (JSON)
        std::printf("{\"algo\":\"%s\",\"dtype\":\"%s\",\"log2n\":%d,\"implementation\":\"%s\",\"device\":\"%s\","
                    "\"median_ms\":%.6f,\"min_ms\":%.6f,\"gbps\":%.3f,\"gelems\":%.3f,\"reps\":%zu,\"check\":\"%s\"}\n",
                    algo.c_str(), dtype, log2n, impl, DEVICE.c_str(), median, ms[0], gbps,
                    double(size_t(1) << log2n) / (median * 1e-3) / 1e9, l, ok ? "ok" : "fail");
    else
        std::printf("bench %s %s n=2^%d device=%s median_ms=%.4f min_ms=%.4f gbps=%.1f check=%s\n", algo.c_str(),
                    dtype, log2n, impl, median, ms[0], gbps, ok ? "ok" : "fail");
}

static void describe() {
    int dev = 0, driver = 0, runtime = 0;
    CHECK(cudaGetDevice(&dev));
    cudaDeviceProp p;
    CHECK(cudaGetDeviceProperties(&p, dev));
    CHECK(cudaDriverGetVersion(&driver));
    CHECK(cudaRuntimeGetVersion(&runtime));
    DEVICE = p.name;
    std::printf("# device %s, sm_%d%d, %d SMs, L2 %d MiB, driver CUDA %d.%d, runtime %d.%d, CUB %d.%d.%d\n", p.name,
                p.major, p.minor, p.multiProcessorCount, p.l2CacheSize >> 20, driver / 1000, driver % 1000 / 10,
                runtime / 1000, runtime % 1000 / 10, CUB_MAJOR_VERSION, CUB_MINOR_VERSION, CUB_SUBMINOR_VERSION);
}

template <class T>
T* upload(const std::vector<T>& v) {
    T* d = nullptr;
    CHECK(cudaMalloc(&d, std::max<size_t>(v.size(), 1) * sizeof(T)));
    CHECK(cudaMemcpy(d, v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}
template <class T>
T* poisoned(size_t n) {
    T* d = nullptr;
    CHECK(cudaMalloc(&d, std::max<size_t>(n, 1) * sizeof(T)));
    CHECK(cudaMemset(d, 0x5A, n * sizeof(T)));
    return d;
}
template <class T>
std::vector<T> download(const T* d, size_t n) {
    std::vector<T> v(n);
    CHECK(cudaMemcpy(v.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return v;
}

// Times `call(temp, bytes)` (a CUB call with its temporary storage), sizing the storage first.
template <class Call>
std::vector<double> time_cub(int reps, Call call) {
    size_t bytes = 0;
    CHECK(call(nullptr, bytes));
    void* temp = nullptr;
    CHECK(cudaMalloc(&temp, std::max<size_t>(bytes, 1)));
    Timer timer;
    auto ms = timer.run(reps, [&] { call(temp, bytes); });
    cudaFree(temp);
    return ms;
}

template <class T>
bool run(const std::string& algo, const char* dtype, int log2n, int reps, uint64_t seed) {
    size_t n = size_t(1) << log2n;
    Rng rng(seed);
    double size = sizeof(T);
    bool ok = true;
    if (algo == "copy" || algo == "reduce" || algo == "scan" || algo == "exclusive-scan") {
        std::vector<T> x(n);
        for (auto& v : x) v = draw<T>(rng.next());
        T* in = upload(x);
        if (algo == "copy") {
            T* out = poisoned<T>(n);
            Timer timer;
            auto ms = timer.run(reps, [&] { cudaMemcpyAsync(out, in, n * sizeof(T), cudaMemcpyDeviceToDevice, 0); });
            ok = download(out, n) == x;
            report(algo, dtype, log2n, "memcpy", ms, 2 * n * size, ok);
            cudaFree(out);
        } else if (algo == "reduce") {
            T* out = poisoned<T>(1);
            auto ms = time_cub(reps, [&](void* t, size_t& b) { return cub::DeviceReduce::Sum(t, b, in, out, int(n)); });
            T got = download(out, 1)[0], want = 0;
            double exact = 0;
            for (auto v : x) want = add(want, v), exact += double(v);
            ok = close(got, want, exact, double((n + (1u << 15) - 1) >> 15) + 64.0);
            report(algo, dtype, log2n, "cub", ms, n * size, ok);
            cudaFree(out);
        } else {
            bool inclusive = algo == "scan";
            T* out = poisoned<T>(n);
            auto ms = time_cub(reps, [&](void* t, size_t& b) {
                return inclusive ? cub::DeviceScan::InclusiveSum(t, b, in, out, int(n))
                                 : cub::DeviceScan::ExclusiveSum(t, b, in, out, int(n));
            });
            auto got = download(out, n);
            T acc = 0;
            double exact = 0, depth = double((n + 2303) / 2304) + 128.0;
            for (size_t i = 0; i < n && ok; i++) {
                if (inclusive) acc = add(acc, x[i]), exact += double(x[i]);
                ok = close(got[i], acc, exact, depth);
                if (!inclusive) acc = add(acc, x[i]), exact += double(x[i]);
                if (!ok) std::fprintf(stderr, "cub_bench: out[%zu] is wrong\n", i);
            }
            report(algo, dtype, log2n, "cub", ms, 2 * n * size, ok);
            cudaFree(out);
        }
        cudaFree(in);
    } else if (algo == "select") {
        std::vector<T> x(n);
        std::vector<uint8_t> f(n);
        for (auto& v : x) v = draw<T>(rng.next());
        for (auto& v : f) v = uint8_t(rng.next() >> 63);
        std::vector<T> want;
        for (size_t i = 0; i < n; i++)
            if (f[i]) want.push_back(x[i]);
        T* in = upload(x);
        uint8_t* flags = upload(f);
        T* out = poisoned<T>(n);
        int* count = poisoned<int>(1);
        auto ms = time_cub(reps, [&](void* t, size_t& b) {
            return cub::DeviceSelect::Flagged(t, b, in, flags, out, count, int(n));
        });
        int c = download(count, 1)[0];
        ok = size_t(c) == want.size() && download(out, want.size()) == want;
        report(algo, dtype, log2n, "cub", ms, n * (size + 1) + want.size() * size, ok);
        cudaFree(in), cudaFree(flags), cudaFree(out), cudaFree(count);
    } else if (algo == "reduce-by-key") {
        std::vector<uint32_t> k(n);
        std::vector<T> v(n);
        uint32_t key = 0;
        uint64_t left = 0;
        for (auto& kk : k) {
            uint64_t r = rng.next();
            if (left == 0) {
                key += 1 + uint32_t(r >> 62) % 2;
                left = 1 + (r & 15);
            }
            left--;
            kk = key;
        }
        for (auto& vv : v) vv = small<T>(rng.next());
        std::vector<uint32_t> wk;
        std::vector<T> wv;
        for (size_t i = 0; i < n; i++) {
            if (i == 0 || k[i - 1] != k[i]) wk.push_back(k[i]), wv.push_back(v[i]);
            else wv.back() = add(wv.back(), v[i]);
        }
        uint32_t* keys = upload(k);
        T* vals = upload(v);
        uint32_t* uk = poisoned<uint32_t>(n);
        T* agg = poisoned<T>(n);
        int* runs = poisoned<int>(1);
        auto ms = time_cub(reps, [&](void* t, size_t& b) {
            return cub::DeviceReduce::ReduceByKey(t, b, keys, uk, vals, agg, runs, cuda::std::plus<T>{}, int(n));
        });
        int r = download(runs, 1)[0];
        ok = size_t(r) == wk.size() && download(uk, r) == wk && download(agg, r) == wv;
        report(algo, dtype, log2n, "cub", ms, (n + wk.size()) * (4 + size), ok);
        cudaFree(keys), cudaFree(vals), cudaFree(uk), cudaFree(agg), cudaFree(runs);
    } else if (algo == "histogram") {
        std::vector<T> x(n);
        for (auto& v : x) v = sample<T>(rng.next());
        T lo = 0, hi = std::is_floating_point_v<T> ? T(1) : T(1 << 16);
        std::vector<int> want(256, 0);
        for (auto s : x) {
            if (!(s >= lo && s < hi)) continue;
            uint32_t b;
            if constexpr (std::is_floating_point_v<T>) {
                T scale = T(256) / (hi - lo);
                b = std::min<uint32_t>(uint32_t((s - lo) * scale), 255);
            } else {
                b = uint32_t(uint64_t(s - lo) * 256 / uint64_t(hi - lo));
            }
            want[b]++;
        }
        T* in = upload(x);
        int* hist = poisoned<int>(256);
        auto ms = time_cub(reps, [&](void* t, size_t& b) {
            return cub::DeviceHistogram::HistogramEven(t, b, in, hist, 257, lo, hi, int(n));
        });
        ok = download(hist, 256) == want;
        report(algo, dtype, log2n, "cub", ms, n * size, ok);
        cudaFree(in), cudaFree(hist);
    } else {
        std::fprintf(stderr, "cub_bench: unknown algorithm %s\n", algo.c_str());
        std::exit(2);
    }
    if (!ok) std::fprintf(stderr, "cub_bench: %s %s n=2^%d: wrong result\n", algo.c_str(), dtype, log2n);
    return ok;
}

int main(int argc, char** argv) {
    if (argc < 6 || argc > 7 || (argc == 7 && std::string(argv[6]) != "--json")) {
        std::fprintf(stderr, "usage: cub_bench ALGO DTYPE LOG2N REPS SEED [--json]\n");
        return 2;
    }
    JSON = argc == 7;
    std::string algo = argv[1], dtype = argv[2];
    int log2n = std::atoi(argv[3]), reps = std::atoi(argv[4]);
    uint64_t seed = std::strtoull(argv[5], nullptr, 10);
    if (log2n < 0 || log2n > 30 || reps < 1) {
        std::fprintf(stderr, "cub_bench: LOG2N in 0..30, REPS >= 1\n");
        return 2;
    }
    describe();
    // Built with -DONE_DTYPE -DDTYPE_F32 (say), only that dtype's instantiations: CUB's templates
    // compile for minutes, so the record's script builds one binary per dtype in parallel.
    int rc = -1;
#if !defined(ONE_DTYPE) || defined(DTYPE_I32)
    if (dtype == "i32") rc = run<int32_t>(algo, "i32", log2n, reps, seed) ? 0 : 1;
#endif
#if !defined(ONE_DTYPE) || defined(DTYPE_U32)
    if (dtype == "u32") rc = run<uint32_t>(algo, "u32", log2n, reps, seed) ? 0 : 1;
#endif
#if !defined(ONE_DTYPE) || defined(DTYPE_I64)
    if (dtype == "i64") rc = run<int64_t>(algo, "i64", log2n, reps, seed) ? 0 : 1;
#endif
#if !defined(ONE_DTYPE) || defined(DTYPE_U64)
    if (dtype == "u64") rc = run<uint64_t>(algo, "u64", log2n, reps, seed) ? 0 : 1;
#endif
#if !defined(ONE_DTYPE) || defined(DTYPE_F32)
    if (dtype == "f32") rc = run<float>(algo, "f32", log2n, reps, seed) ? 0 : 1;
#endif
#if !defined(ONE_DTYPE) || defined(DTYPE_F64)
    if (dtype == "f64") rc = run<double>(algo, "f64", log2n, reps, seed) ? 0 : 1;
#endif
    if (rc < 0) {
        std::fprintf(stderr, "cub_bench: dtype %s is unknown or not built in\n", dtype.c_str());
        return 2;
    }
    return rc;
}
