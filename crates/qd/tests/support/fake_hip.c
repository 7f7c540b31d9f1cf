/* A stand-in for libamdhip64 with only the functions qd's AMDGPU runtime resolves, for
 * crates/qd/tests/amdgpu_fake_hip.rs: one "gfx942" device whose memory is host memory. It runs no
 * kernel: hipModuleLaunchKernel writes the grid, the block and the kernarg buffer it was given to
 * $FAKE_HIP_LAUNCH_LOG, so the test can check the D19 argument layout. hipModuleLoadData checks
 * that the image is an ELF file and hipModuleGetFunction that the symbol's name is in it.
 * Environment: FAKE_HIP_ARCH (gcnArchName, default gfx942:sramecc+:xnack-), FAKE_HIP_WAVE (warp
 * size, default 64). The hipDeviceProp_t layout is not ROCm's: only `name` at 0 and a `gfx...`
 * string further on, which is all qd reads. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef int hipError_t;

hipError_t hipInit(unsigned flags) { (void)flags; return 0; }
hipError_t hipGetDeviceCount(int *n) { *n = 1; return 0; }
hipError_t hipSetDevice(int d) { return d == 0 ? 0 : 101; }

hipError_t hipGetDevicePropertiesR0600(void *props, int d) {
    if (d != 0) return 101;
    const char *arch = getenv("FAKE_HIP_ARCH");
    memset(props, 0, 1472);
    strcpy((char *)props, "Fake AMD Instinct");
    strcpy((char *)props + 1160, arch ? arch : "gfx942:sramecc+:xnack-");
    return 0;
}

hipError_t hipDeviceGetAttribute(int *v, int attr, int d) {
    if (d != 0) return 101;
    const char *wave = getenv("FAKE_HIP_WAVE");
    switch (attr) {
    case 74: *v = 65536; return 0;
    case 87: *v = wave ? atoi(wave) : 64; return 0;
    default: return 1;
    }
}

hipError_t hipDeviceGetName(char *name, int len, int d) {
    if (d != 0) return 101;
    snprintf(name, (size_t)len, "Fake AMD Instinct");
    return 0;
}

hipError_t hipDeviceTotalMem(size_t *bytes, int d) {
    if (d != 0) return 101;
    *bytes = (size_t)1 << 34;
    return 0;
}

hipError_t hipMalloc(void **p, size_t n) { *p = calloc(1, n); return *p ? 0 : 2; }
hipError_t hipFree(void *p) { free(p); return 0; }
hipError_t hipMemcpyHtoD(void *dst, const void *src, size_t n) { memcpy(dst, src, n); return 0; }
hipError_t hipMemcpyDtoH(void *dst, void *src, size_t n) { memcpy(dst, src, n); return 0; }

struct module { size_t size; char *image; };

hipError_t hipModuleLoadData(void **module, const void *image) {
    const unsigned char *b = image;
    if (memcmp(b, "\x7f" "ELF", 4) != 0) return 200; /* hipErrorInvalidImage */
    /* The image's size from its ELF64 header: section headers end the file. */
    uint64_t shoff; uint16_t shentsize, shnum;
    memcpy(&shoff, b + 0x28, 8); memcpy(&shentsize, b + 0x3A, 2); memcpy(&shnum, b + 0x3C, 2);
    struct module *m = malloc(sizeof *m);
    m->size = shoff + (uint64_t)shentsize * shnum;
    m->image = malloc(m->size);
    memcpy(m->image, image, m->size);
    *module = m;
    return 0;
}

hipError_t hipModuleUnload(void *module) {
    struct module *m = module;
    free(m->image);
    free(m);
    return 0;
}

hipError_t hipModuleGetFunction(void **function, void *module, const char *name) {
    struct module *m = module;
    size_t n = strlen(name);
    for (size_t i = 0; i + n <= m->size; i++) {
        if (memcmp(m->image + i, name, n) == 0 && m->image[i + n] == 0) {
            *function = m;
            return 0;
        }
    }
    return 500; /* hipErrorNotFound */
}

hipError_t hipModuleLaunchKernel(void *f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by,
                                 unsigned bz, unsigned shared, void *stream, void **params, void **extra) {
    (void)f; (void)stream;
    if (params) return 1;
    const char *path = getenv("FAKE_HIP_LAUNCH_LOG");
    FILE *out = path ? fopen(path, "a") : NULL;
    if (!out) return 1;
    fprintf(out, "grid %u %u %u block %u %u %u shared %u args", gx, gy, gz, bx, by, bz, shared);
    if (extra) {
        if ((uintptr_t)extra[0] != 1 || (uintptr_t)extra[2] != 2 || (uintptr_t)extra[4] != 3) return 1;
        const uint64_t *buf = extra[1];
        size_t size = *(const size_t *)extra[3];
        for (size_t i = 0; i < size / 8; i++) fprintf(out, " %llx", (unsigned long long)buf[i]);
    }
    fprintf(out, "\n");
    fclose(out);
    return 0;
}

hipError_t hipDeviceSynchronize(void) { return 0; }

const char *hipGetErrorString(hipError_t e) {
    switch (e) {
    case 0: return "hipSuccess";
    case 200: return "hipErrorInvalidImage";
    case 500: return "hipErrorNotFound";
    default: return "fake HIP error";
    }
}
