// The visit rule of the diagonal preconditioner (docs/samplers.md, "The visit rule"): which
// coordinates' M it lowers, to what, and that `agld optimize`'s preconditioner keeps the
// statistics' M.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>

#include "model/model.hpp"
#include "sampler/plan.hpp"
#include "sampler/preconditioner.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace visit_rule_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// The visit rule (docs/samplers.md, "The visit rule"): for sampling, eta M_j is lowered to
// max(0.03 / q'_j, 200 / (h_j I_kept)) where that is smaller. Rows here: feature 0 in every row,
// features 1..20 in 100 rows each (fewer than N/n = 200: M_j = 1/q_j, a visit's kick eta),
// features 21..40 in 2 rows each (too few visits to afford a lower M), and feature 41 in no row.
TEST(VisitRule, LowersWhatTheVisitsAfford) {
  TempDir dir;
  constexpr uint64_t kN = 20000;
  SparseRows rows;
  for (uint64_t r = 0; r < kN; ++r) {
    std::vector<uint32_t> idx{0};
    if (r % 10 == 0) idx.push_back(1 + static_cast<uint32_t>((r / 10) % 20));  // 100 rows each
    if (r % 500 == 7) idx.push_back(21 + static_cast<uint32_t>((r / 500) % 20));  // 2 rows each
    rows.add_row(0.5, idx, std::vector<float>(idx.size(), 1.0f));
  }
  auto store = make_store(dir.file("s.agld"), rows, 42, false, 4000);
  SampleOptions o;
  o.model = "linear";
  o.precondition = "diag";
  o.metric = "diag";  // the diagonal's own rules
  o.batch = 100;
  o.iterations = 20000;
  o.chains = 1;
  const auto model = model::find_model("linear")->make(o);
  const double n_over = static_cast<double>(kN) / 100, kept = 10000;  // N/n, I_kept (burn-in half)
  // What the statistics give (c = 1, s2p = 1), and the rule's bound on M_j.
  auto base = [&](double count) { return 1 / std::max(1 + count, 1 + n_over); };
  auto bound = [&](double count, double eta) { return std::max(0.03 / n_over, 200 / ((1 + count) * kept)) / eta; };

  for (bool sampling : {true, false}) {
    ResolvedSample rr;
    ASSERT_TRUE(sampler::resolve_options(*store, nullptr, o, &rr).is_ok());
    sampler::Preconditioner p;
    ASSERT_TRUE(sampler::make_preconditioner(*store, *model, false, sampling, &rr, &p).is_ok());
    const double eta = rr.step;
    auto m = [&](uint32_t j) { return p.level_m[p.level[j]]; };
    // Levels round M down by less than a factor 2^(1/4).
    auto expect_m = [&](uint32_t j, double want, const char* what) {
      EXPECT_LE(m(j), want * (1 + 1e-6)) << what << " " << j << (sampling ? " (sampling)" : " (optimize)");
      EXPECT_GT(m(j), want / std::exp2(0.25) * (1 - 1e-6)) << what << " " << j;
    };
    std::cout << (sampling ? "sampling" : "optimize") << ": eta " << eta << ", kick cap " << rr.precondition_kick_cap
              << " (" << rr.precondition_kick_capped << " capped), lowered " << rr.precondition_visit_lowered
              << ", M_1 " << m(1) << " (statistics " << base(100) << ", bound " << bound(100, eta) << ")\n";
    ASSERT_LT(bound(100, eta), base(100)) << "the test needs the rule to bind on features 1..20";
    ASSERT_GT(bound(2, eta), base(2)) << "and not on features 21..40";
    // The kick cap (docs/samplers.md, "The step") comes first: M_j at most t / q'_j.
    const double t = rr.precondition_kick_cap > 0 ? rr.precondition_kick_cap : HUGE_VAL;
    auto capped = [&](double mj) { return std::min(mj, t / n_over); };
    expect_m(0, base(kN), "always on");
    for (uint32_t j = 1; j <= 20; ++j) expect_m(j, sampling ? std::min(bound(100, eta), capped(base(100))) : capped(base(100)), "100 rows");
    for (uint32_t j = 21; j <= 40; ++j) expect_m(j, capped(base(2)), "2 rows");
    expect_m(41, 1.0, "in no row");  // the prior's alone: 1 / (1/s2p), no visit to bound
    EXPECT_EQ(rr.precondition_visit_lowered, sampling ? 20u : 0u);
  }
  // A given --step sets eta M_j itself: the rule, a bound on it, stays out of the way.
  ResolvedSample given;
  o.step = 0.25;
  ASSERT_TRUE(sampler::resolve_options(*store, nullptr, o, &given).is_ok());
  sampler::Preconditioner p;
  ASSERT_TRUE(sampler::make_preconditioner(*store, *model, true, true, &given, &p).is_ok());
  EXPECT_EQ(given.precondition_visit_lowered, 0u);
  EXPECT_NEAR(p.level_m[p.level[1]], base(100), base(100) * 0.16);
}

}  // namespace visit_rule_test
}  // namespace
}  // namespace agld::test
