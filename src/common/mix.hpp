// Counter-based randomness shared by every layer: splitmix64's step and finaliser. Seeded
// orders, shuffles, splits and generated data derive their bits from these, so results
// depend on (seed, counter) alone, never on threads or timing. Persistent: changing them
// changes every shuffled store, access order and generated file.
#pragma once

#include <cstdint>

namespace agld {

// splitmix64's finaliser: a bijection of 64-bit words that mixes every bit.
inline uint64_t fmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// One splitmix64 step: the finaliser of x plus the golden-ratio increment.
inline uint64_t mix64(uint64_t x) { return fmix64(x + 0x9E3779B97F4A7C15ull); }

}  // namespace agld
