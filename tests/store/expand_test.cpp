// Expanding sparse values: the vector path against the plain loop, and against the
// definition, including bitmaps that name more or fewer values than are stored.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "store/expand.hpp"

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
        std::memcpy(bytes.data(), stored.data(), 4 * std::min<uint64_t>(count, stored.size()));
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

}  // namespace
}  // namespace agld::format
