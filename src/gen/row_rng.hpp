// agld gen's counter-based randomness: every row draws from its own splitmix64 stream,
// keyed by (seed, row index), and every weight from a hash of (seed, feature index), so that
// the bytes do not depend on which thread draws what, or when.
#pragma once

#include <cstdint>

#include "common/mix.hpp"

namespace agld::gen {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;

// Independent keys for the streams derived from one seed. Persistent: changing a tag
// changes every generated file.
constexpr uint64_t kRowsTag = 0x524f5753;     // "ROWS"
constexpr uint64_t kPilotTag = 0x50494c54;    // "PILT"
constexpr uint64_t kWeightsTag = 0x57474854;  // "WGHT"

inline uint64_t stream_key(uint64_t seed, uint64_t tag) {
  return fmix64(fmix64(seed + kGolden) ^ (tag * kGolden));
}
inline uint64_t hash2(uint64_t key, uint64_t i) { return fmix64(key ^ fmix64((i + 1) * kGolden)); }

// (0, 1), never 0 or 1, from the top 53 bits.
inline double to_unit(uint64_t x) { return (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53; }

// splitmix64: one stream per row, started at hash2(key, row).
class RowRng {
 public:
  explicit RowRng(uint64_t state) : s_(state) {}
  uint64_t next() {
    s_ += kGolden;
    return fmix64(s_);
  }
  double uniform() { return to_unit(next()); }

 private:
  uint64_t s_;
};

}  // namespace agld::gen
