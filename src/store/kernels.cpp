#include "store/kernels.hpp"

#include <algorithm>
#include <array>
#include <cstring>

#include "store/format.hpp"

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

// Codes i from `from` on (u16 at codes + 2 i), each clamped to the table; whether any was not.
bool dict_from(const std::byte* codes, uint64_t from, uint64_t n, const float* table,
               uint64_t size, float* out) {
  bool bad = false;
  for (uint64_t i = from; i < n; ++i) {
    uint16_t code;
    std::memcpy(&code, codes + 2 * i, 2);
    bad |= code >= size;
    out[i] = table[std::min<uint64_t>(code, size - 1)];
  }
  return bad;
}

// Continues f over idx[p, n): a fall where idx[q] <= idx[q - 1] (q > 0), and the largest.
Falls falls_from(const uint32_t* idx, uint64_t p, uint64_t n, Falls f) {
  for (; p < n; ++p) {
    if (p > 0) f.falls += idx[p] <= idx[p - 1];
    f.top = std::max(f.top, idx[p]);
  }
  return f;
}

#if defined(__x86_64__)
// The decoded chunk is written where no cache holds it, and read by the consumer only after
// the chunks ahead of it in the ring (megabytes later): from memory either way. Streaming
// (non-temporal) stores write it without first reading every line in (read for ownership),
// which halves the memory traffic of these loops; they need 32-byte aligned destinations
// (DecodedChunk's arrays are), and an sfence before the data is handed to another thread.
__attribute__((target("avx2"), always_inline)) inline void put(__m256i* p, __m256i v,
                                                                bool stream) {
  if (stream) {
    _mm256_stream_si256(p, v);
  } else {
    _mm256_storeu_si256(p, v);
  }
}
bool aligned32(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 31) == 0; }

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
  const bool stream = aligned32(dense);
  uint64_t q = 0;
  for (; q < bytes && named + 8 <= stored; ++q) {
    const Byte& b = kTable[bitmap[q]];
    const __m256 v = _mm256_loadu_ps(reinterpret_cast<const float*>(values + 4 * named));
    const __m256 moved = _mm256_permutevar8x32_ps(
        v, _mm256_load_si256(reinterpret_cast<const __m256i*>(b.lane.data())));
    const __m256i set = _mm256_cmpeq_epi32(
        _mm256_and_si256(_mm256_set1_epi32(bitmap[q]), bits), bits);
    put(reinterpret_cast<__m256i*>(dense + 8 * q),
        _mm256_castps_si256(_mm256_blendv_ps(ones, moved, _mm256_castsi256_ps(set))), stream);
    named += b.count;
  }
  if (stream) _mm_sfence();
  return expand_tail(bitmap, values, stored, 8 * q, nnz, named, dense);
}

// Eight codes a step: widened to 32 bits, clamped to the table, gathered.
__attribute__((target("avx2"))) bool dict_avx2(const std::byte* codes, uint64_t n,
                                                const float* table, uint64_t size, float* out) {
  const __m256i last = _mm256_set1_epi32(static_cast<int>(size - 1));
  __m256i over = _mm256_setzero_si256();
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c = _mm256_cvtepu16_epi32(
        _mm_loadu_si128(reinterpret_cast<const __m128i*>(codes + 2 * i)));
    over = _mm256_or_si256(over, _mm256_cmpgt_epi32(c, last));
    _mm256_storeu_ps(out + i, _mm256_i32gather_ps(table, _mm256_min_epu32(c, last), 4));
  }
  const bool bad = dict_from(codes, i, n, table, size, out);
  return !(bad || !_mm256_testz_si256(over, over));
}

// Falls and the largest index over groups of 8 indices in order: each group compared with
// itself moved up one lane, the lane moved in being the last index of the group before.
struct FallsAvx2 {
  __m256i count, top;
  __m256i last;  // lane 0: the index before the next group
};
__attribute__((target("avx2"), always_inline)) inline void falls_group(FallsAvx2& a, __m256i v,
                                                                       bool first) {
  const __m256i up = _mm256_setr_epi32(7, 0, 1, 2, 3, 4, 5, 6);
  const __m256i rot = _mm256_permutevar8x32_epi32(v, up);
  const __m256i prev = _mm256_blend_epi32(rot, a.last, 0x01);
  __m256i le = _mm256_cmpeq_epi32(_mm256_max_epu32(v, prev), prev);
  if (first) le = _mm256_blend_epi32(le, _mm256_setzero_si256(), 0x01);  // no index before
  a.count = _mm256_sub_epi32(a.count, le);
  a.top = _mm256_max_epu32(a.top, v);
  a.last = rot;
}

// What the lanes counted (each lane counts at most n / 8 < 2^32 falls).
__attribute__((target("avx2"))) Falls falls_lanes(const FallsAvx2& a) {
  alignas(32) uint32_t c[8], t[8];
  _mm256_store_si256(reinterpret_cast<__m256i*>(c), a.count);
  _mm256_store_si256(reinterpret_cast<__m256i*>(t), a.top);
  Falls f;
  for (int k = 0; k < 8; ++k) {
    f.falls += c[k];
    f.top = std::max(f.top, t[k]);
  }
  return f;
}

// Eight indices a step; unsigned: idx[p] <= idx[p - 1] iff max(idx[p], idx[p - 1]) is idx[p - 1].
__attribute__((target("avx2"))) Falls falls_avx2(const uint32_t* idx, uint64_t n) {
  FallsAvx2 acc{_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  uint64_t p = 0;
  for (; p + 8 <= n; p += 8) {
    falls_group(acc, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(idx + p)), p == 0);
  }
  return falls_from(idx, p, n, falls_lanes(acc));
}

// 32 indices a step: the four byte planes interleaved (within 128-bit lanes, then the lanes
// put in order), stored, and their falls counted while in registers.
__attribute__((target("avx2"))) Falls unshuffle_falls_avx2(const std::byte* src, uint32_t* dst,
                                                            uint64_t n) {
  const auto* s0 = reinterpret_cast<const uint8_t*>(src);
  const uint8_t *s1 = s0 + n, *s2 = s1 + n, *s3 = s2 + n;
  FallsAvx2 acc{_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256()};
  const bool stream = aligned32(dst);
  uint64_t i = 0;
  for (; i + 32 <= n; i += 32) {
    const __m256i a0 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s0 + i));
    const __m256i a1 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s1 + i));
    const __m256i a2 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s2 + i));
    const __m256i a3 = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(s3 + i));
    const __m256i lo01 = _mm256_unpacklo_epi8(a0, a1), hi01 = _mm256_unpackhi_epi8(a0, a1);
    const __m256i lo23 = _mm256_unpacklo_epi8(a2, a3), hi23 = _mm256_unpackhi_epi8(a2, a3);
    const __m256i q0 = _mm256_unpacklo_epi16(lo01, lo23), q1 = _mm256_unpackhi_epi16(lo01, lo23);
    const __m256i q2 = _mm256_unpacklo_epi16(hi01, hi23), q3 = _mm256_unpackhi_epi16(hi01, hi23);
    const __m256i v0 = _mm256_permute2x128_si256(q0, q1, 0x20);  // indices i .. i + 7
    const __m256i v1 = _mm256_permute2x128_si256(q2, q3, 0x20);  // i + 8 .. i + 15
    const __m256i v2 = _mm256_permute2x128_si256(q0, q1, 0x31);  // i + 16 .. i + 23
    const __m256i v3 = _mm256_permute2x128_si256(q2, q3, 0x31);  // i + 24 .. i + 31
    auto* out = reinterpret_cast<__m256i*>(dst + i);
    put(out + 0, v0, stream);
    put(out + 1, v1, stream);
    put(out + 2, v2, stream);
    put(out + 3, v3, stream);
    falls_group(acc, v0, i == 0);
    falls_group(acc, v1, false);
    falls_group(acc, v2, false);
    falls_group(acc, v3, false);
  }
  if (stream) _mm_sfence();
  for (uint64_t j = i; j < n; ++j) dst[j] = unshuffled4(src, n, j);
  return falls_from(dst, i, n, falls_lanes(acc));
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

bool decode_dict_portable(const std::byte* codes, uint64_t n, const float* table, uint64_t size,
                          float* out) {
  return !dict_from(codes, 0, n, table, size, out);
}

bool decode_dict(const std::byte* codes, uint64_t n, const float* table, uint64_t size, float* out) {
#if defined(__x86_64__)
  if (kAvx2) return dict_avx2(codes, n, table, size, out);
#endif
  return decode_dict_portable(codes, n, table, size, out);
}

Falls count_falls_portable(const uint32_t* idx, uint64_t n) { return falls_from(idx, 0, n, {}); }

Falls count_falls(const uint32_t* idx, uint64_t n) {
#if defined(__x86_64__)
  if (kAvx2) return falls_avx2(idx, n);
#endif
  return count_falls_portable(idx, n);
}

Falls unshuffle4_count_falls_portable(const std::byte* src, uint32_t* dst, uint64_t n) {
  byte_unshuffle4(src, reinterpret_cast<std::byte*>(dst), n);
  return count_falls_portable(dst, n);
}

Falls unshuffle4_count_falls(const std::byte* src, uint32_t* dst, uint64_t n) {
#if defined(__x86_64__)
  if (kAvx2) return unshuffle_falls_avx2(src, dst, n);
#endif
  return unshuffle4_count_falls_portable(src, dst, n);
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
