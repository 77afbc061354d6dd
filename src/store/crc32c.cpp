#include "store/crc32c.hpp"

#include <boost/crc.hpp>
#include <cstring>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

namespace agld::crc32c {
namespace {

using BoostCrc32c = boost::crc_optimal<32, 0x1EDC6F41, 0xFFFFFFFF, 0xFFFFFFFF, true, true>;

uint32_t extend_portable(uint32_t crc, const void* data, size_t n) {
  // crc_optimal's initial remainder is the state before the final xor.
  BoostCrc32c c(crc ^ 0xFFFFFFFFu);
  c.process_bytes(data, n);
  return c.checksum();
}

#if defined(__x86_64__)
// One crc32 instruction per 8 bytes: latency 3 cycles, throughput 1, so three independent
// streams over three consecutive blocks of kBlock bytes run about 3x faster than one; the
// three are then joined by linearity: the state after A then B is shift(state after A)
// xor (B's CRC from state 0), shift being kBlock zero bytes fed through the CRC, a linear
// map of the 32-bit state applied by four 256-entry tables.
constexpr size_t kBlock = 2048;

__attribute__((target("sse4.2"))) uint32_t extend_one(uint32_t c, const unsigned char* p,
                                                      size_t n) {
  uint64_t c64 = c;
  for (; n >= 8; p += 8, n -= 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    c64 = _mm_crc32_u64(c64, word);
  }
  auto c32 = static_cast<uint32_t>(c64);
  for (; n > 0; --n) c32 = _mm_crc32_u8(c32, *p++);
  return c32;
}

struct Shift {
  uint32_t table[4][256];
};

__attribute__((target("sse4.2"))) Shift make_shift() {
  static const unsigned char zeros[kBlock] = {};
  uint32_t basis[32];
  for (int b = 0; b < 32; ++b) basis[b] = extend_one(uint32_t{1} << b, zeros, kBlock);
  Shift s{};
  for (int k = 0; k < 4; ++k) {
    for (uint32_t v = 0; v < 256; ++v) {
      uint32_t out = 0;
      for (int b = 0; b < 8; ++b) {
        if (v & (1u << b)) out ^= basis[8 * k + b];
      }
      s.table[k][v] = out;
    }
  }
  return s;
}

uint32_t shift(const Shift& s, uint32_t c) {
  return s.table[0][c & 0xff] ^ s.table[1][(c >> 8) & 0xff] ^ s.table[2][(c >> 16) & 0xff] ^
         s.table[3][c >> 24];
}

__attribute__((target("sse4.2"))) uint32_t extend_sse42(uint32_t crc, const void* data,
                                                        size_t n) {
  static const Shift kShift = make_shift();
  auto p = static_cast<const unsigned char*>(data);
  uint32_t c = crc ^ 0xFFFFFFFFu;
  for (; n >= 3 * kBlock; p += 3 * kBlock, n -= 3 * kBlock) {
    uint64_t c0 = c, c1 = 0, c2 = 0;
    for (size_t i = 0; i < kBlock; i += 8) {
      uint64_t a, b, d;
      std::memcpy(&a, p + i, 8);
      std::memcpy(&b, p + kBlock + i, 8);
      std::memcpy(&d, p + 2 * kBlock + i, 8);
      c0 = _mm_crc32_u64(c0, a);
      c1 = _mm_crc32_u64(c1, b);
      c2 = _mm_crc32_u64(c2, d);
    }
    c = shift(kShift, shift(kShift, static_cast<uint32_t>(c0)) ^ static_cast<uint32_t>(c1)) ^
        static_cast<uint32_t>(c2);
  }
  return extend_one(c, p, n) ^ 0xFFFFFFFFu;
}
const bool kHardware = __builtin_cpu_supports("sse4.2");
#else
const bool kHardware = false;
#endif

}  // namespace

bool hardware_available() { return kHardware; }

uint32_t extend(uint32_t crc, const void* data, size_t n) {
#if defined(__x86_64__)
  if (kHardware) return extend_sse42(crc, data, n);
#endif
  return extend_portable(crc, data, n);
}

uint32_t value(const void* data, size_t n) { return extend(0, data, n); }

uint32_t value_portable(const void* data, size_t n) { return extend_portable(0, data, n); }

}  // namespace agld::crc32c
