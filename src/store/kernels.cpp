#include "store/kernels.hpp"

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

// Nonzeros from p on, `named` stored values used so far: a select by masks, not a branch
// (the bits are as good as random). A bit past the stored values selects 1 (and the count
// tells the caller).
uint64_t expand_tail(const uint8_t* bitmap, const std::byte* values, uint64_t stored,
                     uint64_t p, uint64_t nnz, uint64_t named, float* dense) {
  for (; p < nnz; ++p) {
    const uint32_t bit = (bitmap[p >> 3] >> (p & 7)) & 1;
    const uint32_t mask = named < stored ? 0u - bit : 0u;
    const uint32_t v = stored ? load32(values + 4 * std::min(named, stored - 1)) : kOne;
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

// Eight nonzeros a step, while 8 stored values are left to load: load them, move each to
// its lane, put 1 in the lanes whose bit is clear. The rest by the plain loop.
__attribute__((target("avx2"))) uint64_t expand_avx2(const uint8_t* bitmap,
                                                     const std::byte* values, uint64_t stored,
                                                     uint64_t nnz, float* dense) {
  const __m256 ones = _mm256_set1_ps(1.0f);
  const __m256i bits = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
  uint64_t named = 0;
  const uint64_t bytes = nnz / 8;
  uint64_t q = 0;
  for (; q < bytes && named + 8 <= stored; ++q) {
    const Byte& b = kTable[bitmap[q]];
    const __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(values + 4 * named));
    const __m256 moved = _mm256_permutevar8x32_ps(
        v, _mm256_load_si256(reinterpret_cast<const __m256i*>(b.lane.data())));
    const __m256i set = _mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(bitmap[q]), bits), bits);
    _mm256_storeu_ps(dense + 8 * q, _mm256_blendv_ps(ones, moved, _mm256_castsi256_ps(set)));
    named += b.count;
  }
  return expand_tail(bitmap, values, stored, 8 * q, nnz, named, dense);
}

// Eight indices a step: idx[p] <= idx[p - 1] iff max(idx[p], idx[p - 1]) == idx[p - 1]
// (unsigned), counted in 32-bit lanes (each lane counts at most n / 8 < 2^32).
__attribute__((target("avx2"))) Falls falls_avx2(const uint32_t* idx, uint64_t n) {
  if (n == 0) return {};
  __m256i count = _mm256_setzero_si256(), top = _mm256_setzero_si256();
  uint64_t p = 1;
  for (; p + 8 <= n; p += 8) {
    const __m256i cur = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + p));
    const __m256i prev = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + p - 1));
    count = _mm256_sub_epi32(count, _mm256_cmpeq_epi32(_mm256_max_epu32(cur, prev), prev));
    top = _mm256_max_epu32(top, cur);
  }
  alignas(32) uint32_t c[8], t[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(c), count);
  _mm256_store_si256(reinterpret_cast<__m256i*>(t), top);
  Falls f;
  f.top = idx[0];
  for (int i = 0; i < 8; ++i) {
    f.falls += c[i];
    f.top = std::max(f.top, t[i]);
  }
  for (; p < n; ++p) {
    f.falls += idx[p] <= idx[p - 1];
    f.top = std::max(f.top, idx[p]);
  }
  return f;
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

Falls count_falls_portable(const uint32_t* idx, uint64_t n) {
  Falls f;
  if (n == 0) return f;
  f.top = idx[0];
  for (uint64_t p = 1; p < n; ++p) {
    f.falls += idx[p] <= idx[p - 1];
    f.top = std::max(f.top, idx[p]);
  }
  return f;
}

Falls count_falls(const uint32_t* idx, uint64_t n) {
#if defined(__x86_64__)
  if (kAvx2) return falls_avx2(idx, n);
#endif
  return count_falls_portable(idx, n);
}

// All exponent bits set (infinity, NaN) iff adding 1 to the exponent field carries into the
// sign bit: an OR of such sums over the array, which the compiler vectorizes.
bool any_nonfinite_floats(const std::byte* p, uint64_t n) {
  uint32_t acc = 0;
  for (uint64_t i = 0; i < n; ++i) acc |= (load32(p + 4 * i) & 0x7f800000u) + 0x00800000u;
  return (acc >> 31) != 0;
}

bool any_nonfinite_doubles(const std::byte* p, uint64_t n) {
  uint64_t acc = 0;
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t v;
    std::memcpy(&v, p + 8 * i, 8);
    acc |= (v & 0x7ff0000000000000ull) + 0x0010000000000000ull;
  }
  return (acc >> 63) != 0;
}

}  // namespace agld::format
