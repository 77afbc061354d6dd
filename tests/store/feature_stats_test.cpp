// Per-feature statistics (agld/feature_stats.hpp; docs/format.md, "Feature statistics"):
// recorded and read back, or computed in a pass, they equal a brute-force count over the
// rows; blocks cover every feature in order; damaged records are errors, never crashes; a
// store without them (an older agld's) opens and is read, and the older readers' own steps
// still read a store with them.
#include "agld/feature_stats.hpp"

#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <random>

#include "agld/store.hpp"
#include "store/crc32c.hpp"
#include "store/feature_accumulator.hpp"
#include "store/feature_stats_format.hpp"
#include "store/format.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace feature_stats_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::TempDir;

// Rows with rare and common features, stored zeros, values other than 1 (negative, tiny,
// large) or all 1, empty rows and, past the last index used, features in no row. Feature
// j is drawn with probability falling as 1/(j+1) (a few common, many rare), and a band of
// features in the middle is never used.
SparseRows skewed_rows(size_t n, uint32_t d, bool ones, std::mt19937_64& rng) {
  SparseRows rows;
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  const uint32_t used = d - d / 5;  // the last fifth: in no row
  for (size_t r = 0; r < n; ++r) {
    idx.clear();
    val.clear();
    const size_t k = u(rng) < 0.05 ? 0 : 1 + static_cast<size_t>(u(rng) * 12);
    for (size_t e = 0; e < k; ++e) {
      const uint32_t j = static_cast<uint32_t>(std::pow(double(used), u(rng))) - 1;
      if (j >= used / 3 && j < used / 3 + 5) continue;  // a band in no row
      idx.push_back(j);
    }
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    for (size_t e = 0; e < idx.size(); ++e) {
      const double c = u(rng);
      float v = 1;
      if (!ones) v = test::awkward_value(c, rng);
      val.push_back(v);
    }
    rows.add_row(u(rng) < 0.3 ? 1.0 : 0.0, idx, val);
  }
  return rows;
}

StoreMeta meta_of(uint64_t d, Codec codec) {
  StoreMeta m;
  m.features = d;
  m.label_kind = LabelKind::kBinary;
  m.label_positive = 1;
  m.label_counts = {{0.0, 0}, {1.0, 0}};
  m.options.compression = codec == Codec::kNone ? "none" : "zstd";
  m.created_by = "feature_stats_test";
  return m;
}

// Everything a scan handed out, with checks that the blocks are in order, cover every
// feature once and have max_block features each but the last.
struct Scanned {
  std::vector<uint64_t> count;
  std::vector<double> sum_sq, max_sq;
  FeatureStatsSource source = FeatureStatsSource::kComputed;
  size_t blocks = 0;
};

Status scan_all(const Store& s, uint64_t max_block, Scanned* out) {
  *out = Scanned{};
  const uint64_t d = s.meta().features;
  bool short_seen = false;
  Status st = scan_feature_stats(
      s,
      [&](const FeatureStatsBlock& b) {
        EXPECT_EQ(b.first, out->count.size()) << "blocks out of order";
        EXPECT_GT(b.count.size(), 0u);
        EXPECT_LE(b.count.size(), max_block);
        EXPECT_FALSE(short_seen) << "a block shorter than max_block before the last";
        short_seen = b.count.size() < max_block;
        EXPECT_EQ(b.sum_sq.size(), b.count.size());
        EXPECT_EQ(b.max_sq.size(), b.count.size());
        out->count.insert(out->count.end(), b.count.begin(), b.count.end());
        out->sum_sq.insert(out->sum_sq.end(), b.sum_sq.begin(), b.sum_sq.end());
        out->max_sq.insert(out->max_sq.end(), b.max_sq.begin(), b.max_sq.end());
        ++out->blocks;
        return Status::ok();
      },
      &out->source, max_block);
  if (st.is_ok()) {
    EXPECT_EQ(out->count.size(), d) << "the blocks do not cover every feature";
    EXPECT_EQ(out->blocks, (d + max_block - 1) / max_block);
  }
  return st;
}

// Bit for bit: the sums are made in the same order by the writer's and the scan's code.
void expect_equal(const Scanned& got, const test::BruteFeatureStats& want) {
  ASSERT_EQ(got.count.size(), want.count.size());
  size_t bad = 0;
  for (size_t j = 0; j < want.count.size() && bad < 10; ++j) {
    const double max_sq = static_cast<double>(want.max_abs[j]) * want.max_abs[j];
    if (got.count[j] != want.count[j] || std::memcmp(&got.sum_sq[j], &want.sum_sq[j], 8) != 0 ||
        got.max_sq[j] != max_sq) {
      ADD_FAILURE() << "feature " << j << ": count " << got.count[j] << " vs " << want.count[j]
                    << ", sum_sq " << got.sum_sq[j] << " vs " << want.sum_sq[j] << ", max_sq "
                    << got.max_sq[j] << " vs " << max_sq;
      ++bad;
    }
  }
}

struct Case {
  const char* name;
  Codec codec;
  bool ones;
  uint32_t block_features;  // of the record
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class FeatureStats : public ::testing::TestWithParam<Case> {};

// Recorded, read back in blocks of every size; and computed from the same rows written
// without the record: the same numbers, equal to the brute-force count.
TEST_P(FeatureStats, StoredAndComputedEqualBruteForce) {
  const Case& c = GetParam();
  const uint64_t seed = test::test_seed(11);
  std::mt19937_64 rng(seed);
  TempDir dir;
  const uint32_t d = 5000;
  const SparseRows rows = skewed_rows(3000, d, c.ones, rng);
  const test::BruteFeatureStats want = test::brute_feature_stats(rows, d);
  // The data has what the test is about: rare and common features, features in no row.
  const uint64_t empty = static_cast<uint64_t>(std::count(want.count.begin(), want.count.end(), 0));
  const uint64_t top = *std::max_element(want.count.begin(), want.count.end());
  ASSERT_GT(empty, d / 5);
  ASSERT_GT(top, 1000u);
  ASSERT_GT(std::count(want.count.begin(), want.count.end(), 1), 5);

  const std::string with = dir.file("with.agld"), without = dir.file("without.agld");
  Status st = test::write_store_with_stats(with, rows, 250, ChunkCodec{c.codec},
                                           meta_of(d, c.codec), c.block_features);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  st = test::write_store(without, rows, 250, ChunkCodec{c.codec}, meta_of(d, c.codec));
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::unique_ptr<Store> a, b;
  ASSERT_TRUE(Store::open(with, &a).is_ok());
  ASSERT_TRUE(Store::open(without, &b).is_ok());
  EXPECT_TRUE(has_feature_stats(*a));
  EXPECT_FALSE(has_feature_stats(*b));
  EXPECT_EQ(a->meta().format_minor, kFormatMinor);
  for (uint64_t max_block : {uint64_t{1}, uint64_t{2}, uint64_t{7}, uint64_t{64}, uint64_t{4999},
                             uint64_t{5000}, uint64_t{5001}, uint64_t{1} << 20}) {
    SCOPED_TRACE(testing::Message() << "max_block " << max_block << ", seed " << seed);
    Scanned stored, computed;
    st = scan_all(*a, max_block, &stored);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(stored.source, FeatureStatsSource::kStored);
    expect_equal(stored, want);
    st = scan_all(*b, max_block, &computed);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    EXPECT_EQ(computed.source, FeatureStatsSource::kComputed);
    expect_equal(computed, want);
  }
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, FeatureStats,
    ::testing::Values(Case{"zstd_values_blocks_of_64", Codec::kZstd, false, 64},
                      Case{"zstd_values_one_block", Codec::kZstd, false,
                           kFeatureStatsBlockFeatures},
                      Case{"zstd_ones_blocks_of_3", Codec::kZstd, true, 3},
                      Case{"none_values_blocks_of_1", Codec::kNone, false, 1},
                      Case{"none_ones_blocks_of_100", Codec::kNone, true, 100}),
    [](const auto& p) { return std::string(p.param.name); });

// A store of no features, and blocks of 0 features asked for.
TEST(FeatureStatsEdges, NoFeaturesAndZeroBlocks) {
  TempDir dir;
  SparseRows rows;
  rows.add_row(1, {}, {});
  const std::string path = dir.file("empty.agld");
  ASSERT_TRUE(
      test::write_store_with_stats(path, rows, 10, ChunkCodec{}, meta_of(0, Codec::kZstd), 64)
          .is_ok());
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(path, &s).is_ok());
  EXPECT_TRUE(has_feature_stats(*s));
  Scanned got;
  EXPECT_TRUE(scan_all(*s, 5, &got).is_ok());
  EXPECT_EQ(got.blocks, 0u);
  Status st = scan_feature_stats(
      *s, [](const FeatureStatsBlock&) { return Status::ok(); }, nullptr, 0);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
}

// The visitor's first error ends the scan, and is what it returns.
TEST(FeatureStatsEdges, VisitorErrorStopsTheScan) {
  TempDir dir;
  std::mt19937_64 rng(5);
  const SparseRows rows = skewed_rows(200, 100, false, rng);
  const std::string path = dir.file("s.agld");
  ASSERT_TRUE(
      test::write_store_with_stats(path, rows, 50, ChunkCodec{}, meta_of(100, Codec::kZstd), 16)
          .is_ok());
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(path, &s).is_ok());
  int calls = 0;
  Status st = scan_feature_stats(
      *s,
      [&](const FeatureStatsBlock&) {
        return ++calls == 3 ? Status::invalid_argument("enough") : Status::ok();
      },
      nullptr, 10);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_EQ(st.message(), "enough");
  EXPECT_EQ(calls, 3);
}

// The accumulator grows in place, past what was reserved, without losing what it holds.
TEST(FeatureAccumulatorTest, GrowsAndKeepsItsCounts) {
  FeatureAccumulator acc;
  acc.reserve(10);
  const uint32_t idx[] = {3, 9, 3};
  const float val[] = {2, -1, -0.5f};
  acc.add(idx, val, 3);
  const uint32_t far[] = {5'000'000, 3};
  acc.add(far, nullptr, 2);  // every value 1
  EXPECT_GE(acc.size(), 5'000'001u);
  uint64_t count[2];
  double sum[2];
  float max_abs[2];
  acc.fill(3, 1, count, sum, max_abs);
  EXPECT_EQ(count[0], 3u);
  EXPECT_EQ(sum[0], 4 + 0.25 + 1);
  EXPECT_EQ(max_abs[0], 2.0f);
  acc.fill(5'000'000, 2, count, sum, max_abs);  // the second is past the last index used
  EXPECT_EQ(count[0], 1u);
  EXPECT_EQ(sum[0], 1.0);
  EXPECT_EQ(count[1], 0u);
  EXPECT_EQ(max_abs[1], 0.0f);
  acc.fill(uint64_t{1} << 40, 1, count, sum, max_abs);  // far past the room: zeros
  EXPECT_EQ(count[0], 0u);
}

// ---------------------------------------------------------------- the bytes

class FeatureStatsBytes : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(21);
    rows_ = skewed_rows(400, 300, false, rng);
    path_ = dir_.file("s.agld");
    ASSERT_TRUE(test::write_store_with_stats(path_, rows_, 100, ChunkCodec{},
                                             meta_of(300, Codec::kZstd), 64)
                    .is_ok());
    const std::string s = test::read_file(path_);
    good_.resize(s.size());
    std::memcpy(good_.data(), s.data(), s.size());
    const std::byte* ft = good_.data() + good_.size() - 64;
    meta_offset_ = format::get<uint64_t>(ft + 0);
    meta_size_ = format::get<uint64_t>(ft + 8);
    index_offset_ = format::get<uint64_t>(ft + 16);
    trailer_ = index_offset_ - 64;
    json_size_ = format::get<uint64_t>(good_.data() + trailer_);
    blocks_ = format::get<uint32_t>(good_.data() + trailer_ + 20);
    table_ = trailer_ - 16 * uint64_t{blocks_};
  }
  std::string write(const std::vector<std::byte>& b, const std::string& name = "edited.agld") {
    const std::string p = dir_.file(name);
    test::write_file(p, std::string(reinterpret_cast<const char*>(b.data()), b.size()));
    return p;
  }
  // Opens and scans; the first failure.
  Status open_and_scan(const std::vector<std::byte>& b) {
    std::unique_ptr<Store> s;
    AGLD_RETURN_IF_ERROR(Store::open(write(b), &s));
    return scan_feature_stats(*s, [](const FeatureStatsBlock&) { return Status::ok(); });
  }
  // Re-checksums what the section's CRCs and the footer's cover, after an edit.
  void fix_crcs(std::vector<std::byte>& b) {
    std::byte* t = b.data() + trailer_;
    format::put<uint32_t>(t + 28, crc32c::value(b.data() + table_, trailer_ - table_));
    format::put<uint32_t>(t + 52, crc32c::value(t, 52));
    std::byte* ft = b.data() + b.size() - 64;
    format::put<uint32_t>(ft + 32, crc32c::value(b.data() + meta_offset_, meta_size_));
    format::put<uint32_t>(ft + 52, crc32c::value(ft, 52));
  }
  // Replaces block k's stored bytes by a zstd frame of raw (same size in the file is not
  // needed: the table and everything after move).
  std::vector<std::byte> with_block(uint32_t k, const std::vector<std::byte>& raw) {
    std::vector<std::byte> frame(ZSTD_compressBound(raw.size()));
    frame.resize(ZSTD_compress(frame.data(), frame.size(), raw.data(), raw.size(), 1));
    const std::byte* e = good_.data() + table_ + 16 * uint64_t{k};
    const uint64_t at = format::get<uint64_t>(e);
    const uint32_t old = format::get<uint32_t>(e + 8);
    std::vector<std::byte> b(good_.begin(), good_.begin() + static_cast<std::ptrdiff_t>(at));
    b.insert(b.end(), frame.begin(), frame.end());
    b.insert(b.end(), good_.begin() + static_cast<std::ptrdiff_t>(at + old), good_.end());
    const int64_t shift = static_cast<int64_t>(frame.size()) - old;
    auto moved = [&](uint64_t x) { return static_cast<uint64_t>(static_cast<int64_t>(x) + shift); };
    const uint64_t table = moved(table_), trailer = moved(trailer_);
    for (uint32_t j = 0; j < blocks_; ++j) {
      std::byte* ej = b.data() + table + 16 * uint64_t{j};
      if (j > k) format::put<uint64_t>(ej, moved(format::get<uint64_t>(ej)));
      if (j == k) {
        format::put<uint32_t>(ej + 8, static_cast<uint32_t>(frame.size()));
        format::put<uint32_t>(ej + 12, crc32c::value(frame.data(), frame.size()));
      }
    }
    std::byte* ft = b.data() + b.size() - 64;
    format::put<uint64_t>(ft + 8, moved(meta_size_));
    format::put<uint64_t>(ft + 16, moved(index_offset_));
    const uint64_t saved_table = table_, saved_trailer = trailer_, saved_meta = meta_size_;
    table_ = table, trailer_ = trailer, meta_size_ = moved(meta_size_);
    fix_crcs(b);
    table_ = saved_table, trailer_ = saved_trailer, meta_size_ = saved_meta;
    return b;
  }
  // Block k's raw bytes as written.
  std::vector<std::byte> raw_block(uint32_t k) {
    const std::byte* e = good_.data() + table_ + 16 * uint64_t{k};
    const uint64_t at = format::get<uint64_t>(e);
    const uint32_t size = format::get<uint32_t>(e + 8);
    std::vector<std::byte> raw(ZSTD_getFrameContentSize(good_.data() + at, size));
    EXPECT_EQ(ZSTD_decompress(raw.data(), raw.size(), good_.data() + at, size), raw.size());
    return raw;
  }

  TempDir dir_;
  SparseRows rows_;
  std::string path_;
  std::vector<std::byte> good_;
  uint64_t meta_offset_ = 0, meta_size_ = 0, index_offset_ = 0, trailer_ = 0, json_size_ = 0,
           table_ = 0;
  uint32_t blocks_ = 0;
};

// A damaged block or table is an error of the scan that names the store, not of the open:
// the store's rows are still readable.
TEST_F(FeatureStatsBytes, DamagedBlockOrTableFailsTheScanNotTheOpen) {
  ASSERT_EQ(blocks_, 5u);
  const uint64_t first_block = meta_offset_ + json_size_ + 1;
  for (uint64_t at : {first_block, first_block + 7, table_ - 1, table_, table_ + 16 * 3 + 9}) {
    std::vector<std::byte> b = good_;
    b[at] ^= std::byte{0x10};
    std::unique_ptr<Store> s;
    const std::string p = write(b);
    Status st = Store::open(p, &s);
    ASSERT_TRUE(st.is_ok()) << at << ": " << st.to_string();
    DecodedChunk c;
    EXPECT_TRUE(s->read_chunk(0, &c).is_ok());
    st = scan_feature_stats(*s, [](const FeatureStatsBlock&) { return Status::ok(); });
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << at;
    EXPECT_EQ(st.message().rfind(p + ": feature statistics: ", 0), 0u) << st.message();
    EXPECT_NE(st.message().find("checksum mismatch"), std::string::npos) << st.message();
    // The footer's CRC over the whole region (what older readers check) fails too.
    EXPECT_EQ(s->verify_metadata_region().code(), Status::Code::kCorruption);
  }
}

// Blocks whose CRCs are right but whose numbers cannot be: a count above the rows, a
// largest square above the sum, a sum for a feature in no row, counts that do not add up to
// the store's nonzeros, a frame whose size does not fit its counts.
TEST_F(FeatureStatsBytes, ImpossibleNumbersAreCorruption) {
  const uint64_t n = 64;
  auto edited = [&](auto edit) {
    std::vector<uint64_t> count(n);
    std::vector<double> sum(n);
    std::vector<float> max_abs(n);
    std::vector<std::byte> raw = raw_block(1), scratch;
    EXPECT_TRUE(format::decode_stats_block(raw.data(), raw.size(), n, &scratch, count.data(),
                                           sum.data(), max_abs.data())
                    .empty());
    edit(count, sum, max_abs);
    raw.assign(format::kStatsRawBytesPerFeature * n, std::byte{0});
    raw.resize(format::encode_stats_block(count.data(), sum.data(), max_abs.data(), n, &scratch,
                                          raw.data()));
    return open_and_scan(with_block(1, raw));
  };
  ASSERT_TRUE(edited([](auto&, auto&, auto&) {}).is_ok());  // the harness itself
  // Which features of block 1 are counted, and which not.
  const test::BruteFeatureStats want = test::brute_feature_stats(rows_, 300);
  size_t used = 64, unused = 64;
  for (size_t i = 0; i < n; ++i) (want.count[64 + i] ? used : unused) = i;
  ASSERT_LT(used, n);
  ASSERT_LT(unused, n);
  auto expect_corrupt = [](const Status& st, const std::string& word) {
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
    EXPECT_NE(st.message().find(word), std::string::npos) << st.message();
  };
  expect_corrupt(edited([&](auto& c, auto&, auto&) { c[used] = 401; }), "has count 401");
  expect_corrupt(edited([&](auto&, auto& s, auto& m) {
                   m[used] = static_cast<float>(std::sqrt(s[used])) * 2 + 1;
                 }),
                 "largest |x|");
  expect_corrupt(edited([&](auto&, auto& s, auto&) { s[used] = NAN; }), "sum of squares");
  expect_corrupt(edited([&](auto& c, auto&, auto&) { c[used] += 1; }), "add up to");
  // A frame of the counts alone: its size says no feature is counted, its counts say some are.
  std::vector<std::byte> counts_only = raw_block(1);
  counts_only.resize(8 * n);
  expect_corrupt(open_and_scan(with_block(1, counts_only)), "features counted");
  // A frame of a size no block of 64 features can have.
  std::vector<std::byte> odd = raw_block(1);
  odd.resize(odd.size() - 5);
  expect_corrupt(open_and_scan(with_block(1, odd)), "not possible for 64 features");
}

// What older readers do with a store that has the statistics: they check the footer's CRC
// over the whole metadata region and parse it as JSON, which ends at the NUL. Both succeed,
// and give what the new reader reads.
TEST_F(FeatureStatsBytes, OlderReadersStepsStillReadTheMetadata) {
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(path_, &s).is_ok());
  EXPECT_TRUE(s->verify_metadata_region().is_ok());
  const std::string region(reinterpret_cast<const char*>(good_.data() + meta_offset_), meta_size_);
  EXPECT_EQ(crc32c::value(region.data(), region.size()),
            format::get<uint32_t>(good_.data() + good_.size() - 64 + 32));
  ASSERT_GT(region.size(), json_size_ + 1000);  // the statistics are there, after the NUL
  StoreMeta old;
  Status st = format::decode_meta(region, &old);  // the version-1.0 reader's call, unchanged
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(old.features, s->meta().features);
  EXPECT_EQ(old.rows, s->meta().rows);
  EXPECT_EQ(old.nnz, s->meta().nnz);
  EXPECT_EQ(old.created_by, s->meta().created_by);
}

// A store in the layout before the statistics (no format_minor, no NUL, the region all
// JSON) opens, and its statistics are computed; they equal those the record holds.
TEST_F(FeatureStatsBytes, OldFormatStoreOpensAndIsRead) {
  std::string json(reinterpret_cast<const char*>(good_.data() + meta_offset_), json_size_);
  const size_t key = json.find("\"format_minor\"");
  ASSERT_NE(key, std::string::npos);
  json.erase(key, json.find('\n', key) - key + 1);  // the key's line
  std::vector<std::byte> b(good_.begin(),
                           good_.begin() + static_cast<std::ptrdiff_t>(meta_offset_));
  const auto* j = reinterpret_cast<const std::byte*>(json.data());
  b.insert(b.end(), j, j + json.size());
  b.insert(b.end(), good_.begin() + static_cast<std::ptrdiff_t>(index_offset_), good_.end() - 64);
  std::byte ft[64];
  format::Footer f;
  f.meta_offset = meta_offset_;
  f.meta_size = json.size();
  f.index_offset = meta_offset_ + json.size();
  f.chunk_count = (good_.size() - 64 - index_offset_) / 40;
  f.meta_crc = crc32c::value(json.data(), json.size());
  f.index_crc = format::get<uint32_t>(good_.data() + good_.size() - 64 + 36);
  format::encode_footer(f, ft);
  b.insert(b.end(), ft, ft + 64);
  std::unique_ptr<Store> s;
  Status st = Store::open(write(b, "old.agld"), &s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(s->meta().format_minor, 0u);
  EXPECT_FALSE(has_feature_stats(*s));
  EXPECT_TRUE(s->verify_metadata_region().is_ok());
  Scanned got;
  ASSERT_TRUE(scan_all(*s, 50, &got).is_ok());
  EXPECT_EQ(got.source, FeatureStatsSource::kComputed);
  expect_equal(got, test::brute_feature_stats(rows_, 300));
  DecodedChunk c;
  for (size_t k = 0; k < s->chunk_count(); ++k) EXPECT_TRUE(s->read_chunk(k, &c).is_ok());
}

// A later version of the section (its trailer's CRC right): the store opens, the JSON is
// read through the trailer, and the statistics are computed rather than misread.
TEST_F(FeatureStatsBytes, LaterSectionVersionIsComputedNotMisread) {
  std::vector<std::byte> b = good_;
  format::put<uint32_t>(b.data() + trailer_ + 48, 2);
  format::put<uint64_t>(b.data() + trailer_ + 40, 12345);  // reserved in version 1
  fix_crcs(b);
  std::unique_ptr<Store> s;
  Status st = Store::open(write(b), &s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_FALSE(has_feature_stats(*s));
  EXPECT_EQ(s->meta().rows, 400u);
  Scanned got;
  ASSERT_TRUE(scan_all(*s, 1000, &got).is_ok());
  EXPECT_EQ(got.source, FeatureStatsSource::kComputed);
  expect_equal(got, test::brute_feature_stats(rows_, 300));
}

// The trailer vouches for the JSON text: damage to it, or a trailer that does not fit the
// region or the metadata, fails the open, with a one-line message about the metadata.
TEST_F(FeatureStatsBytes, DamagedOrInconsistentTrailerFailsTheOpen) {
  auto expect_open_fails = [&](const std::vector<std::byte>& b, const std::string& word) {
    std::unique_ptr<Store> s;
    Status st = Store::open(write(b), &s);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << word;
    EXPECT_NE(st.message().find("metadata"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(word), std::string::npos) << st.message();
  };
  for (uint64_t k = 0; k < 64; ++k) {
    std::vector<std::byte> b = good_;
    b[trailer_ + k] ^= std::byte{1};
    // The magic damaged: no trailer, so the footer's CRC over the region decides.
    expect_open_fails(b, k >= 56 ? "checksum mismatch" : "trailer: checksum mismatch");
  }
  std::vector<std::byte> b = good_;
  b[meta_offset_ + json_size_] = std::byte{' '};  // the NUL
  expect_open_fails(b, "no NUL");
  b = good_;
  b[meta_offset_ + 3] ^= std::byte{4};  // the JSON text
  expect_open_fails(b, "checksum mismatch");
  auto edited = [&](size_t at, auto v) {
    std::vector<std::byte> e = good_;
    format::put(e.data() + trailer_ + at, v);
    fix_crcs(e);
    return e;
  };
  expect_open_fails(edited(0, meta_size_), "past the region");  // json_size
  expect_open_fails(edited(8, uint64_t{301}), "statistics of 301 features");
  expect_open_fails(edited(16, uint32_t{0}), "blocks of 0 features");
  expect_open_fails(edited(16, uint32_t{50}), "5 blocks of 50 features");
  expect_open_fails(edited(20, uint32_t{1} << 30), "blocks of 64");
  expect_open_fails(edited(32, uint8_t{7}), "unknown codec 7");
  expect_open_fails(edited(36, uint8_t{1}), "reserved bytes");
}

}  // namespace feature_stats_test
}  // namespace
}  // namespace agld
