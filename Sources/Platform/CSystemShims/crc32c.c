#include "CSystemShims.h"

#include <string.h>

// The CPU's own CRC-32C instruction: SSE4.2's `crc32` on x86-64 (checked at run time), ARMv8's
// `crc32c` on arm64 when the build targets a CPU with it. Swift cannot emit either, and every log
// record is checked with one on each start (a 10 M report log is about 2 GB). Elsewhere the store
// keeps its table version.

#if defined(__x86_64__)
#include <cpuid.h>

int c_system_shims_crc32c_available(void) {
    unsigned int eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return 0;
    return (ecx & bit_SSE4_2) != 0;
}

__attribute__((target("sse4.2")))
uint32_t c_system_shims_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    unsigned long long c = crc;
    while (count >= 8) {
        unsigned long long word;
        memcpy(&word, p, 8);
        c = __builtin_ia32_crc32di(c, word);
        p += 8;
        count -= 8;
    }
    unsigned int c32 = (unsigned int)c;
    while (count > 0) {
        c32 = __builtin_ia32_crc32qi(c32, *p);
        p++;
        count--;
    }
    return c32;
}

#elif defined(__aarch64__) && defined(__ARM_FEATURE_CRC32)
// Built for a CPU that has it (every Apple arm64 one; on Linux, -march=armv8.1-a and later).
#include <arm_acle.h>

int c_system_shims_crc32c_available(void) { return 1; }

uint32_t c_system_shims_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *p = bytes;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        crc = __crc32cd(crc, word);
        p += 8;
        count -= 8;
    }
    while (count > 0) {
        crc = __crc32cb(crc, *p);
        p++;
        count--;
    }
    return crc;
}

#else
int c_system_shims_crc32c_available(void) { return 0; }

uint32_t c_system_shims_crc32c_update(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}
#endif
