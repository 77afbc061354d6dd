// agld convert records each output's per-feature statistics (docs/format.md, "Feature
// statistics"): equal to a brute-force count over the rows the store holds, bit for bit (both
// sum in the stored order), and to one over the input; the same when computed from the store
// written without them; not changed by the shuffle, threads or the codec; both outputs of a
// split get their own. Their memory counts against --memory.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include "agld/convert.hpp"
#include "agld/feature_stats.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace feature_stats_convert_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::BruteFeatureStats;
using test::TempDir;

// Rows whose features are drawn with probability falling as 1/(j+1) (a few in most rows,
// most in few or none), with stored zeros, empty rows and values other than 1: negative,
// tiny, large, or, dyadic, values whose squares add up exactly in any order.
SparseRows skewed_rows(size_t n, uint32_t used, bool dyadic, std::mt19937_64& rng) {
  SparseRows rows;
  std::uniform_real_distribution<double> u(0, 1);
  std::vector<uint32_t> idx;
  std::vector<float> val;
  for (size_t r = 0; r < n; ++r) {
    idx.clear();
    val.clear();
    const size_t k = u(rng) < 0.05 ? 0 : 1 + static_cast<size_t>(u(rng) * 15);
    for (size_t e = 0; e < k; ++e)
      idx.push_back(static_cast<uint32_t>(std::pow(double(used), u(rng))) - 1);
    std::sort(idx.begin(), idx.end());
    idx.erase(std::unique(idx.begin(), idx.end()), idx.end());
    for (size_t e = 0; e < idx.size(); ++e) {
      const double c = u(rng);
      float v;
      if (dyadic) {
        v = static_cast<float>(std::floor(u(rng) * 16) / 4 - 1);  // -1 .. 2.75 in quarters
      } else {
        v = test::awkward_value(c, rng);
      }
      val.push_back(v);
    }
    rows.add_row(u(rng) < 0.3 ? 1.0 : 0.0, idx, val);
  }
  return rows;
}

struct Scan {
  std::vector<uint64_t> count;
  std::vector<double> sum_sq, max_sq;
  FeatureStatsSource source = FeatureStatsSource::kComputed;
};

Scan scan(const Store& s, uint64_t max_block = 1000) {
  Scan out;
  Status st = scan_feature_stats(
      s,
      [&](const FeatureStatsBlock& b) {
        EXPECT_EQ(b.first, out.count.size());
        out.count.insert(out.count.end(), b.count.begin(), b.count.end());
        out.sum_sq.insert(out.sum_sq.end(), b.sum_sq.begin(), b.sum_sq.end());
        out.max_sq.insert(out.max_sq.end(), b.max_sq.begin(), b.max_sq.end());
        return Status::ok();
      },
      &out.source, max_block);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(out.count.size(), s.meta().features);
  return out;
}

Scan of(const BruteFeatureStats& b) {
  Scan s;
  s.count = b.count;
  s.sum_sq = b.sum_sq;
  for (float a : b.max_abs) s.max_sq.push_back(static_cast<double>(a) * a);
  return s;
}

// Equal counts and largest squares; sums equal bit for bit, or within rel (another order).
void expect_same(const Scan& got, const Scan& want, double rel = 0) {
  ASSERT_EQ(got.count.size(), want.count.size());
  int bad = 0;
  for (size_t j = 0; j < want.count.size() && bad < 10; ++j) {
    const bool sums = rel == 0 ? std::memcmp(&got.sum_sq[j], &want.sum_sq[j], 8) == 0
                               : std::abs(got.sum_sq[j] - want.sum_sq[j]) <= rel * want.sum_sq[j];
    if (got.count[j] != want.count[j] || got.max_sq[j] != want.max_sq[j] || !sums) {
      ADD_FAILURE() << "feature " << j << ": count " << got.count[j] << " vs " << want.count[j]
                    << ", sum_sq " << got.sum_sq[j] << " vs " << want.sum_sq[j] << ", max_sq "
                    << got.max_sq[j] << " vs " << want.max_sq[j];
      ++bad;
    }
  }
}

SparseRows rows_of(const Store& s) {
  SparseRows all;
  DecodedChunk c;
  for (size_t k = 0; k < s.chunk_count(); ++k) {
    EXPECT_TRUE(s.read_chunk(k, &c).is_ok());
    c.append_to(&all);
  }
  return all;
}

struct Case {
  const char* name;
  bool shuffle;
  int threads;
  const char* compression;
  bool split;
  bool features;  // --features fixed (larger than the largest index), else found
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.name; }

class ConvertFeatureStats : public ::testing::TestWithParam<Case> {};

TEST_P(ConvertFeatureStats, EqualBruteForceAndTheComputedPass) {
  const Case& c = GetParam();
  const uint64_t seed = test::test_seed(31);
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  TempDir dir;
  // 40,000 rows, about 6 MB of text: several parse blocks, 60 chunks.
  const uint32_t used = 20000;
  const SparseRows input = skewed_rows(40000, used, false, rng);
  test::write_file(dir.file("in.svm"), test::to_libsvm(input));
  ConvertOptions opt;
  opt.inputs = {dir.file("in.svm")};
  opt.output = dir.file("out.agld");
  opt.shuffle = c.shuffle;
  opt.seed = 9;
  opt.threads = c.threads;
  opt.compression = c.compression;
  opt.chunk_rows = 700;
  if (c.features) opt.features = used + 5000;  // the last 5000: in no row
  if (c.split) {
    opt.test_fraction = 0.25;
    opt.test_output = dir.file("test.agld");
  }
  ConvertReport rep;
  Status st = convert(opt, &rep);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const uint64_t d = rep.features;
  EXPECT_EQ(rep.feature_stats_bytes, 16 * d * (c.split && !c.shuffle ? 2 : 1));
  const Scan whole = of(test::brute_feature_stats(input, d));
  ASSERT_GT(std::count(whole.count.begin(), whole.count.end(), 0), 100);
  ASSERT_GT(std::count(whole.count.begin(), whole.count.end(), 1), 100);
  ASSERT_GT(*std::max_element(whole.count.begin(), whole.count.end()), 10000u);

  std::vector<std::string> outputs = {opt.output};
  if (c.split) outputs.push_back(opt.test_output);
  Scan sum;  // of the outputs
  sum.count.assign(d, 0);
  sum.sum_sq.assign(d, 0);
  sum.max_sq.assign(d, 0);
  for (const std::string& path : outputs) {
    SCOPED_TRACE(path);
    std::unique_ptr<Store> s;
    ASSERT_TRUE(Store::open(path, &s).is_ok());
    ASSERT_TRUE(has_feature_stats(*s));
    const Scan rec = scan(*s);
    EXPECT_EQ(rec.source, FeatureStatsSource::kStored);
    // Over the rows as stored, in their order: the same bits.
    const SparseRows stored = rows_of(*s);
    expect_same(rec, of(test::brute_feature_stats(stored, d)));
    // Computed from the same rows written without the record: the same bits again.
    ASSERT_TRUE(test::write_store(dir.file("bare.agld"), stored, 333, ChunkCodec{}, d).is_ok());
    std::unique_ptr<Store> bare;
    ASSERT_TRUE(Store::open(dir.file("bare.agld"), &bare).is_ok());
    ASSERT_FALSE(has_feature_stats(*bare));
    const Scan computed = scan(*bare, 777);
    EXPECT_EQ(computed.source, FeatureStatsSource::kComputed);
    expect_same(computed, rec);
    for (uint64_t j = 0; j < d; ++j) {
      sum.count[j] += rec.count[j];
      sum.sum_sq[j] += rec.sum_sq[j];
      sum.max_sq[j] = std::max(sum.max_sq[j], rec.max_sq[j]);
    }
  }
  // Against the input: kept in order and whole, the same additions; else the same up to the
  // order of the sums (and the split's two sums).
  expect_same(sum, whole, !c.shuffle && !c.split ? 0 : 1e-12);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, ConvertFeatureStats,
    ::testing::Values(Case{"shuffled_1_thread", true, 1, "zstd", false, false},
                      Case{"shuffled_2_threads_features", true, 2, "zstd", false, true},
                      Case{"kept_1_thread_features", false, 1, "zstd", false, true},
                      Case{"kept_2_threads", false, 2, "zstd", false, false},
                      Case{"kept_uncompressed", false, 2, "none", false, false},
                      Case{"shuffled_uncompressed_features", true, 2, "none", false, true},
                      Case{"shuffled_split", true, 2, "zstd", true, false},
                      Case{"kept_split_features", false, 2, "zstd", true, true},
                      Case{"kept_split_1_thread", false, 1, "zstd", true, false}),
    [](const auto& p) { return std::string(p.param.name); });

// With values whose squares add up exactly, the order of the rows cannot show: shuffled,
// with any seed, or kept, on any number of threads, the records are the same bits.
TEST(ConvertFeatureStatsOrder, ShuffleDoesNotChangeThem) {
  std::mt19937_64 rng(test::test_seed(5));
  TempDir dir;
  const SparseRows input = skewed_rows(20000, 5000, true, rng);
  test::write_file(dir.file("in.svm"), test::to_libsvm(input));
  const Scan want = of(test::brute_feature_stats(input, 5000));
  for (int variant = 0; variant < 4; ++variant) {
    ConvertOptions opt;
    opt.inputs = {dir.file("in.svm")};
    opt.output = dir.file("out.agld");
    opt.shuffle = variant > 0;
    opt.seed = static_cast<uint64_t>(variant);
    opt.threads = 1 + variant % 2;
    opt.chunk_rows = 500;
    opt.features = 5000;
    ConvertReport rep;
    ASSERT_TRUE(convert(opt, &rep).is_ok());
    ASSERT_EQ(rep.features, 5000u);
    std::unique_ptr<Store> s;
    ASSERT_TRUE(Store::open(opt.output, &s).is_ok());
    SCOPED_TRACE(variant);
    expect_same(scan(*s), want);
  }
}

// The statistics' 16 bytes a feature count against --memory: when d is fixed and they do
// not fit with 64M for the rest, the conversion is refused before it starts, saying why.
TEST(ConvertFeatureStatsOrder, TheirMemoryCountsAgainstTheBudget) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "1 1:1 3:2\n0 2:0.5\n");
  auto run = [&](bool shuffle, bool split, uint64_t features, uint64_t memory) {
    ConvertOptions opt;
    opt.inputs = {dir.file("in.svm")};
    opt.output = dir.file("out.agld");
    opt.shuffle = shuffle;
    opt.features = features;
    opt.memory = memory;
    opt.fields = "none";  // the statistics alone (fields_convert_test.cpp: with the detection)
    if (split) {
      opt.test_fraction = 0.5;
      opt.test_output = dir.file("test.agld");
    }
    ConvertReport rep;
    return convert(opt, &rep);
  };
  const uint64_t mib = uint64_t{1} << 20;
  // 3M features: 48 MB (45.8 MiB) an output.
  Status st = run(true, false, 3'000'000, 100 * mib);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("per-feature statistics of 3000000 features"), std::string::npos)
      << st.message();
  EXPECT_NE(st.message().find("--memory 110M or more"), std::string::npos) << st.message();
  EXPECT_TRUE(run(true, false, 3'000'000, 128 * mib).is_ok());
  // Shuffled, one output's at a time; kept in order, both outputs' at once.
  EXPECT_TRUE(run(true, true, 3'000'000, 128 * mib).is_ok());
  st = run(false, true, 3'000'000, 128 * mib);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.to_string();
  EXPECT_NE(st.message().find("both outputs at once"), std::string::npos) << st.message();
  EXPECT_TRUE(run(false, true, 3'000'000, 160 * mib).is_ok());
}

}  // namespace feature_stats_convert_test
}  // namespace
}  // namespace agld
