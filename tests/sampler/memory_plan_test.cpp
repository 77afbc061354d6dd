// How --memory is split (docs/samplers.md, "Memory"): at the smallest budget the plan accepts,
// every reader gets at least its minimum and the run goes, with a test store whose reader could
// take a quarter of the readers' share (it once took it from the training readers' minimums).
#include <gtest/gtest.h>

#include <random>

#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace memory_plan_test {  // this file's names (unity batches: tests/CMakeLists.txt)

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

// The lazy state's layout (sampler/lazy_state.hpp): each stamp in its coordinate's record when
// the budget holds it, else in an array of its own, 4 bytes a coordinate less. At a large d the
// smallest budget accepted takes the compact layout, a larger one the record layout, and a
// budget between the two plans' needs still runs.
TEST(MemoryPlan, TheRecordLayoutWhenItFitsElseTheCompactOne) {
  TempDir dir;
  constexpr uint64_t kWide = 1000000;  // 4 MB of stamps a chain
  auto train = make_store(dir.file("train.agld"), dense_binary_rows(test_seed(214), 2000, kDim, 0.1), kWide, true, 256);
  SampleOptions o;
  o.method = "tmu-ca";
  o.precondition = "none";
  o.chains = 4;
  o.iterations = 40;
  o.evaluations = 1;
  o.seed = test_seed(215);
  ResolvedSample r;
  o.memory = uint64_t{4} << 30;
  ASSERT_TRUE(resolve_sample(*train, nullptr, o, &r).is_ok());
  EXPECT_TRUE(r.stamps_in_record);
  const uint64_t record_chain = r.chain_bytes;
  uint64_t lo = uint64_t{1} << 20, hi = o.memory;
  while (hi - lo > (uint64_t{64} << 10)) {
    o.memory = lo + (hi - lo) / 2;
    (resolve_sample(*train, nullptr, o, &r).is_ok() ? hi : lo) = o.memory;
  }
  o.memory = hi + (uint64_t{1} << 20);  // the process grows a little between the plans
  ASSERT_TRUE(resolve_sample(*train, nullptr, o, &r).is_ok());
  std::cout << "smallest budget accepted: " << (hi >> 20) << " MiB; a chain " << (record_chain >> 10)
            << " KiB with the stamps in the records, " << (r.chain_bytes >> 10) << " KiB without" << std::endl;
  EXPECT_FALSE(r.stamps_in_record);
  EXPECT_EQ(record_chain - r.chain_bytes, 4 * kWide);
  SampleOptions more = o;
  more.memory += 4 * 4 * kWide + (uint64_t{8} << 20);  // the four chains' stamp slots, and room
  ASSERT_TRUE(resolve_sample(*train, nullptr, more, &r).is_ok());
  EXPECT_TRUE(r.stamps_in_record);
  KeepDraws keep;
  SampleResult result;
  const Status st = sample(*train, nullptr, o, keep, &result);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_FALSE(result.run.stamps_in_record);
}

}  // namespace memory_plan_test
}  // namespace
}  // namespace agld::test
