// The rare coordinates' moves (sampler/conditional_move.hpp, sampler/rare_rows.hpp): one
// Metropolis-Hastings step leaves a coordinate's conditional invariant and is nearly an
// independent draw from it; a Gibbs sweep leaves every gathered offset as a gathering at the
// moved state would have it.
#include <gtest/gtest.h>

#include <cmath>
#include <iostream>
#include <random>
#include <vector>

#include "agld/feature_stats.hpp"
#include "agld/reader.hpp"
#include "model/model.hpp"
#include "sampler/conditional_move.hpp"
#include "sampler/rare_rows.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace conditional_move_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::ConditionalRow;

std::unique_ptr<model::Model> logistic() {
  SampleOptions o;
  return model::find_model("logistic")->make(o);
}

// Conditionals of a level in one, two and seven rows (skewed: the prior times a few sigmoids,
// one saturated), under prior variances 1 and 25: a chain of moves from the conditional's mean
// has its mean and variance (within 4.5 Monte Carlo standard errors, the batch means' over
// 50 batches) and accepts most proposals.
TEST(ConditionalMove, KeepsTheConditionalAndAcceptsMost) {
  const uint64_t seed = test_seed(5);
  std::cout << "seed " << seed << std::endl;
  const auto model = logistic();
  const std::vector<std::vector<ConditionalRow>> cases = {
      {{0.3f, 1.0f, 1.0f}},
      {{-2.0f, 1.0f, 1.0f}, {4.0f, 1.0f, -1.0f}},
      {{0.5f, 1.0f, 1.0f}, {0.1f, 1.0f, 1.0f}, {-0.4f, 1.0f, -1.0f}, {1.2f, 1.0f, 1.0f}, {0.0f, 1.0f, 1.0f},
       {-3.0f, 1.0f, 1.0f}, {9.0f, 1.0f, 1.0f}},
  };
  sampler::Noise noise(seed);
  for (double prior_var : {1.0, 25.0}) {
    for (const auto& rows : cases) {
      const double p0 = 1 / prior_var;
      const auto m = sampler::conditional_moments(rows, *model, p0, 0.0);
      constexpr int kBatches = 50, kPer = 400;
      double x = m.mean, sum = 0, sum_sq = 0;
      std::vector<double> batch_means;
      uint64_t accepted = 0;
      for (int b = 0; b < kBatches; ++b) {
        double s = 0;
        for (int i = 0; i < kPer; ++i) {
          const auto step = sampler::conditional_move(rows, *model, p0, x, m, noise);
          accepted += step.accepted;
          x = step.value;
          s += x;
          sum += x;
          sum_sq += x * x;
        }
        batch_means.push_back(s / kPer);
      }
      const double n = kBatches * kPer, mean = sum / n, var = sum_sq / n - mean * mean;
      double spread = 0;
      for (double bm : batch_means) spread += (bm - mean) * (bm - mean);
      const double mcse = std::sqrt(spread / (kBatches - 1) / kBatches);
      const double rate = static_cast<double>(accepted) / n;
      std::cout << rows.size() << " rows, prior var " << prior_var << ": mean " << mean << " (conditional " << m.mean
                << ", MCSE " << mcse << "), var " << var << " (" << m.var << "), acceptance " << rate << std::endl;
      EXPECT_NEAR(mean, m.mean, 4.5 * mcse);
      // The variance's error: about sqrt(2 / n_eff) of it, n_eff from the mean's MCSE.
      const double n_eff = m.var / (mcse * mcse);
      EXPECT_NEAR(var / m.var, 1, 4.5 * std::sqrt(2 / n_eff));
      EXPECT_GT(rate, 0.75);
    }
  }
}

// Rows holding three rare features each (of 60, each in about ten rows) beside a common one: a
// sweep moves most rare coordinates, and each gathered offset (the row's margin without its
// coordinate) is then the one a new gathering at the moved state finds.
TEST(ConditionalMove, TheSweepKeepsEveryOffsetCurrent) {
  const uint64_t seed = test_seed(9);
  std::cout << "seed " << seed << std::endl;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> rare(1, 59);
  constexpr uint32_t kD = 60;
  SparseRows rows;
  for (int i = 0; i < 200; ++i) {
    std::vector<uint32_t> idx{0};
    while (idx.size() < 4) {
      const uint32_t j = rare(rng);
      if (std::find(idx.begin(), idx.end(), j) == idx.end()) idx.push_back(j);
    }
    std::sort(idx.begin(), idx.end());
    std::vector<float> val;
    for (size_t e = 0; e < idx.size(); ++e) val.push_back(static_cast<float>(e == 0 ? 1.0 : 0.5 + std::abs(n01(rng))));
    rows.add_row(n01(rng) > 0 ? 1 : -1, idx, val);
  }
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows, kD, true, 64, true);
  std::shared_ptr<const sampler::RareRows> layout;
  ASSERT_TRUE(sampler::RareRows::make(*store, kD, 64, &layout).is_ok());
  ASSERT_EQ(layout->size(), kD - 1);  // every feature but the common one
  std::vector<BatchRow> views;
  append_row_views(rows.offsets, rows.indices.data(), rows.values.data(), &views);
  std::vector<uint64_t> ids(rows.rows());
  for (uint64_t i = 0; i < ids.size(); ++i) ids[i] = i;
  const Batch batch{ids, rows.labels, views};
  auto gather = [&](sampler::RareConditionals& rc, const std::vector<double>& x) {
    std::vector<double> margins(rows.rows());
    for (size_t i = 0; i < rows.rows(); ++i) {
      double s = 0;
      for (size_t e = 0; e < rows.row_indices(i).size(); ++e) s += x[rows.row_indices(i)[e]] * rows.row_values(i)[e];
      margins[i] = s;
    }
    rc.begin();
    rc.add(batch, margins, StridedSpan<const double>(x));
  };
  std::vector<double> x(kD);
  for (double& v : x) v = n01(rng);
  const auto model = logistic();
  sampler::RareConditionals moved(layout, true);
  gather(moved, x);
  const std::vector<double> before = x;
  sampler::Noise noise(seed ^ 0x5eed);
  const double d_sq = moved.compute(*model, 1.0, StridedSpan<double>(x), &noise);
  uint64_t changed = 0;
  double want_d_sq = 0;
  for (uint32_t j = 0; j < kD; ++j) {
    changed += x[j] != before[j];
    want_d_sq += x[j] * x[j] - before[j] * before[j];
  }
  std::cout << changed << " of " << kD - 1 << " rare coordinates moved (" << moved.accepted() << " of "
            << moved.proposed() << " proposals taken)" << std::endl;
  EXPECT_EQ(x[0], before[0]);  // not rare: never moved
  EXPECT_EQ(moved.proposed(), kD - 1);
  EXPECT_EQ(changed, moved.accepted());
  EXPECT_GT(changed, (kD - 1) * 3 / 4);
  EXPECT_NEAR(d_sq, want_d_sq, 1e-9 * (1 + std::abs(want_d_sq)));
  sampler::RareConditionals fresh(layout, false);
  gather(fresh, x);
  for (uint32_t r = 0; r < layout->size(); ++r) {
    const auto a = moved.rows(r), b = fresh.rows(r);
    ASSERT_EQ(a.size(), b.size());
    for (size_t p = 0; p < a.size(); ++p) {
      EXPECT_NEAR(a[p].offset, b[p].offset, 1e-5 * (1 + std::abs(b[p].offset))) << "coordinate " << layout->coordinate(r);
      EXPECT_EQ(a[p].x, b[p].x);
      EXPECT_EQ(a[p].y, b[p].y);
    }
  }
}

// Dummy-coded logistic data (datasets/dummy_logistic.svm: 3,000 rows, 165 of its 200 features
// in at most 64 rows, an intercept) against its exact posterior (dummy_logistic.ref.csv,
// MCSE 0.004 sd), one stage of the default length: with the sweep the rare coordinates' own
// draws (not their conditionals' moments) are within 0.1 sd in the mean and 10 % in the sd,
// nearly all of them; without it, fewer.
TEST(ConditionalMove, TheDrawsOfRareLevelsAreTheExactPosteriors) {
  const uint64_t seed = test_seed(2);
  const StanReference ref = read_reference("dummy_logistic.ref.csv");
  TempDir dir;
  auto store = dummy_logistic_store(dir.file("dummy.agld"));
  ASSERT_TRUE(store);
  uint64_t within[2] = {0, 0}, rare = 0;
  for (const bool gibbs : {true, false}) {
    SampleOptions o = dummy_logistic_options(seed);
    o.gibbs = gibbs ? "auto" : "off";
    o.track_default = false;
    for (uint64_t j = 0; j < 200; ++j) o.track.push_back(j);
    KeepDraws keep;
    SampleResult r;
    Status st = sample(*store, nullptr, o, keep, &r);
    ASSERT_TRUE(st.is_ok()) << st.message();
    ASSERT_EQ(r.run.gibbs, gibbs) << r.run.gibbs_rule;
    // Every sweep proposes a step for each chain's rare coordinates; nearly all are taken (the
    // proposal is the conditional's Gaussian at its moments).
    const uint64_t per_sweep = r.run.rao_blackwell_rare_coordinates * o.chains;
    if (gibbs) {
      EXPECT_GT(r.sweep_proposed, 0u);
      EXPECT_EQ(r.sweep_proposed % per_sweep, 0u) << r.sweep_proposed << " proposals, " << per_sweep << " a sweep";
      EXPECT_GT(static_cast<double>(r.sweep_accepted), 0.5 * static_cast<double>(r.sweep_proposed));
    } else {
      EXPECT_EQ(r.sweep_proposed, 0u);
    }
    EXPECT_LE(r.sweep_accepted, r.sweep_proposed);
    std::vector<uint64_t> counts(200, 0);
    ASSERT_TRUE(scan_feature_stats(*store, [&](const FeatureStatsBlock& b) {
                  for (size_t i = 0; i < b.count.size(); ++i) counts[b.first + i] = b.count[i];
                  return Status::ok();
                }).is_ok());
    rare = 0;
    for (uint64_t j = 0; j < 200; ++j) {
      if (counts[j] == 0 || counts[j] > 64) continue;
      ++rare;
      double sum = 0, sum_sq = 0;
      for (const auto& d : keep.draws) sum += d[j];
      const double n = static_cast<double>(keep.draws.size()), mean = sum / n;
      for (const auto& d : keep.draws) sum_sq += (d[j] - mean) * (d[j] - mean);
      const double sd = std::sqrt(sum_sq / (n - 1));
      const double err = std::abs(mean - ref.mean[j]) / ref.sd[j], ratio = sd / ref.sd[j];
      within[gibbs ? 0 : 1] += err <= 0.1 && std::abs(ratio - 1) <= 0.1;
    }
    std::cout << "seed " << seed << ", --gibbs " << o.gibbs << ": " << r.run.iterations << " iterations, "
              << keep.draws.size() << " draws; " << within[gibbs ? 0 : 1] << " of " << rare
              << " rare levels' draws within target; sweeps' steps " << r.sweep_accepted << " of " << r.sweep_proposed
              << " accepted (" << r.run.gibbs_rule << ")" << std::endl;
  }
  EXPECT_GE(within[0], rare * 95 / 100);
  EXPECT_GT(within[0], within[1]);
}

}  // namespace conditional_move_test
}  // namespace
}  // namespace agld::test
