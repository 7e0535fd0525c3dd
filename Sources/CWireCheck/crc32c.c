#include "CWireCheck.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>

int flowbus_crc32c_has_instruction(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("sse4.2");
}

// Compiled for SSE 4.2 on its own, so the rest of the build runs on any x86-64.
__attribute__((target("sse4.2")))
uint32_t flowbus_crc32c_instruction(uint32_t crc, const void *bytes, size_t count) {
    const unsigned char *next = bytes;
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        memcpy(&word, next, 8);
        wide = _mm_crc32_u64(wide, word);
        next += 8;
        count -= 8;
    }
    uint32_t narrow = (uint32_t)wide;
    while (count > 0) {
        narrow = _mm_crc32_u8(narrow, *next);
        next += 1;
        count -= 1;
    }
    return narrow;
}

#else

int flowbus_crc32c_has_instruction(void) { return 0; }

uint32_t flowbus_crc32c_instruction(uint32_t crc, const void *bytes, size_t count) {
    (void)bytes;
    (void)count;
    return crc;
}

#endif
