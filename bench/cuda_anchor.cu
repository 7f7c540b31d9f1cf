// The CUDA anchors of issue 14, with the driver API alone (no qd), on PTX that `qd emit --target
// ptx:sm_90` wrote:
//
//   cuda_anchor launch <latency_saxpy.ptx> <reps>
//       The bare launch: qd's saxpy module (y = a*x + y over 1024 f32, 4 blocks of 256, qd's
//       parameter ABI) launched <reps> times; prints the median host time of cuLaunchKernel alone
//       and of cuLaunchKernel + cuCtxSynchronize (what qd's synchronous launch does).
//   cuda_anchor routes <module.ptx> <entry>
//       The same PTX through the three loading routes: cuModuleLoadDataEx (the whole-program JIT,
//       and the driver's JIT cache), the link API as it compiles by default (relocatable,
//       position-independent), and the link API with CU_JIT_POSITION_INDEPENDENT_CODE = 0 (what qd's
//       disk cache stores); prints each one's registers, local memory and load time.
//
// Build: nvcc -O2 -o cuda_anchor cuda_anchor.cu -lcuda
#include <cuda.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CHECK(call)                                                                    \
    do {                                                                               \
        CUresult r_ = (call);                                                          \
        if (r_ != CUDA_SUCCESS) {                                                      \
            const char* s_ = nullptr;                                                  \
            cuGetErrorName(r_, &s_);                                                   \
            std::fprintf(stderr, "%s failed: %s (line %d)\n", #call, s_ ? s_ : "?", __LINE__); \
            std::exit(1);                                                              \
        }                                                                              \
    } while (0)

static double now_us() {
    using namespace std::chrono;
    return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
}

static double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

static std::vector<char> read_file(const char* path) {
    FILE* f = std::fopen(path, "rb");
    if (!f) {
        std::fprintf(stderr, "cannot open %s\n", path);
        std::exit(1);
    }
    std::vector<char> data;
    char buf[65536];
    size_t n;
    while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) data.insert(data.end(), buf, buf + n);
    std::fclose(f);
    data.push_back('\0');
    return data;
}

static void report_function(const char* route, CUmodule m, const char* entry, double load_us) {
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, m, entry));
    int regs = 0, local = 0;
    CHECK(cuFuncGetAttribute(&regs, CU_FUNC_ATTRIBUTE_NUM_REGS, f));
    CHECK(cuFuncGetAttribute(&local, CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES, f));
    std::printf("route %s entry=%s regs=%d local_bytes=%d load_ms=%.3f\n", route, entry, regs, local, load_us / 1e3);
}

// PTX through the link API, to a cubin, then loaded; `pic` < 0 leaves the option out.
static void link_route(const char* route, const std::vector<char>& ptx, const char* entry, int pic) {
    double t0 = now_us();
    CUjit_option opts[1] = {CU_JIT_POSITION_INDEPENDENT_CODE};
    void* vals[1] = {(void*)(size_t)(pic < 0 ? 0 : pic)};
    CUlinkState state;
    CHECK(cuLinkCreate(pic < 0 ? 0 : 1, opts, vals, &state));
    CHECK(cuLinkAddData(state, CU_JIT_INPUT_PTX, (void*)ptx.data(), ptx.size(), "module.ptx", 0, nullptr, nullptr));
    void* cubin;
    size_t size;
    CHECK(cuLinkComplete(state, &cubin, &size));
    CUmodule m;
    CHECK(cuModuleLoadData(&m, cubin));
    double t1 = now_us();
    report_function(route, m, entry, t1 - t0);
    CHECK(cuLinkDestroy(state));
    CHECK(cuModuleUnload(m));
}

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: %s launch <saxpy.ptx> <reps> | routes <module.ptx> <entry>\n", argv[0]);
        return 2;
    }
    CHECK(cuInit(0));
    CUdevice dev;
    CHECK(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    CHECK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK(cuCtxSetCurrent(ctx));
    std::vector<char> ptx = read_file(argv[2]);

    if (std::strcmp(argv[1], "routes") == 0) {
        const char* entry = argv[3];
        double t0 = now_us();
        CUmodule m;
        CHECK(cuModuleLoadDataEx(&m, ptx.data(), 0, nullptr, nullptr));
        report_function("direct", m, entry, now_us() - t0);
        CHECK(cuModuleUnload(m));
        link_route("link-default", ptx, entry, -1);
        link_route("link-pic1", ptx, entry, 1);
        link_route("link-pic0", ptx, entry, 0);
        return 0;
    }

    // launch: qd's saxpy, y = 2x + y, 1024 elements.
    const int reps = std::atoi(argv[3]);
    const unsigned n = 1024;
    CUmodule m;
    CHECK(cuModuleLoadDataEx(&m, ptx.data(), 0, nullptr, nullptr));
    CUfunction f;
    CHECK(cuModuleGetFunction(&f, m, "latency_saxpy"));
    std::vector<float> x(n), y(n, 1.0f);
    for (unsigned i = 0; i < n; i++) x[i] = (float)i;
    CUdeviceptr dx, dy;
    CHECK(cuMemAlloc(&dx, n * 4));
    CHECK(cuMemAlloc(&dy, n * 4));
    CHECK(cuMemcpyHtoD(dx, x.data(), n * 4));
    CHECK(cuMemcpyHtoD(dy, y.data(), n * 4));
    float a = 2.0f;
    unsigned len = n;
    void* params[] = {&a, &dx, &len, &dy, &len};
    auto launch = [&] { CHECK(cuLaunchKernel(f, 4, 1, 1, 256, 1, 1, 0, nullptr, params, nullptr)); };
    launch();
    CHECK(cuCtxSynchronize());
    CHECK(cuMemcpyDtoH(y.data(), dy, n * 4));
    for (unsigned i = 0; i < n; i++) {
        if (y[i] != 2.0f * i + 1.0f) {
            std::fprintf(stderr, "y[%u] = %f, expected %f\n", i, y[i], 2.0f * i + 1.0f);
            return 1;
        }
    }
    for (int i = 0; i < 20; i++) {
        launch();
        CHECK(cuCtxSynchronize());
    }
    std::vector<double> call, call_sync;
    for (int i = 0; i < reps; i++) {
        double t0 = now_us();
        launch();
        double t1 = now_us();
        CHECK(cuCtxSynchronize());
        call.push_back(t1 - t0);
        t0 = now_us();
        launch();
        CHECK(cuCtxSynchronize());
        call_sync.push_back(now_us() - t0);
    }
    std::printf("anchor-cuda reps=%d launch_call_us=%.2f launch_sync_us=%.2f\n", reps, median(call), median(call_sync));
    CHECK(cuMemFree(dx));
    CHECK(cuMemFree(dy));
    CHECK(cuModuleUnload(m));
    return 0;
}
