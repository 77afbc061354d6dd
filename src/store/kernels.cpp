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

// A value table's codes (VALUE_DICT): u16 each, or (PACKED_PLANES) two byte planes.
struct U16Codes {
  const std::byte* codes;
  uint32_t at(uint64_t i) const {
    uint16_t code;
    std::memcpy(&code, codes + 2 * i, 2);
    return code;
  }
};
struct PlaneCodes {
  const uint8_t *lo, *hi;
  uint32_t at(uint64_t i) const { return lo[i] | uint32_t{hi[i]} << 8; }
};

// Codes i from `from` on, each clamped to the table; whether any was not.
template <typename Codes>
bool dict_from(const Codes& codes, uint64_t from, uint64_t n, const float* table, uint64_t size,
               float* out) {
  bool bad = false;
  for (uint64_t i = from; i < n; ++i) {
    const uint32_t code = codes.at(i);
    bad |= code >= size;
    out[i] = table[std::min<uint64_t>(code, size - 1)];
  }
  return bad;
}

// The bits set among bits [64 q, n) of a bitmap.
uint64_t bits_from(const uint8_t* bitmap, uint64_t q, uint64_t n) {
  uint64_t count = 0;
  for (uint64_t p = 64 * q; p < n; ++p) count += (bitmap[p >> 3] >> (p & 7)) & 1;
  return count;
}

// Element i of a packed plane (format::pack_plane) of width w = 1, 2 or 4, from `from` on.
void unpack_from(const uint8_t* packed, uint64_t from, uint64_t n, unsigned w, uint8_t* out) {
  const unsigned per = 8 / w, mask = (1u << w) - 1;
  for (uint64_t i = from; i < n; ++i) {
    out[i] = static_cast<uint8_t>(packed[i / per] >> (w * (i % per)) & mask);
  }
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
__attribute__((target("avx2"), always_inline)) inline __m256i load8(const U16Codes& c, uint64_t i) {
  return _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(c.codes + 2 * i)));
}
__attribute__((target("avx2"), always_inline)) inline __m256i load8(const PlaneCodes& c,
                                                                  uint64_t i) {
  const __m256i lo = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c.lo + i)));
  const __m256i hi = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(c.hi + i)));
  return _mm256_or_si256(lo, _mm256_slli_epi32(hi, 8));
}
template <typename Codes>
__attribute__((target("avx2"))) bool dict_avx2(const Codes& codes, uint64_t n, const float* table,
                                                uint64_t size, float* out) {
  const __m256i last = _mm256_set1_epi32(static_cast<int>(size - 1));
  __m256i over = _mm256_setzero_si256();
  uint64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256i c = load8(codes, i);
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
__attribute__((target("avx2"))) Falls unshuffle_falls_avx2(const Planes4& src, uint32_t* dst,
                                                            uint64_t n) {
  const auto* s0 = reinterpret_cast<const uint8_t*>(src[0]);
  const auto* s1 = reinterpret_cast<const uint8_t*>(src[1]);
  const auto* s2 = reinterpret_cast<const uint8_t*>(src[2]);
  const auto* s3 = reinterpret_cast<const uint8_t*>(src[3]);
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
  for (uint64_t j = i; j < n; ++j) dst[j] = unshuffled4(src, j);
  return falls_from(dst, i, n, falls_lanes(acc));
}

// A popcnt instruction a 64-bit word (the portable std::popcount is a library call).
__attribute__((target("popcnt"))) uint64_t bits_popcnt(const uint8_t* bitmap, uint64_t n) {
  uint64_t count = 0, q = 0;
  for (; 64 * (q + 1) <= n; ++q) {
    uint64_t word;
    std::memcpy(&word, bitmap + 8 * q, 8);
    count += static_cast<uint64_t>(__builtin_popcountll(word));
  }
  return count + bits_from(bitmap, q, n);
}

const bool kAvx2 = __builtin_cpu_supports("avx2");
const bool kPopcnt = __builtin_cpu_supports("popcnt");
#endif

#if defined(__SSE2__)
// 16 packed bytes a step (32 elements of 4 bits, 64 of 2): each byte's fields masked out
// into planes of their own, which are then interleaved as byte_unshuffle4 does.
uint64_t unpack_sse2(const uint8_t* packed, uint64_t n, unsigned w, uint8_t* out) {
  uint64_t i = 0;
  if (w == 4) {
    const __m128i m = _mm_set1_epi8(0x0f);
    for (; i + 32 <= n; i += 32) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + i / 2));
      const __m128i a0 = _mm_and_si128(x, m), a1 = _mm_and_si128(_mm_srli_epi16(x, 4), m);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i), _mm_unpacklo_epi8(a0, a1));
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i + 16), _mm_unpackhi_epi8(a0, a1));
    }
  } else if (w == 2) {
    const __m128i m = _mm_set1_epi8(0x03);
    for (; i + 64 <= n; i += 64) {
      const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(packed + i / 4));
      const __m128i a0 = _mm_and_si128(x, m), a1 = _mm_and_si128(_mm_srli_epi16(x, 2), m);
      const __m128i a2 = _mm_and_si128(_mm_srli_epi16(x, 4), m);
      const __m128i a3 = _mm_and_si128(_mm_srli_epi16(x, 6), m);
      const __m128i lo01 = _mm_unpacklo_epi8(a0, a1), hi01 = _mm_unpackhi_epi8(a0, a1);
      const __m128i lo23 = _mm_unpacklo_epi8(a2, a3), hi23 = _mm_unpackhi_epi8(a2, a3);
      auto* o = reinterpret_cast<__m128i*>(out + i);
      _mm_storeu_si128(o + 0, _mm_unpacklo_epi16(lo01, lo23));
      _mm_storeu_si128(o + 1, _mm_unpackhi_epi16(lo01, lo23));
      _mm_storeu_si128(o + 2, _mm_unpacklo_epi16(hi01, hi23));
      _mm_storeu_si128(o + 3, _mm_unpackhi_epi16(hi01, hi23));
    }
  }
  return i;
}
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
  return !dict_from(U16Codes{codes}, 0, n, table, size, out);
}

bool decode_dict(const std::byte* codes, uint64_t n, const float* table, uint64_t size, float* out) {
#if defined(__x86_64__)
  if (kAvx2) return dict_avx2(U16Codes{codes}, n, table, size, out);
#endif
  return decode_dict_portable(codes, n, table, size, out);
}

bool decode_dict_planes_portable(const std::byte* lo, const std::byte* hi, uint64_t n,
                                 const float* table, uint64_t size, float* out) {
  const PlaneCodes codes{reinterpret_cast<const uint8_t*>(lo), reinterpret_cast<const uint8_t*>(hi)};
  return !dict_from(codes, 0, n, table, size, out);
}

bool decode_dict_planes(const std::byte* lo, const std::byte* hi, uint64_t n, const float* table,
                        uint64_t size, float* out) {
#if defined(__x86_64__)
  if (kAvx2) {
    const PlaneCodes codes{reinterpret_cast<const uint8_t*>(lo), reinterpret_cast<const uint8_t*>(hi)};
    return dict_avx2(codes, n, table, size, out);
  }
#endif
  return decode_dict_planes_portable(lo, hi, n, table, size, out);
}

void unpack_plane_portable(const std::byte* packed, uint64_t n, unsigned w, std::byte* out) {
  unpack_from(reinterpret_cast<const uint8_t*>(packed), 0, n, w, reinterpret_cast<uint8_t*>(out));
}

void unpack_plane(const std::byte* packed, uint64_t n, unsigned w, std::byte* out) {
  const auto* p = reinterpret_cast<const uint8_t*>(packed);
  auto* o = reinterpret_cast<uint8_t*>(out);
  uint64_t i = 0;
  if (w == 1) {
    // A byte's 8 bits to 8 bytes: copied to each byte, bit k kept in byte k, then each byte
    // made 0 or 1 (adding 0x7f carries into its top bit iff it is not 0, never past it).
    for (; i + 8 <= n; i += 8) {
      const uint64_t x = (p[i / 8] * 0x0101010101010101ull) & 0x8040201008040201ull;
      const uint64_t bytes = ((x + 0x7f7f7f7f7f7f7f7full) >> 7) & 0x0101010101010101ull;
      std::memcpy(o + i, &bytes, 8);
    }
  }
#if defined(__SSE2__)
  if (w != 1) i = unpack_sse2(p, n, w, o);
#endif
  unpack_from(p, i, n, w, o);
}

uint64_t bits_set_portable(const uint8_t* bitmap, uint64_t n) { return bits_from(bitmap, 0, n); }

uint64_t bits_set(const uint8_t* bitmap, uint64_t n) {
#if defined(__x86_64__)
  if (kPopcnt) return bits_popcnt(bitmap, n);
#endif
  return bits_set_portable(bitmap, n);
}

Falls count_falls_portable(const uint32_t* idx, uint64_t n) { return falls_from(idx, 0, n, {}); }

Falls count_falls(const uint32_t* idx, uint64_t n) {
#if defined(__x86_64__)
  if (kAvx2) return falls_avx2(idx, n);
#endif
  return count_falls_portable(idx, n);
}

Falls unshuffle4_count_falls_portable(const Planes4& src, uint32_t* dst, uint64_t n) {
  byte_unshuffle4(src, reinterpret_cast<std::byte*>(dst), n);
  return count_falls_portable(dst, n);
}

Falls unshuffle4_count_falls(const Planes4& src, uint32_t* dst, uint64_t n) {
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
