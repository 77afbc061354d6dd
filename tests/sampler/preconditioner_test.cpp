// The diagonal preconditioner (docs/samplers.md, "Preconditioning") takes its per-feature
// statistics from the store's record, or, for a store written before the record existed,
// computes them in a pass that the run counts and names. Both give the same run, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "agld/feature_stats.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace preconditioner_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint64_t kRows = 6000;
constexpr uint32_t kDim = 60;

// One-hot rows with a rare level and a numeric column: feature 0 in every row, one of
// features 1..49 (Zipf-like), 50..58 numeric, 59 in one row only.
SparseRows onehot_rows(std::mt19937_64& rng) {
  std::normal_distribution<double> n01;
  std::uniform_real_distribution<double> u(0, 1);
  SparseRows rows;
  for (uint64_t r = 0; r < kRows; ++r) {
    std::vector<uint32_t> idx = {0, 1 + static_cast<uint32_t>(48 * u(rng) * u(rng))};
    std::vector<float> val = {1.0f, 1.0f};
    const uint32_t num = 50 + static_cast<uint32_t>(r % 9);
    idx.push_back(num);
    val.push_back(static_cast<float>(n01(rng)));
    if (r == 1234) {
      idx.push_back(59);
      val.push_back(2.0f);
    }
    double y = 0.3 + n01(rng);
    for (size_t e = 0; e < idx.size(); ++e) y += 0.1 * idx[e] * val[e] / kDim;
    rows.add_row(y, idx, val);
  }
  return rows;
}

struct DiagRun {
  KeepDraws keep;
  SampleResult result;
};

// g++ 12 at -O2 warns that the disengaged std::optional<std::string> being assigned is
// "maybe uninitialized" here (a known false positive of its inlining; any spelling of the
// assignment): silenced for this function alone.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
void run_diag(const Store& store, DiagRun* out) {
  SampleOptions o;
  o.method = "tmu-rr";
  o.model = "linear";
  o.precondition = "diag";
  o.metric = "diag";  // the diagonal's own rules
  o.chains = 2;
  o.iterations = 3000;
  o.evaluations = 1;
  o.intercept = true;
  o.memory = uint64_t{1} << 30;
  o.seed = test_seed(17);
  Status st = sample(store, nullptr, o, out->keep, &out->result);
  ASSERT_TRUE(st.is_ok()) << st.message();
}
#pragma GCC diagnostic pop

bool has_note(const SampleResult& r) {
  for (const std::string& w : r.run.warnings) {
    if (w.find("records no per-feature statistics") != std::string::npos) return true;
  }
  return false;
}

TEST(Preconditioner, StoredAndComputedStatisticsGiveTheSameRun) {
  TempDir dir;
  std::mt19937_64 rng(test_seed(3));
  const SparseRows rows = onehot_rows(rng);
  StoreMeta meta;
  meta.features = kDim;
  meta.label_kind = LabelKind::kReal;
  ChunkCodec codec;
  ASSERT_TRUE(write_store(dir.file("old.agld"), rows, 500, codec, meta).is_ok());
  ASSERT_TRUE(write_store_with_stats(dir.file("new.agld"), rows, 500, codec, meta, 16).is_ok());
  std::unique_ptr<Store> old_store, new_store;
  ASSERT_TRUE(Store::open(dir.file("old.agld"), &old_store).is_ok());
  ASSERT_TRUE(Store::open(dir.file("new.agld"), &new_store).is_ok());
  ASSERT_FALSE(has_feature_stats(*old_store));
  ASSERT_TRUE(has_feature_stats(*new_store));

  DiagRun a, b;
  run_diag(*old_store, &a);
  run_diag(*new_store, &b);
  std::cout << "diag: step " << b.result.run.step << ", " << b.result.run.precondition_levels << " levels, M from "
            << b.result.run.precondition_m_min << " to " << b.result.run.precondition_m_max << ", lambda "
            << b.result.run.precondition_lambda << "\n";
  // Computed or read, the same preconditioner and the same draws.
  EXPECT_EQ(a.result.run.step, b.result.run.step);
  EXPECT_EQ(a.result.run.precondition_levels, b.result.run.precondition_levels);
  EXPECT_EQ(a.result.run.precondition_m_min, b.result.run.precondition_m_min);
  EXPECT_EQ(a.result.run.precondition_m_max, b.result.run.precondition_m_max);
  EXPECT_EQ(a.result.run.precondition_lambda, b.result.run.precondition_lambda);
  EXPECT_GT(b.result.run.precondition_levels, 1u);
  ASSERT_FALSE(b.keep.draws.empty());
  EXPECT_EQ(a.keep.draws, b.keep.draws);
  // The computed statistics cost a pass, counted and said; the recorded ones cost none.
  EXPECT_EQ(a.result.run.setup_rows, b.result.run.setup_rows + kRows);
  ASSERT_TRUE(a.result.last_eval.has_value() && b.result.last_eval.has_value());
  EXPECT_NEAR(a.result.last_eval->passes - b.result.last_eval->passes, 1.0, 1e-9);  // one pass, for every chain
  EXPECT_TRUE(has_note(a.result));
  EXPECT_FALSE(has_note(b.result));
}

// Under diag --step is in M's metric: what must stay below the prior's variance is eta M_j,
// not eta (a diag run's own default step can be above it, and given back).
TEST(Preconditioner, TheStepIsCheckedInItsMetric) {
  TempDir dir;
  std::mt19937_64 rng(test_seed(5));
  std::normal_distribution<double> n01;
  SparseRows rows;  // every feature in 100 rows or more: M_j = 1 / (c (N/n)) at most
  for (uint64_t r = 0; r < kRows; ++r) {
    const uint32_t level = 1 + static_cast<uint32_t>(r % (kDim - 1));
    rows.add_row(0.5 + n01(rng), std::vector<uint32_t>{0, level}, std::vector<float>{1.0f, 1.0f});
  }
  auto store = make_store(dir.file("s.agld"), rows, kDim, false, 500);
  SampleOptions o;
  o.model = "linear";
  o.precondition = "diag";
  o.metric = "diag";  // the diagonal's own rules
  o.iterations = 200;
  o.chains = 1;
  KeepDraws keep;
  SampleResult r;
  ASSERT_TRUE(sample(*store, nullptr, o, keep, &r).is_ok());
  const double m_max = r.run.precondition_m_max, eta = r.run.step;
  ASSERT_GT(m_max, 0);
  ASSERT_LT(m_max, 0.1);  // every feature in many rows
  // A prior variance below the default step: eta alone would be refused, eta M_j is fine.
  o.prior_var = eta / 2;
  o.step = eta;
  Status st = sample(*store, nullptr, o, keep, &r);
  EXPECT_TRUE(st.is_ok()) << "eta M_j < prior_var: " << st.message();
  o.step = 2 * o.prior_var / m_max;  // eta M_j of the largest M above the prior's variance
  st = sample(*store, nullptr, o, keep, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("--step times the largest M_j"), std::string::npos) << st.message();
  o.precondition = "none";
  o.step = eta;
  st = sample(*store, nullptr, o, keep, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << "without diag eta itself must stay below prior_var";
}

// A row kicks every coordinate it holds at once: under diag the default step keeps
// eta (N/n) c sum_j M_j x_ij^2 (a row's kick in M's metric) at 1/4 at most, which variance-
// reduced estimates need, and which 1 / (1.25 lambda) alone does not give when rows carry many
// rare features. Rows here: an always-on feature and 12 of 20,000 features (most seen once).
TEST(Preconditioner, TheDefaultStepBoundsARowsKick) {
  TempDir dir;
  const uint64_t seed = test_seed(21);
  std::cout << "seed " << seed << "\n";
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> rare(1, 20000);
  constexpr uint64_t kKickRows = 3000;
  SparseRows rows;
  for (uint64_t r = 0; r < kKickRows; ++r) {
    std::vector<uint32_t> idx{0};
    while (idx.size() < 13) {
      const uint32_t j = rare(rng);
      if (std::find(idx.begin(), idx.end(), j) == idx.end()) idx.push_back(j);
    }
    std::sort(idx.begin(), idx.end());
    rows.add_row(0.5 + n01(rng), idx, std::vector<float>(idx.size(), 1.0f));
  }
  auto store = make_store(dir.file("s.agld"), rows, 20001, false, 500);
  // The kick, from the rows (all sampled: fewer than the sample's 65,536) and M_j's definition.
  const double per_row = static_cast<double>(kKickRows) / 10;  // N / n
  std::vector<double> count(20001, 0);
  for (uint64_t r = 0; r < kKickRows; ++r) {
    for (uint32_t j : rows.row_indices(r)) count[j] += 1;
  }
  double kick = 0;
  for (uint64_t r = 0; r < kKickRows; ++r) {
    double s = 0;
    for (uint32_t j : rows.row_indices(r)) s += 1 / std::max(1 + count[j], 1 + per_row);  // M_j x_ij^2, c = 1, s2p = 1
    kick = std::max(kick, per_row * s);
  }
  for (const char* method : {"ptu-rr", "tmu-ca"}) {
    SampleOptions o;
    o.model = "linear";
    o.method = method;
    o.precondition = "diag";
    o.metric = "diag";  // the diagonal's own rules
    o.batch = 10;
    o.chains = 2;
    o.epochs = 3;
    o.thin = 1;
    o.evaluations = 1;
    o.seed = seed;
    o.track_default = false;
    for (uint64_t j = 0; j < 300; ++j) o.track.push_back(j);
    KeepDraws keep;
    SampleResult r;
    ASSERT_TRUE(sample(*store, nullptr, o, keep, &r).is_ok());
    std::cout << method << ": step " << r.run.step << ", lambda " << r.run.precondition_lambda << ", kick "
              << r.run.precondition_kick << ", kick cap " << r.run.precondition_kick_cap << " ("
              << r.run.precondition_kick_capped << " capped)\n";
    EXPECT_NEAR(r.run.precondition_kick, kick, 1e-3 * kick);  // the statistics' M
    EXPECT_GT(kick, 4 * 1.25 * r.run.precondition_lambda);   // at the step lambda allows, the kick would bind
    // The cap lowers the rare features' M instead of the step: the step is lambda's, and the
    // largest row kick at the capped M (every rare feature's u_j = M_j q'_j at most t) is within
    // 1 / (4 eta) again.
    EXPECT_NEAR(r.run.step, 1 / (1.25 * r.run.precondition_lambda), 1e-9);
    const double t = r.run.precondition_kick_cap;
    ASSERT_GT(t, 0);
    double capped_kick = 0;
    for (uint64_t row = 0; row < kKickRows; ++row) {
      double s = 0;
      for (uint32_t j : rows.row_indices(row)) s += std::min(1 / std::max(1 + count[j], 1 + per_row), t / per_row);
      capped_kick = std::max(capped_kick, per_row * s);
    }
    EXPECT_LE(r.run.step * capped_kick, 0.25 * (1 + 1e-6));
    EXPECT_GT(r.run.step * capped_kick, 0.25 * (1 - 1e-3));  // the largest t that fits
    // Every feature some row has: feature 0 too (in every row, u_0 = q'_0 / h_0 = 0.1 > t).
    EXPECT_EQ(r.run.precondition_kick_capped,
              static_cast<uint64_t>(std::count_if(count.begin(), count.end(), [](double n) { return n > 0; })));
    // And the chains stay where the posterior is (prior sd 1; a diverging chain leaves by orders).
    double largest = 0;
    for (const auto& draw : keep.draws) {
      for (double v : draw) largest = std::max(largest, std::abs(v));
    }
    EXPECT_LT(largest, 10.0) << method;
  }
}

TEST(Preconditioner, UnknownNameListsTheKnownOnes) {
  TempDir dir;
  std::mt19937_64 rng(test_seed(4));
  auto store = make_store(dir.file("s.agld"), onehot_rows(rng), kDim, false, 500);
  SampleOptions o;
  o.model = "linear";
  o.precondition = "jacobi";
  SampleResult r;
  KeepDraws keep;
  Status st = sample(*store, nullptr, o, keep, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("jacobi"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("diag, none"), std::string::npos) << st.message();
}

}  // namespace preconditioner_test
}  // namespace
}  // namespace agld::test
