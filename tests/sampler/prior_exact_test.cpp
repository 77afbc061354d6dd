// A coordinate in no training row: the likelihood does not involve it, so its posterior is the
// prior exactly, independent of everything else. posterior.npy holds the prior's moments, with
// no Monte Carlo error and no diagnostics, and the verdict does not count it (docs/samplers.md,
// "Diagnostics").
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace prior_exact_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// Rows on features 0-9 of 20: features 10-19 are in no row.
SparseRows rows_on_half(uint64_t seed, size_t n) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  SparseRows rows;
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (uint32_t j = 0; j < 10; ++j) {
      if (rng() % 2) continue;
      idx.push_back(j);
      val.push_back(static_cast<float>(n01(rng)));
    }
    rows.add_row(n01(rng) > 0 ? 1.0 : -1.0, idx, val);
  }
  return rows;
}

SampleResult run(const Store& store, double prior_var, const std::string& precondition) {
  SampleOptions o;
  o.seed = test_seed(3);
  o.iterations = 400;
  o.batch = 50;
  o.prior_var = prior_var;
  o.precondition = precondition;
  o.intercept = true;
  o.memory = uint64_t{512} << 20;
  KeepDraws keep;
  SampleResult r;
  const Status st = sample(store, nullptr, o, keep, &r);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return r;
}

TEST(PriorExact, CoordinatesInNoRowHaveThePriorExactly) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_on_half(test_seed(3), 300), 20, true, 16, true);
  for (double prior_var : {1.0, 4.0}) {
    const SampleResult r = run(*store, prior_var, "diag");
    EXPECT_EQ(r.prior_exact, 10u);
    for (uint64_t j = 0; j < r.run.dim; ++j) {
      const bool none = j >= 10 && j < 20;
      if (none) {
        EXPECT_EQ(r.mean[j], 0.0) << j;
        EXPECT_EQ(r.sd[j], std::sqrt(prior_var)) << j;
        EXPECT_EQ(r.mcse[j], 0.0) << j;
        EXPECT_TRUE(std::isnan(r.rhat[j]) && std::isnan(r.ess[j])) << j;
      } else {
        EXPECT_TRUE(std::isfinite(r.rhat[j])) << j;  // sampled, diagnosed
        EXPECT_NE(r.mcse[j], 0.0) << j;
      }
    }
    EXPECT_EQ(r.diagnostics.finite, r.run.dim - 10);
  }
  // Without the per-feature statistics' counts (no preconditioner) nothing is known exactly.
  const SampleResult none = run(*store, 1.0, "none");
  EXPECT_EQ(none.prior_exact, 0u);
  EXPECT_TRUE(std::isfinite(none.rhat[15]));
}

}  // namespace prior_exact_test
}  // namespace
}  // namespace agld::test
