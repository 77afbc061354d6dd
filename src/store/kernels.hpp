// The chunk decoder's loops over every nonzero (Store::decode_chunk), vectorized with AVX2
// where the CPU has it (runtime dispatch), each with a plain loop that is its definition
// (tests/store/kernels_test.cpp checks that the two agree).
#pragma once

#include <cstddef>
#include <cstdint>

#include "store/format.hpp"

namespace agld::format {

// Expanding a chunk's sparse values (docs/format.md): a bitmap with a bit per nonzero, set
// where the value is stored, and the stored values in order; every other value is 1.
// dense[p] = the next stored value where bit p of the bitmap is set, else 1, for p < nnz.
// Reads no more than the `stored` values of stored_values (unaligned is fine), whatever the
// bitmap says. Returns how many of the bits below nnz are set: the chunk is sound iff that
// is `stored`.
uint64_t expand_values(const uint8_t* bitmap, const std::byte* stored_values, uint64_t stored,
                       uint64_t nnz, float* dense);
uint64_t expand_values_portable(const uint8_t* bitmap, const std::byte* stored_values,
                                uint64_t stored, uint64_t nnz, float* dense);

// Values from a chunk's value table (docs/format.md, VALUE_DICT): out[i] = table[code i] for
// the n u16 codes (unaligned is fine) and a table of `size` >= 1 entries. Returns whether
// every code is below size (when not, out holds an entry of the table for each).
bool decode_dict(const std::byte* codes, uint64_t n, const float* table, uint64_t size, float* out);
bool decode_dict_portable(const std::byte* codes, uint64_t n, const float* table, uint64_t size,
                          float* out);
// The same with the codes in two byte planes (PACKED_PLANES): code i = lo[i] | hi[i] << 8.
bool decode_dict_planes(const std::byte* lo, const std::byte* hi, uint64_t n, const float* table,
                        uint64_t size, float* out);
bool decode_dict_planes_portable(const std::byte* lo, const std::byte* hi, uint64_t n,
                                 const float* table, uint64_t size, float* out);

// A packed plane (format::pack_plane) of n elements of w = 1, 2 or 4 bits, unpacked into n
// bytes.
void unpack_plane(const std::byte* packed, uint64_t n, unsigned w, std::byte* out);
void unpack_plane_portable(const std::byte* packed, uint64_t n, unsigned w, std::byte* out);

// The bits set among the first n of a bitmap (bit p of byte p / 8, least significant first).
uint64_t bits_set(const uint8_t* bitmap, uint64_t n);
uint64_t bits_set_portable(const uint8_t* bitmap, uint64_t n);

// Over idx[0, n): how many p >= 1 have idx[p] <= idx[p - 1] (the places where the array
// does not increase), and the largest index (0 when n is 0).
struct Falls {
  uint64_t falls = 0;
  uint32_t top = 0;
  bool operator==(const Falls&) const = default;
};
Falls count_falls(const uint32_t* idx, uint64_t n);
Falls count_falls_portable(const uint32_t* idx, uint64_t n);

// Un-transposes n byte-shuffled indices (format::byte_unshuffle4: byte b of index i at
// src[b][i]) into dst and counts their falls (count_falls), in one pass. This and
// expand_values write a 32-byte aligned destination past the caches (streaming stores).
Falls unshuffle4_count_falls(const Planes4& src, uint32_t* dst, uint64_t n);
Falls unshuffle4_count_falls_portable(const Planes4& src, uint32_t* dst, uint64_t n);

// Whether any of n floats (IEEE binary32, 4 bytes each, unaligned is fine) is an infinity
// or a NaN; likewise n doubles.
bool any_nonfinite_floats(const std::byte* p, uint64_t n);
bool any_nonfinite_doubles(const std::byte* p, uint64_t n);

}  // namespace agld::format
