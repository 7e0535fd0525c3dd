#ifndef FLOWBUS_CWIRECHECK_H
#define FLOWBUS_CWIRECHECK_H

#include <stddef.h>
#include <stdint.h>

/// Nonzero when this processor has a CRC-32C instruction the build can use (x86-64 SSE 4.2).
int flowbus_crc32c_has_instruction(void);

/// Runs `crc` over `count` bytes with the processor's CRC-32C instruction: no initial value and
/// no final xor (the caller adds them). Only call it when flowbus_crc32c_has_instruction() said so.
uint32_t flowbus_crc32c_instruction(uint32_t crc, const void *bytes, size_t count);

#endif
