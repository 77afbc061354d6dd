// How --memory is split (docs/samplers.md, "Memory"): at the smallest budget the plan accepts,
// every reader gets at least its minimum and the run goes, with a test store whose reader could
// take a quarter of the readers' share (it once took it from the training readers' minimums).
#include <gtest/gtest.h>

#include <random>

#include "sampler_test_support.hpp"

namespace agld::test {
namespace {

constexpr uint32_t kDim = 20;

TEST(MemoryPlan, TheSmallestBudgetAcceptedRunsWithATestStore) {
  TempDir dir;
  // Training rows in one large chunk (large reader minimums), test rows in many small ones
  // (a small minimum, a large whole store).
  auto train = make_store(dir.file("train.agld"), dense_binary_rows(test_seed(211), 20000, kDim, 0.1), kDim, true, 20000);
  auto test = make_store(dir.file("test.agld"), dense_binary_rows(test_seed(212), 200000, kDim, 0.1), kDim, true, 16);
  SampleOptions o;
  o.method = "ptu-ca";  // a main reader and a pass reader
  o.precondition = "none";
  o.chains = 1;
  o.iterations = 300;
  o.evaluations = 2;
  o.seed = test_seed(213);
  uint64_t lo = uint64_t{1} << 20, hi = uint64_t{4} << 30;  // lo fails, hi resolves
  ResolvedSample r;
  o.memory = hi;
  ASSERT_TRUE(resolve_sample(*train, test.get(), o, &r).is_ok());
  while (hi - lo > (uint64_t{64} << 10)) {
    o.memory = lo + (hi - lo) / 2;
    (resolve_sample(*train, test.get(), o, &r).is_ok() ? hi : lo) = o.memory;
  }
  o.memory = hi + (uint64_t{1} << 20);  // the process grows a little between the plans
  std::cout << "smallest budget accepted: " << (hi >> 10) << " KiB" << std::endl;
  KeepDraws keep;
  SampleResult result;
  const Status st = sample(*train, test.get(), o, keep, &result);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_LT(result.run.reader_bytes, o.memory);
}

}  // namespace
}  // namespace agld::test
