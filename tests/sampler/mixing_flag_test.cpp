// The diagnostics tell the truth about mixing: an ill-conditioned posterior (two nearly
// collinear features: condition number about 200) run with the default length is flagged
// (some R-hat above 1.01), and the same problem run until it has mixed is not, its means then
// within Monte Carlo error of the exact Gaussian posterior.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace mixing_flag_test {  // this file's names (unity batches: tests/CMakeLists.txt)

struct Problem {
  SparseRows rows;
  Eigen::VectorXd mean, sd;
};

Problem collinear(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  constexpr int kRows = 500, kDim = 3;
  Problem p;
  Eigen::MatrixXd x(kRows, kDim);
  Eigen::VectorXd y(kRows);
  for (int r = 0; r < kRows; ++r) {
    const double a = n01(rng);
    const float v[3] = {static_cast<float>(a), static_cast<float>(a + 0.07 * n01(rng)), static_cast<float>(n01(rng))};
    for (int j = 0; j < kDim; ++j) x(r, j) = v[j];
    y(r) = 0.5 * v[0] + 0.5 * v[1] - v[2] + n01(rng);
    p.rows.add_row(y(r), std::vector<uint32_t>{0, 1, 2}, std::vector<float>(v, v + 3));
  }
  const Eigen::MatrixXd precision = x.transpose() * x + Eigen::MatrixXd::Identity(kDim, kDim);
  const Eigen::MatrixXd cov = precision.inverse();
  p.mean = cov * x.transpose() * y;
  p.sd = cov.diagonal().array().sqrt();
  return p;
}

SampleResult run(const Store& store, std::optional<uint64_t> iterations, std::optional<uint64_t> thin, uint64_t seed,
                 const std::string& until_mixed = "off", std::optional<double> max_passes = std::nullopt) {
  SampleOptions o;
  o.until_mixed = until_mixed;
  o.max_passes = max_passes;
  o.model = "linear";
  o.method = "tmu-ca";
  o.metric = "diag";  // a short run the diagonal metric leaves unmixed (the dense block mixes it)
  o.seed = seed;
  o.iterations = iterations;
  o.thin = thin;
  o.evaluations = 0;
  o.memory = uint64_t{512} << 20;
  KeepDraws keep;
  SampleResult r;
  const Status st = sample(store, nullptr, o, keep, &r);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return r;
}

// The default length (every default but --until-mixed off): flagged. The same problem run long
// enough is not, and is right: UntilMixedGoesOnUntilTheRunHasMixed's last stage.
TEST(MixingFlag, ShortRunIsFlagged) {
  const uint64_t seed = test_seed(61);
  const Problem p = collinear(seed);
  TempDir dir;
  auto store = make_store(dir.file("c.agld"), p.rows, 3, false);
  const SampleResult brief = run(*store, std::nullopt, std::nullopt, seed);
  std::cout << "default length: " << brief.run.iterations << " iterations a chain, largest R-hat "
            << brief.diagnostics.max_rhat << ", smallest ESS " << brief.diagnostics.min_ess << std::endl;
  EXPECT_GT(brief.diagnostics.rhat_above, 0u);
  EXPECT_GT(brief.diagnostics.max_rhat, 1.01);
}

// Every default but the cap in passes, the run's length included: the first stage is the short
// run above, which has not mixed; the run doubles until it has (docs/samplers.md, "Until
// mixed"; the diagonal metric needs about 800,000 iterations here, 16 times the first stage),
// and is then right. At the default cap (4 times) it stops short and says so.
TEST(MixingFlag, UntilMixedGoesOnUntilTheRunHasMixed) {
  const uint64_t seed = test_seed(61);
  const Problem p = collinear(seed);
  TempDir dir;
  auto store = make_store(dir.file("c.agld"), p.rows, 3, false);
  const SampleResult capped = run(*store, std::nullopt, std::nullopt, seed, "auto");
  std::cout << "default cap: " << capped.stop_reason << std::endl;
  EXPECT_EQ(capped.run.stage, 2u);
  EXPECT_NE(capped.stop_reason.find("not mixed"), std::string::npos);
  const double first_stage_passes = 1e7 / 500;  // the small-store floor: the iterations that read 10^7 rows
  const SampleResult r = run(*store, std::nullopt, std::nullopt, seed, "auto", 16 * first_stage_passes);
  for (const std::string& v : r.stage_verdicts) std::cout << v << std::endl;
  ASSERT_TRUE(r.run.until_mixed) << r.run.until_mixed_rule;
  EXPECT_GE(r.run.stage, 1u) << "the first stage mixed: the case no longer tests going on";
  EXPECT_EQ(r.diagnostics.rhat_above, 0u) << r.stop_reason;
  EXPECT_GE(r.diagnostics.min_ess, 400) << r.stop_reason;
  for (int j = 0; j < 3; ++j) {
    const size_t u = static_cast<size_t>(j);
    std::cout << "coordinate " << j << ": mean " << r.mean[u] << " (exact " << p.mean(j) << ", "
              << (r.mean[u] - p.mean(j)) / r.mcse[u] << " mcse), sd " << r.sd[u] << " (exact " << p.sd(j) << ")"
              << std::endl;
    EXPECT_NEAR(r.mean[u], p.mean(j), 4 * r.mcse[u] + 0.02 * p.sd(j));
    // ld's own bias at diag's default step, not mixing: a direction at eigenvalue lambda_j of
    // the preconditioned Hessian has its variance times 1 / (1 - eta lambda_j / 2); the third
    // coordinate, at about half the largest, is 12 % wide (the dense block's step is exact).
    EXPECT_NEAR(r.sd[u], p.sd(j), 0.15 * p.sd(j));
  }
}

}  // namespace mixing_flag_test
}  // namespace
}  // namespace agld::test
