// R-hats by the rows a feature is in (diagnostics/rhat_by_rows.hpp): the classes' bounds, the
// counts against a brute-force tally over a store with features in 1 to 150 rows, the
// intercept as its own class, NaN R-hats counted as coordinates without one, and nothing
// (and no pass) on a store that records no statistics.
#include "diagnostics/rhat_by_rows.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <vector>

#include "test_support.hpp"

namespace agld::diagnostics {
namespace {
namespace rhat_by_rows_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(RhatByRows, ClassesArePowersOfTen) {
  EXPECT_EQ(rows_class(1), 0u);
  EXPECT_EQ(rows_class(2), 1u);
  EXPECT_EQ(rows_class(10), 1u);
  EXPECT_EQ(rows_class(11), 2u);
  EXPECT_EQ(rows_class(100), 2u);
  EXPECT_EQ(rows_class(101), 3u);
  EXPECT_EQ(rows_class(1000000), 6u);
  EXPECT_EQ(rows_class(1000001), 7u);
  // No power of 10 past 10^19 fits: every larger count is the last class (a crafted store's
  // counts must not loop).
  EXPECT_EQ(rows_class(uint64_t{1000000000000000000}), 18u);
  EXPECT_EQ(rows_class(uint64_t{1000000000000000001}), kLastRowsClass);
  EXPECT_EQ(rows_class(UINT64_MAX), kLastRowsClass);
}

// Feature j (of 40) is in the first 1 + 4 j rows (1 to 157); feature 40 is in no row.
SparseRows rows_of_growing_features() {
  SparseRows rows;
  for (uint32_t r = 0; r < 160; ++r) {
    std::vector<uint32_t> idx;
    for (uint32_t j = 0; j < 40; ++j) {
      if (r < 1 + 4 * j) idx.push_back(j);
    }
    if (idx.empty()) idx.push_back(39);
    rows.add_row(r % 2 ? 1.0 : -1.0, idx, std::vector<float>(idx.size(), 1.0f));
  }
  return rows;
}

TEST(RhatByRows, CountsEachClassAndTheIntercept) {
  test::TempDir dir;
  const SparseRows rows = rows_of_growing_features();
  StoreMeta meta;
  meta.features = 41;
  meta.label_kind = LabelKind::kBinary;
  ASSERT_TRUE(test::write_store_with_stats(dir.file("s.agld"), rows, 16, ChunkCodec{}, meta, 8).is_ok());
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(dir.file("s.agld"), &store).is_ok());
  const test::BruteFeatureStats brute = test::brute_feature_stats(rows, 41);

  // d = 42: 41 features and the intercept. R-hat 1 + j / 100 for feature j, NaN for every 7th
  // feature, the intercept's 1.2.
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> rhat(42);
  for (size_t j = 0; j < 41; ++j) rhat[j] = j % 7 == 3 ? kNaN : 1 + static_cast<double>(j) / 100;
  rhat[41] = 1.2;
  std::vector<RowsClass> got;
  ASSERT_TRUE(rhat_by_rows(*store, rhat, true, &got).is_ok());

  std::map<uint32_t, RowsClass> want;  // by class
  for (uint64_t j = 0; j < 41; ++j) {
    const uint64_t n = brute.count[j];
    if (n == 0) continue;  // in no row: in no class
    RowsClass& c = want[rows_class(n)];
    ++c.coordinates;
    if (std::isnan(rhat[j])) continue;
    ++c.with_rhat;
    c.rhat_above += rhat[j] > 1.01;
    c.rhat_above_1_1 += rhat[j] > 1.1;
    if (!(rhat[j] <= c.max_rhat)) c.max_rhat = rhat[j], c.max_rhat_at = j;
  }
  ASSERT_EQ(got.size(), want.size() + 1);
  size_t i = 0;
  for (const auto& [k, w] : want) {
    const RowsClass& g = got[i++];
    SCOPED_TRACE("class " + std::to_string(k));
    EXPECT_FALSE(g.intercept);
    EXPECT_EQ(g.min_rows, k == 0 ? 1u : static_cast<uint64_t>(std::pow(10, k - 1)) + 1);
    EXPECT_EQ(g.max_rows, static_cast<uint64_t>(std::pow(10, k)));
    EXPECT_EQ(g.coordinates, w.coordinates);
    EXPECT_EQ(g.with_rhat, w.with_rhat);
    EXPECT_EQ(g.rhat_above, w.rhat_above);
    EXPECT_EQ(g.rhat_above_1_1, w.rhat_above_1_1);
    EXPECT_EQ(g.max_rhat, w.max_rhat);
    EXPECT_EQ(g.max_rhat_at, w.max_rhat_at);
  }
  const RowsClass& b = got.back();
  EXPECT_TRUE(b.intercept);
  EXPECT_EQ(b.min_rows, 160u);
  EXPECT_EQ(b.max_rows, 160u);
  EXPECT_EQ(b.coordinates, 1u);
  EXPECT_EQ(b.rhat_above_1_1, 1u);
  EXPECT_EQ(b.max_rhat, 1.2);
  EXPECT_EQ(b.max_rhat_at, 41u);

  // Without an intercept the last coordinate is feature 40 (in no row): no class for it.
  ASSERT_TRUE(rhat_by_rows(*store, std::span<const double>(rhat).first(41), false, &got).is_ok());
  ASSERT_EQ(got.size(), want.size());
  EXPECT_FALSE(got.back().intercept);
}

TEST(RhatByRows, NothingWithoutStatistics) {
  test::TempDir dir;
  const SparseRows rows = rows_of_growing_features();
  ASSERT_TRUE(test::write_store(dir.file("s.agld"), rows, 16, ChunkCodec{}, 41).is_ok());
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(dir.file("s.agld"), &store).is_ok());
  std::vector<RowsClass> got(3);
  ASSERT_TRUE(rhat_by_rows(*store, std::vector<double>(42, 1.0), true, &got).is_ok());
  EXPECT_TRUE(got.empty());
}

}  // namespace rhat_by_rows_test
}  // namespace
}  // namespace agld::diagnostics
