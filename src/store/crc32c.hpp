// CRC-32C (Castagnoli). Uses the SSE4.2 crc32 instruction when the CPU has it, else
// Boost.CRC's table-driven implementation; the two agree bit for bit (tested).
#pragma once

#include <cstddef>
#include <cstdint>

namespace agld::crc32c {

uint32_t value(const void* data, size_t n);
// Extends a CRC computed over earlier bytes.
uint32_t extend(uint32_t crc, const void* data, size_t n);
// The portable implementation, for tests.
uint32_t value_portable(const void* data, size_t n);
bool hardware_available();

}  // namespace agld::crc32c
