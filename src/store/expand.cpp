#include "store/expand.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace agld::format {
namespace {

constexpr uint32_t kOne = 0x3f800000;  // 1.0f

uint32_t load32(const std::byte* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}

// Nonzeros from p on: a select by masks, not a branch (the bits are as good as random).
uint64_t expand_tail(const uint8_t* bitmap, const std::byte* values, uint64_t stored,
                     uint64_t p, uint64_t nnz, uint64_t named, float* dense) {
  for (; p < nnz; ++p) {
    const uint32_t bit = (bitmap[p >> 3] >> (p & 7)) & 1;
    const uint32_t mask = 0u - bit;
    const uint32_t v = load32(values + 4 * std::min(named, stored));
    const uint32_t out = (v & mask) | (kOne & ~mask);
    std::memcpy(dense + p, &out, 4);
    named += bit;
  }
  return named;
}

#if defined(__x86_64__)
// For each bitmap byte: the lane of the loaded values each output lane takes (its rank
// among the set bits) and how many bits are set.
struct Byte {
  alignas(32) std::array<int32_t, 8> lane;
  uint32_t count;
};
constexpr std::array<Byte, 256> make_table() {
  std::array<Byte, 256> t{};
  for (int m = 0; m < 256; ++m) {
    int rank = 0;
    for (int i = 0; i < 8; ++i) {
      t[m].lane[i] = (m >> i) & 1 ? rank : 0;
      rank += (m >> i) & 1;
    }
    t[m].count = static_cast<uint32_t>(rank);
  }
  return t;
}
constexpr std::array<Byte, 256> kTable = make_table();

// Eight nonzeros a step: load the next 8 stored values, move each to its lane, put 1 in
// the lanes whose bit is clear.
__attribute__((target("avx2"))) uint64_t expand_avx2(const uint8_t* bitmap,
                                                     const std::byte* values, uint64_t stored,
                                                     uint64_t nnz, float* dense) {
  const __m256 ones = _mm256_set1_ps(1.0f);
  const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  uint64_t named = 0;
  const uint64_t bytes = nnz / 8;
  for (uint64_t q = 0; q < bytes; ++q) {
    const Byte& b = kTable[bitmap[q]];
    const __m256 v = _mm256_loadu_ps(
        reinterpret_cast<const float*>(values + 4 * std::min(named, stored)));
    const __m256 moved = _mm256_permutevar8x32_ps(
        v, _mm256_load_si256(reinterpret_cast<const __m256i*>(b.lane.data())));
    const __m256i set = _mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(bitmap[q]), bits), bits);
    _mm256_storeu_ps(dense + 8 * q, _mm256_blendv_ps(ones, moved, _mm256_castsi256_ps(set)));
    named += b.count;
  }
  return expand_tail(bitmap, values, stored, 8 * bytes, nnz, named, dense);
}
const bool kAvx2 = __builtin_cpu_supports("avx2");
#endif

}  // namespace

uint64_t expand_values_portable(const uint8_t* bitmap, const std::byte* stored_values,
                                uint64_t stored, uint64_t nnz, float* dense) {
  return expand_tail(bitmap, stored_values, stored, 0, nnz, 0, dense);
}

uint64_t expand_values(const uint8_t* bitmap, const std::byte* stored_values, uint64_t stored,
                       uint64_t nnz, float* dense) {
#if defined(__x86_64__)
  if (kAvx2) return expand_avx2(bitmap, stored_values, stored, nnz, dense);
#endif
  return expand_values_portable(bitmap, stored_values, stored, nnz, dense);
}

}  // namespace agld::format
