// The anchor of `qd bench sort`: CUB's DeviceRadixSort on the same keys, sizes and entropies,
// timed the same way (issue 17).
//
//   nvcc -O3 -arch=sm_90 -o cub_sort bench/cub_sort.cu
//   ./cub_sort keys|pairs SIZES ENTROPIES REPS SEED
//
// SIZES: comma-separated key counts; ENTROPIES: comma-separated entropies of 1.0, 0.811, 0.544,
// 0.337, 0.201 (keys are the AND of 1 to 5 random words, Thearling and Smith). keys:
// cub::DeviceRadixSort::SortKeys on u32 keys; pairs: SortPairs with u32 values (each key's index).
// Each timed call is out of place (the input stays), between two CUDA events on the default stream,
// after 3 untimed calls; the temporary storage is allocated once. The keys are those `qd bench sort`
// draws for the same seed (`qd_cli::bench_sort::key_word`, reproduced below). The result is checked
// on the host: sorted, and the same keys (pairs: each value is the index of its key in the input,
// every index once, equal keys in input order; keys: the same count and hash sum as the input).
// Prints `bench sort u32 values=none|u32 n=N entropy=E device=cub median_ms=... min_ms=...
// gkeys=... check=ok|fail` per size and entropy. Exit status 1 on a CUDA error or a wrong result.
#include <cub/cub.cuh>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#define CHECK(call)                                                                              \
    do {                                                                                         \
        cudaError_t err_ = (call);                                                               \
        if (err_ != cudaSuccess) {                                                               \
            std::fprintf(stderr, "cub_sort: %s failed: %s (%s:%d)\n", #call,                     \
                         cudaGetErrorString(err_), __FILE__, __LINE__);                          \
            std::exit(1);                                                                        \
        }                                                                                        \
    } while (0)

static const int WARMUP = 3;

// splitmix64's finalizer of the stream position: word `x` of the stream of `seed`.
static uint64_t key_word(uint64_t seed, uint64_t x) {
    uint64_t z = (seed ^ 0x9E3779B97F4A7C15ull) + (x + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

// Key i: the AND of `ands` words (entropy 1.0, 0.811, 0.544, 0.337, 0.201 for 1 to 5).
static std::vector<uint32_t> make_keys(size_t n, int ands, uint64_t seed) {
    std::vector<uint32_t> keys(n);
    unsigned threads = std::max(1u, std::thread::hardware_concurrency());
    std::vector<std::thread> pool;
    for (unsigned t = 0; t < threads; ++t) {
        pool.emplace_back([&, t] {
            for (size_t i = t; i < n; i += threads) {
                uint64_t k = ~0ull;
                for (int j = 0; j < ands; ++j) k &= key_word(seed, i * ands + j);
                keys[i] = (uint32_t)k;
            }
        });
    }
    for (auto& th : pool) th.join();
    return keys;
}

static uint64_t mix(uint64_t x) {
    x = (x ^ (x >> 33)) * 0xff51afd7ed558ccdull;
    return x ^ (x >> 33);
}

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
};

static int ands_of(const std::string& e) {
    const char* names[] = {"1.0", "0.811", "0.544", "0.337", "0.201"};
    for (int i = 0; i < 5; ++i)
        if (e == names[i]) return i + 1;
    std::fprintf(stderr, "cub_sort: entropy %s is not one of 1.0, 0.811, 0.544, 0.337, 0.201\n", e.c_str());
    std::exit(2);
}

static std::vector<std::string> split(const char* s) {
    std::vector<std::string> out;
    std::string cur;
    for (const char* p = s; *p; ++p) {
        if (*p == ',') {
            out.push_back(cur);
            cur.clear();
        } else {
            cur += *p;
        }
    }
    out.push_back(cur);
    return out;
}

// The check of one result (see the header).
static bool check(const std::vector<uint32_t>& in, const std::vector<uint32_t>& out,
                  const std::vector<uint32_t>* vals, std::string& why) {
    size_t n = in.size();
    for (size_t i = 1; i < n; ++i)
        if (out[i - 1] > out[i]) {
            why = "not sorted at " + std::to_string(i);
            return false;
        }
    if (vals) {
        std::vector<uint8_t> seen(n, 0);
        for (size_t i = 0; i < n; ++i) {
            uint32_t v = (*vals)[i];
            if (v >= n || seen[v] || in[v] != out[i] || (i > 0 && out[i - 1] == out[i] && (*vals)[i - 1] > v)) {
                why = "value " + std::to_string(v) + " at " + std::to_string(i);
                return false;
            }
            seen[v] = 1;
        }
    } else {
        uint64_t a = 0, b = 0;
        for (size_t i = 0; i < n; ++i) {
            a += mix(in[i]);
            b += mix(out[i]);
        }
        if (a != b) {
            why = "the keys differ from the input's";
            return false;
        }
    }
    return true;
}

int main(int argc, char** argv) {
    if (argc != 6) {
        std::fprintf(stderr, "usage: %s keys|pairs SIZES ENTROPIES REPS SEED\n", argv[0]);
        return 2;
    }
    bool pairs = std::strcmp(argv[1], "pairs") == 0;
    std::vector<size_t> sizes;
    for (auto& s : split(argv[2])) sizes.push_back(std::stoull(s));
    std::vector<std::string> entropies = split(argv[3]);
    int reps = std::atoi(argv[4]);
    uint64_t seed = std::stoull(argv[5]);
    size_t max_n = *std::max_element(sizes.begin(), sizes.end());

    uint32_t *d_kin, *d_kout, *d_vin = nullptr, *d_vout = nullptr;
    CHECK(cudaMalloc(&d_kin, max_n * 4));
    CHECK(cudaMalloc(&d_kout, max_n * 4));
    if (pairs) {
        CHECK(cudaMalloc(&d_vin, max_n * 4));
        CHECK(cudaMalloc(&d_vout, max_n * 4));
        std::vector<uint32_t> idx(max_n);
        for (size_t i = 0; i < max_n; ++i) idx[i] = (uint32_t)i;
        CHECK(cudaMemcpy(d_vin, idx.data(), max_n * 4, cudaMemcpyHostToDevice));
    }
    size_t temp_bytes = 0;
    if (pairs)
        CHECK(cub::DeviceRadixSort::SortPairs(nullptr, temp_bytes, d_kin, d_kout, d_vin, d_vout, (int)max_n));
    else
        CHECK(cub::DeviceRadixSort::SortKeys(nullptr, temp_bytes, d_kin, d_kout, (int)max_n));
    void* d_temp;
    CHECK(cudaMalloc(&d_temp, temp_bytes));
    int failures = 0;
    Timer timer;
    for (auto& e : entropies) {
        int ands = ands_of(e);
        for (size_t n : sizes) {
            std::vector<uint32_t> keys = make_keys(n, ands, seed);
            CHECK(cudaMemcpy(d_kin, keys.data(), n * 4, cudaMemcpyHostToDevice));
            auto run = [&] {
                size_t bytes = temp_bytes;
                if (pairs)
                    CHECK(cub::DeviceRadixSort::SortPairs(d_temp, bytes, d_kin, d_kout, d_vin, d_vout, (int)n));
                else
                    CHECK(cub::DeviceRadixSort::SortKeys(d_temp, bytes, d_kin, d_kout, (int)n));
            };
            for (int w = 0; w < WARMUP; ++w) run();
            std::vector<float> ms;
            for (int r = 0; r < reps; ++r) {
                CHECK(cudaEventRecord(timer.start));
                run();
                CHECK(cudaEventRecord(timer.stop));
                CHECK(cudaEventSynchronize(timer.stop));
                float t;
                CHECK(cudaEventElapsedTime(&t, timer.start, timer.stop));
                ms.push_back(t);
            }
            std::vector<uint32_t> out(n), vals;
            CHECK(cudaMemcpy(out.data(), d_kout, n * 4, cudaMemcpyDeviceToHost));
            if (pairs) {
                vals.resize(n);
                CHECK(cudaMemcpy(vals.data(), d_vout, n * 4, cudaMemcpyDeviceToHost));
            }
            std::string why;
            bool ok = check(keys, out, pairs ? &vals : nullptr, why);
            if (!ok) {
                std::fprintf(stderr, "cub_sort: n=%zu entropy=%s: %s\n", n, e.c_str(), why.c_str());
                ++failures;
            }
            std::sort(ms.begin(), ms.end());
            double med = ms.size() % 2 ? ms[ms.size() / 2] : (ms[ms.size() / 2 - 1] + ms[ms.size() / 2]) / 2;
            std::printf("bench sort u32 values=%s n=%zu entropy=%s device=cub median_ms=%.4f min_ms=%.4f gkeys=%.2f check=%s\n",
                        pairs ? "u32" : "none", n, e.c_str(), med, ms[0], n / (med * 1e-3) / 1e9, ok ? "ok" : "fail");
            std::fflush(stdout);
        }
    }
    return failures ? 1 : 0;
}
