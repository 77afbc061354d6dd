// The decoder's vector kernels against their definitions: expanding sparse values (the
// AVX2 path and the plain loop, including bitmaps that name more or fewer values than are
// stored, reading no byte past the stored values), un-transposing byte-shuffled indices,
// counting where indices do not increase, finding non-finite values, looking values up in a
// chunk's value table (codes u16 or in byte planes), packing and unpacking byte planes.
// Destinations both 32-byte aligned (streaming stores) and not.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "store/kernels.hpp"
#include "store/format.hpp"

namespace agld::format {
namespace {
namespace kernels_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// n elements of T at `shift` elements past a 32-byte boundary: the kernels write 32-byte
// aligned destinations with streaming stores, others with plain ones.
template <typename T>
struct Placed {
  Placed(size_t n, size_t shift, T fill) : mem(n + shift + 32 / sizeof(T)) {
    auto a = reinterpret_cast<uintptr_t>(mem.data());
    at = reinterpret_cast<T*>((a + 31) / 32 * 32) + shift;
    std::fill_n(at, n, fill);
    size = n;
  }
  std::vector<T> get() const { return std::vector<T>(at, at + size); }
  std::vector<T> mem;
  T* at;
  size_t size;
};

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
        std::vector<std::byte> bytes(4 * count);
        std::copy_n(stored.begin(), std::min<uint64_t>(count, stored.size()),
                    reinterpret_cast<float*>(bytes.data()));
        for (size_t shift : {0, 1}) {
          Placed<float> fast(nnz, shift, -1);
          std::vector<float> plain(nnz, -1);
          const uint64_t a = expand_values(bitmap.data(), bytes.data(), count, nnz, fast.at);
          const uint64_t b =
              expand_values_portable(bitmap.data(), bytes.data(), count, nnz, plain.data());
          ASSERT_EQ(a, stored.size()) << nnz;
          ASSERT_EQ(b, stored.size()) << nnz;
          if (change == 0) {
            ASSERT_EQ(fast.get(), expect) << nnz << " " << density << " " << shift;
            ASSERT_EQ(plain, expect) << nnz << " " << density;
          }
        }
      }
    }
  }
}

TEST(DecodeDict, MatchesTheDefinition) {
  // Every n to 100 (the 8-wide steps and the tails), codes at odd addresses, tables of 1 to
  // 300 entries, and a code past the table at each place in turn.
  const uint32_t seed = 23;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (uint64_t size : {1, 2, 7, 300}) {
    std::vector<float> table(size);
    for (uint64_t t = 0; t < size; ++t) table[t] = 0.5f * static_cast<float>(t) - 3.0f;
    for (uint64_t n = 0; n <= 100; ++n) {
      std::vector<uint16_t> codes(n);
      for (auto& c : codes) c = static_cast<uint16_t>(rng() % size);
      for (int64_t bad_at = -1; bad_at < static_cast<int64_t>(n); ++bad_at) {
        if (bad_at >= 0 && n > 20 && bad_at % 7 != 0) continue;  // a sample of places
        std::vector<uint16_t> c = codes;
        if (bad_at >= 0) c[bad_at] = static_cast<uint16_t>(size + rng() % 1000);
        std::vector<std::byte> bytes(1 + 2 * n);  // at an odd address
        if (n > 0) std::memcpy(bytes.data() + 1, c.data(), 2 * n);
        std::vector<float> fast(n, -1), plain(n, -1), expect(n);
        for (uint64_t i = 0; i < n; ++i) expect[i] = table[std::min<uint64_t>(c[i], size - 1)];
        const bool a = decode_dict(bytes.data() + 1, n, table.data(), size, fast.data());
        const bool b = decode_dict_portable(bytes.data() + 1, n, table.data(), size, plain.data());
        ASSERT_EQ(a, bad_at < 0) << size << " " << n << " " << bad_at;
        ASSERT_EQ(b, bad_at < 0) << size << " " << n << " " << bad_at;
        ASSERT_EQ(fast, expect) << size << " " << n << " " << bad_at;
        ASSERT_EQ(plain, expect) << size << " " << n << " " << bad_at;
      }
    }
  }
}

TEST(DecodeDictPlanes, MatchesTheDefinition) {
  // Codes as two byte planes (PACKED_PLANES): code i = lo[i] | hi[i] << 8; every n to 100,
  // planes at odd addresses, tables of 1 to 700 entries (codes past 255), and a code past
  // the table at each place in turn.
  const uint32_t seed = 29;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (uint64_t size : {1, 5, 256, 700}) {
    std::vector<float> table(size);
    for (uint64_t t = 0; t < size; ++t) table[t] = 0.25f * static_cast<float>(t) + 1.5f;
    for (uint64_t n = 0; n <= 100; ++n) {
      for (int64_t bad_at = -1; bad_at < static_cast<int64_t>(n); ++bad_at) {
        if (bad_at >= 0 && n > 20 && bad_at % 5 != 0) continue;
        std::vector<uint16_t> c(n);
        for (auto& x : c) x = static_cast<uint16_t>(rng() % size);
        if (bad_at >= 0) c[bad_at] = static_cast<uint16_t>(size + rng() % 1000);
        std::vector<std::byte> lo(1 + n), hi(1 + n);
        for (uint64_t i = 0; i < n; ++i) {
          lo[1 + i] = static_cast<std::byte>(c[i] & 0xff);
          hi[1 + i] = static_cast<std::byte>(c[i] >> 8);
        }
        std::vector<float> fast(n, -1), plain(n, -1), expect(n);
        for (uint64_t i = 0; i < n; ++i) expect[i] = table[std::min<uint64_t>(c[i], size - 1)];
        const bool a = decode_dict_planes(lo.data() + 1, hi.data() + 1, n, table.data(), size, fast.data());
        const bool b =
            decode_dict_planes_portable(lo.data() + 1, hi.data() + 1, n, table.data(), size, plain.data());
        ASSERT_EQ(a, bad_at < 0) << size << " " << n << " " << bad_at;
        ASSERT_EQ(b, bad_at < 0) << size << " " << n << " " << bad_at;
        ASSERT_EQ(fast, expect) << size << " " << n << " " << bad_at;
        ASSERT_EQ(plain, expect) << size << " " << n << " " << bad_at;
      }
    }
  }
}

TEST(BitsSet, MatchesTheDefinition) {
  // Every n to 300 (whole words and the bits after them), at an odd address; bits past n
  // set too, which must not count.
  const uint32_t seed = 37;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (uint64_t n = 0; n <= 300; ++n) {
    std::vector<uint8_t> bytes(1 + (n + 7) / 8 + 8);
    for (auto& b : bytes) b = static_cast<uint8_t>(rng());
    uint64_t expect = 0;
    for (uint64_t p = 0; p < n; ++p) expect += (bytes[1 + p / 8] >> (p % 8)) & 1;
    ASSERT_EQ(bits_set(bytes.data() + 1, n), expect) << n;
    ASSERT_EQ(bits_set_portable(bytes.data() + 1, n), expect) << n;
  }
}

TEST(PackedPlanes, WidthIsTheLeastThatHolds) {
  EXPECT_EQ(plane_width(0), 0u);
  EXPECT_EQ(plane_width(1), 1u);
  EXPECT_EQ(plane_width(2), 2u);
  EXPECT_EQ(plane_width(3), 2u);
  EXPECT_EQ(plane_width(4), 4u);
  EXPECT_EQ(plane_width(15), 4u);
  EXPECT_EQ(plane_width(16), 8u);
  EXPECT_EQ(plane_width(255), 8u);
  for (unsigned w = 0; w < 16; ++w) EXPECT_EQ(plane_width_valid(w), w <= 2 || w == 4 || w == 8) << w;
}

TEST(PackedPlanes, UnpackInvertsPack) {
  // Every width below 8, n to 300 (the 16-byte steps and their tails), at odd addresses:
  // the packed bits as defined (element i at bits w (i mod 8/w) of byte i / (8/w)), and both
  // unpackers giving the plane back.
  const uint32_t seed = 31;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (unsigned w : {1u, 2u, 4u}) {
    for (uint64_t n = 0; n <= 300; ++n) {
      std::vector<std::byte> plane(n);
      for (auto& x : plane) x = static_cast<std::byte>(rng() % (1u << w));
      std::vector<std::byte> packed(1 + packed_plane_size(n, w), std::byte{0xEE});
      pack_plane(plane.data(), n, w, packed.data() + 1);
      ASSERT_EQ(packed_plane_size(n, w), (n * w + 7) / 8);
      const unsigned per = 8 / w;
      for (uint64_t i = 0; i < n; ++i) {
        const unsigned got = (static_cast<unsigned>(packed[1 + i / per]) >> (w * (i % per))) & ((1u << w) - 1);
        ASSERT_EQ(got, static_cast<unsigned>(plane[i])) << w << " " << n << " " << i;
      }
      for (uint64_t j = n; j < per * packed_plane_size(n, w); ++j) {  // unused bits are 0
        ASSERT_EQ((static_cast<unsigned>(packed[1 + j / per]) >> (w * (j % per))) & ((1u << w) - 1), 0u);
      }
      std::vector<std::byte> fast(1 + n, std::byte{0x77}), plain(1 + n, std::byte{0x77});
      unpack_plane(packed.data() + 1, n, w, fast.data() + 1);
      unpack_plane_portable(packed.data() + 1, n, w, plain.data() + 1);
      ASSERT_EQ(std::vector<std::byte>(fast.begin() + 1, fast.end()), plane) << w << " " << n;
      ASSERT_EQ(std::vector<std::byte>(plain.begin() + 1, plain.end()), plane) << w << " " << n;
      ASSERT_EQ(fast[0], std::byte{0x77});
    }
  }
}

TEST(PackedPlanes, ColumnWrittenAndParsed) {
  // Four planes of 37 elements needing 8, 0, 3 (so 4) and 1 bits: written, then parsed back
  // to the same widths and planes; what does not fit is named.
  const uint64_t n = 37;
  std::vector<std::byte> planes(4 * n);
  for (uint64_t i = 0; i < n; ++i) {
    planes[i] = static_cast<std::byte>(200 + i % 50);
    planes[2 * n + i] = static_cast<std::byte>(i % 6);
    planes[3 * n + i] = static_cast<std::byte>(i % 2);
  }
  unsigned widths[4];
  plane_widths(planes.data(), 4, n, widths);
  EXPECT_EQ(std::vector<unsigned>(widths, widths + 4), (std::vector<unsigned>{8, 0, 4, 1}));
  const uint64_t size = packed_column_size(widths, 4, n);
  EXPECT_EQ(size, 4u + 37 + 0 + 19 + 5);
  std::vector<std::byte> col(size + 3);
  ASSERT_EQ(write_packed_column(planes.data(), widths, 4, n, col.data()), size);
  PackedColumn pc;
  ASSERT_EQ(parse_packed_column(col.data(), size, 4, n, &pc), "");
  EXPECT_EQ(pc.size, size);
  EXPECT_EQ(pc.plane[1], nullptr);
  for (unsigned b : {0u, 2u, 3u}) {
    EXPECT_EQ(pc.width[b], widths[b]);
    std::vector<std::byte> back(n);
    if (pc.width[b] == 8) {
      std::memcpy(back.data(), pc.plane[b], n);
    } else {
      unpack_plane(pc.plane[b], n, pc.width[b], back.data());
    }
    EXPECT_EQ(back, std::vector<std::byte>(planes.begin() + b * n, planes.begin() + (b + 1) * n)) << b;
  }
  EXPECT_NE(parse_packed_column(col.data(), size - 1, 4, n, &pc).find("past the chunk"), std::string::npos);
  EXPECT_NE(parse_packed_column(col.data(), 3, 4, n, &pc).find("no room for its widths"), std::string::npos);
  for (uint8_t bad : {3, 5, 9, 255}) {
    col[2] = std::byte{bad};
    EXPECT_NE(parse_packed_column(col.data(), size + 3, 4, n, &pc).find("plane 2 of width"), std::string::npos)
        << int{bad};
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
    byte_unshuffle4(planes4(planes.data(), n), back.data(), n);
    std::vector<uint32_t> got(n);
    if (n > 0) std::memcpy(got.data(), back.data(), 4 * n);
    ASSERT_EQ(got, v) << n;
  }
}

TEST(CountFalls, MatchesTheDefinition) {
  const uint32_t seed = 13;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (uint64_t n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 64, 100, 1000, 4099}) {
    for (int kind = 0; kind < 4; ++kind) {
      // Increasing runs with falls (and equal neighbours) at random places; large indices
      // (above 2^31, where a signed compare would go wrong) in some.
      std::vector<uint32_t> v(n);
      uint32_t x = kind == 3 ? 0x80000000u : 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint32_t r = static_cast<uint32_t>(rng());
        if (kind == 0) x = r;                                   // random: falls everywhere
        if (kind >= 1) x = (r % 16 == 0) ? x - r % 5 : x + r % 3;  // runs, falls, equals
        v[i] = x;
      }
      Falls expect;
      for (uint64_t i = 0; i < n; ++i) {
        if (i > 0) expect.falls += v[i] <= v[i - 1];
        expect.top = std::max(expect.top, v[i]);
      }
      ASSERT_EQ(count_falls_portable(v.data(), n), expect) << n << " " << kind;
      ASSERT_EQ(count_falls(v.data(), n), expect) << n << " " << kind;
    }
  }
}

TEST(UnshuffleCountFalls, MatchesUnshuffleThenCount) {
  const uint32_t seed = 17;
  std::printf("seed %u\n", seed);
  std::mt19937 rng(seed);
  for (uint64_t n : {0, 1, 2, 7, 31, 32, 33, 63, 64, 65, 100, 1000, 4099}) {
    for (int kind = 0; kind < 3; ++kind) {
      std::vector<uint32_t> v(n);
      uint32_t x = kind == 2 ? 0xfffff000u : 0;
      for (uint64_t i = 0; i < n; ++i) {
        const uint32_t r = static_cast<uint32_t>(rng());
        x = kind == 0 ? r : (r % 8 == 0 ? x - r % 3 : x + r % 4);  // with falls and equals
        v[i] = x;
      }
      if (n > 0 && kind == 1) v[0] = 0;  // a first index of 0 is no fall
      std::vector<std::byte> planes(4 * n);
      byte_shuffle4(reinterpret_cast<const std::byte*>(v.data()), planes.data(), n);
      for (size_t shift : {0, 1}) {
        Placed<uint32_t> fast(n, shift, 7);
        std::vector<uint32_t> plain(n, 7);
        const Falls a = unshuffle4_count_falls(planes4(planes.data(), n), fast.at, n);
        const Falls b = unshuffle4_count_falls_portable(planes4(planes.data(), n), plain.data(), n);
        ASSERT_EQ(fast.get(), v) << n << " " << kind << " " << shift;
        ASSERT_EQ(plain, v) << n << " " << kind;
        ASSERT_EQ(a, count_falls_portable(v.data(), n)) << n << " " << kind;
        ASSERT_EQ(b, a) << n << " " << kind;
      }
    }
  }
}

TEST(AnyNonfinite, FindsEachInfinityAndNaNAnywhere) {
  for (uint64_t n : {0, 1, 3, 8, 17, 64, 100}) {
    for (size_t shift : {0, 1, 3}) {  // unaligned arrays
      std::vector<std::byte> f(4 * n + shift), d(8 * n + shift);
      for (uint64_t i = 0; i < n; ++i) {
        const float a = static_cast<float>(i) - 50.5f;
        const double b = static_cast<double>(i) * 1e300;  // large but finite
        std::memcpy(f.data() + shift + 4 * i, &a, 4);
        std::memcpy(d.data() + shift + 8 * i, &b, 8);
      }
      ASSERT_FALSE(any_nonfinite_floats(f.data() + shift, n)) << n;
      ASSERT_FALSE(any_nonfinite_doubles(d.data() + shift, n)) << n;
      for (uint64_t i = 0; i < n; ++i) {
        for (double bad : {std::numeric_limits<double>::infinity(),
                           -std::numeric_limits<double>::infinity(),
                           std::numeric_limits<double>::quiet_NaN()}) {
          std::vector<std::byte> f2 = f, d2 = d;
          const float bf = static_cast<float>(bad);
          std::memcpy(f2.data() + shift + 4 * i, &bf, 4);
          std::memcpy(d2.data() + shift + 8 * i, &bad, 8);
          ASSERT_TRUE(any_nonfinite_floats(f2.data() + shift, n)) << n << " " << i;
          ASSERT_TRUE(any_nonfinite_doubles(d2.data() + shift, n)) << n << " " << i;
          // Not past n.
          ASSERT_FALSE(any_nonfinite_floats(f2.data() + shift, i)) << n << " " << i;
        }
      }
      // The largest finite values are finite.
      if (n > 0) {
        const float fm = std::numeric_limits<float>::max();
        const double dm = -std::numeric_limits<double>::max();
        std::memcpy(f.data() + shift, &fm, 4);
        std::memcpy(d.data() + shift, &dm, 8);
        ASSERT_FALSE(any_nonfinite_floats(f.data() + shift, n));
        ASSERT_FALSE(any_nonfinite_doubles(d.data() + shift, n));
      }
    }
  }
}

}  // namespace kernels_test
}  // namespace
}  // namespace agld::format
