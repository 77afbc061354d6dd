// The default method (docs/samplers.md, "Defaults"): ptu-ca on a shuffled store; ptu-rr on a
// store whose rows kept their source order, where a cyclic order would follow the order's
// trends (docs/readers.md); and when such a store does not fit the reader's memory, an error
// that says what to do, with a --memory that works.
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <regex>

#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace default_method_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// The warnings about the stored order (a store without per-feature statistics has a note too).
size_t order_warnings(const ResolvedSample& r) {
  return static_cast<size_t>(std::count_if(r.warnings.begin(), r.warnings.end(), [](const std::string& w) {
    return w.find("source order") != std::string::npos;
  }));
}

constexpr uint32_t kDim = 20;

// The rows as a store that says whether its rows were shuffled.
std::unique_ptr<Store> store_of(const std::string& path, const SparseRows& rows, bool shuffled) {
  StoreMeta meta;
  meta.features = kDim;
  meta.label_kind = LabelKind::kBinary;
  meta.options.shuffle = shuffled;
  meta.row_sq_norm_max = 0;
  for (size_t r = 0; r < rows.rows(); ++r) {
    double sq = 0;
    for (float v : rows.row_values(r)) sq += double{v} * v;
    meta.row_sq_norm_sum += sq;
    meta.row_sq_norm_max = std::max(meta.row_sq_norm_max, sq);
  }
  EXPECT_TRUE(write_store(path, rows, 4096, ChunkCodec{}, meta).is_ok());
  std::unique_ptr<Store> store;
  EXPECT_TRUE(Store::open(path, &store).is_ok());
  return store;
}

TEST(DefaultMethod, ShuffledStoreIsReadCyclically) {
  TempDir dir;
  auto store = store_of(dir.file("s.agld"), dense_binary_rows(test_seed(181), 2000, kDim, 1.0), true);
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, SampleOptions{}, &r).is_ok());
  EXPECT_EQ(r.method, "ptu-ca");
  EXPECT_EQ(r.method_rule, "default");
  EXPECT_FALSE(r.random_for_order);
  EXPECT_EQ(order_warnings(r), 0u);
}

TEST(DefaultMethod, StoreInSourceOrderIsReadInARandomOrder) {
  TempDir dir;
  auto store = store_of(dir.file("k.agld"), dense_binary_rows(test_seed(182), 2000, kDim, 1.0), false);
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, SampleOptions{}, &r).is_ok());
  EXPECT_EQ(r.method, "ptu-rr");
  EXPECT_EQ(r.access, "rr");
  EXPECT_TRUE(r.random_for_order);
  EXPECT_NE(r.method_rule.find("source order"), std::string::npos) << r.method_rule;
  EXPECT_EQ(order_warnings(r), 0u);  // nothing to warn of: the order is random
}

TEST(DefaultMethod, AGivenMethodIsKeptAndWarnedOf) {
  TempDir dir;
  auto store = store_of(dir.file("k.agld"), dense_binary_rows(test_seed(183), 2000, kDim, 1.0), false);
  SampleOptions o;
  o.method = "tmu-ca";
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
  EXPECT_EQ(r.method, "tmu-ca");
  EXPECT_EQ(r.method_rule, "given");
  EXPECT_FALSE(r.random_for_order);
  EXPECT_EQ(order_warnings(r), 1u);
}

// Budgets shrinking from 2 GiB: at some budget the chains fit but the store no longer fits the
// reader; there the default is an error naming the fixes and a --memory, which then resolves
// with the whole store in the reader's share.
TEST(DefaultMethod, StoreInSourceOrderThatDoesNotFitIsAnErrorWithTheFixes) {
  TempDir dir;
  auto store = store_of(dir.file("k.agld"), dense_binary_rows(test_seed(184), 200000, kDim, 1.0), false);
  std::string message;
  uint64_t failed_at = 0;
  for (double budget = 2.0 * (1 << 30); budget > (1 << 20) && message.empty(); budget *= 0.8) {
    SampleOptions o;
    o.memory = static_cast<uint64_t>(budget);
    ResolvedSample r;
    const Status st = resolve_sample(*store, nullptr, o, &r);
    if (!st.is_ok() && st.message().find("source order") != std::string::npos) {
      message = st.message();
      failed_at = o.memory;
    }
  }
  ASSERT_FALSE(message.empty()) << "no budget between 1 MiB and 2 GiB fits the chains but not the store";
  std::cout << message << std::endl;
  for (const char* fix : {"--keep-order", "--method", "ptu-ca", "ptu-rr"}) {
    EXPECT_NE(message.find(fix), std::string::npos) << fix;
  }
  std::smatch m;
  ASSERT_TRUE(std::regex_search(message, m, std::regex("--memory ([0-9]+)M or more"))) << message;
  SampleOptions o;
  o.memory = std::stoull(m[1].str()) << 20;
  ResolvedSample r;
  const Status st = resolve_sample(*store, nullptr, o, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(r.method, "ptu-rr");
  // A given method is the user's choice at any budget that fits it.
  o.memory = failed_at;
  o.method = "ptu-rr";
  EXPECT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
}

}  // namespace default_method_test
}  // namespace
}  // namespace agld::test
