// The decoder's vector kernels against their definitions: expanding sparse values (the
// AVX2 path and the plain loop, including bitmaps that name more or fewer values than are
// stored), and un-transposing byte-shuffled indices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <random>
#include <vector>

#include "store/expand.hpp"
#include "store/format.hpp"

namespace agld::format {
namespace {

TEST(ExpandValues, MatchesTheDefinition) {
  const uint32_t seed = 7;
  std::printf("seed %u\n", seed);
  std::mt19937_64 rng(seed);
  for (uint64_t nnz = 0; nnz < 200; ++nnz) {
    for (double density : {0.0, 0.1, 0.5, 0.9, 1.0}) {
      std::bernoulli_distribution set(density);
      std::vector<uint8_t> bitmap((nnz + 7) / 8 + 1, 0);
      std::vector<float> expect(nnz);
      std::vector<float> stored;
      for (uint64_t p = 0; p < nnz; ++p) {
        if (set(rng)) {
          bitmap[p / 8] |= uint8_t(1u << (p % 8));
          stored.push_back(static_cast<float>(p) + 0.5f);
          expect[p] = stored.back();
        } else {
          expect[p] = 1.0f;
        }
      }
      // Bits past nnz in the last byte are not the chunk's: they must not count.
      if (nnz % 8) bitmap[nnz / 8] |= uint8_t(0xFF << (nnz % 8));
      for (int64_t change : {0, -1, 1}) {  // stored as named, one fewer, one more
        if (change == -1 && stored.empty()) continue;
        const uint64_t count = stored.size() + change;
        std::vector<std::byte> bytes(4 * count + kExpandOverread, std::byte{0x7f});
        std::copy_n(stored.begin(), std::min<uint64_t>(count, stored.size()),
                    reinterpret_cast<float*>(bytes.data()));
        std::vector<float> fast(nnz, -1), plain(nnz, -1);
        const uint64_t a = expand_values(bitmap.data(), bytes.data(), count, nnz, fast.data());
        const uint64_t b = expand_values_portable(bitmap.data(), bytes.data(), count, nnz, plain.data());
        ASSERT_EQ(a, stored.size()) << nnz;
        ASSERT_EQ(b, stored.size()) << nnz;
        if (change == 0) {
          ASSERT_EQ(fast, expect) << nnz << " " << density;
          ASSERT_EQ(plain, expect) << nnz << " " << density;
        }
      }
    }
  }
}

TEST(ByteShuffle4, UnshuffleInvertsShuffle) {
  const uint32_t seed = 11;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (uint64_t n = 0; n < 100; ++n) {
    std::vector<uint32_t> v(n);
    for (uint32_t& x : v) x = static_cast<uint32_t>(rng());
    std::vector<std::byte> planes(4 * n), back(4 * n);
    byte_shuffle4(reinterpret_cast<const std::byte*>(v.data()), planes.data(), n);
    for (uint64_t i = 0; i < n; ++i) {  // the definition: plane b holds byte b of each
      for (int b = 0; b < 4; ++b) {
        ASSERT_EQ(uint8_t(planes[b * n + i]), uint8_t(v[i] >> (8 * b))) << n;
      }
    }
    byte_unshuffle4(planes.data(), back.data(), n);
    std::vector<uint32_t> got(n);
    if (n > 0) std::memcpy(got.data(), back.data(), 4 * n);
    ASSERT_EQ(got, v) << n;
  }
}

}  // namespace
}  // namespace agld::format
