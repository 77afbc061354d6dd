// Expanding a chunk's sparse values (docs/format.md): a bitmap with a bit per nonzero, set
// where the value is stored, and the stored values in order; every other value is 1.
#pragma once

#include <cstddef>
#include <cstdint>

namespace agld::format {

// Bytes that expand_values may read past the last stored value (callers pad for them).
inline constexpr size_t kExpandOverread = 32;

// dense[p] = the next stored value where bit p of the bitmap is set, else 1, for p < nnz.
// Reads at most `stored` values plus kExpandOverread bytes of stored_values, whatever the
// bitmap says. Returns how many of the bits below nnz are set: the chunk is sound iff that
// is `stored`. Uses AVX2 when the CPU has it; expand_values_portable is the plain loop (the
// two agree, tested).
uint64_t expand_values(const uint8_t* bitmap, const std::byte* stored_values, uint64_t stored,
                       uint64_t nnz, float* dense);
uint64_t expand_values_portable(const uint8_t* bitmap, const std::byte* stored_values,
                                uint64_t stored, uint64_t nnz, float* dense);

}  // namespace agld::format
