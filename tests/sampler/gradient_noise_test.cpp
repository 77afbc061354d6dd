// The gradient noise's correction (sampler/gradient_noise.hpp; docs/samplers.md, "Gradient
// noise"): the pass factor against a simulation, each dynamics' weight against its stationary
// law, which levels may give up noise, and on a store with a rare factor beside frequent
// features (the minibatch noise's victims) the frequent coordinates' sds against the exact
// posterior, with the correction and without.
#include "sampler/gradient_noise.hpp"

#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <numeric>
#include <random>
#include <vector>

#include "agld/sample.hpp"
#include "sampler/dynamics.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace gradient_noise_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::GaussianJumps;

// x' = rho x + e_k, the noises a pass of P rows read in a fresh random order each pass (one
// row a batch): e_k = P u_row - sum u, which sums to zero over a pass. An independent draw's
// variance is B = P^2 Var(u); the stationary variance, averaged over every iteration, is
// f B / (1 - rho^2), f = pass_factor(rho, P) N / (N - 1) (the finite population's factor,
// which pass_factor leaves out: N is large), here N = P.
TEST(GradientNoise, PassFactorMatchesAReshuffledSimulation) {
  const uint64_t seed = test_seed(3);
  std::cout << "seed " << seed << std::endl;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  for (const uint64_t p : {uint64_t{10}, uint64_t{100}}) {
    for (const double rho : {0.5, 0.9, 0.99}) {
      std::vector<double> u(p);
      for (double& v : u) v = n01(rng) + 0.3;
      const double sum = std::accumulate(u.begin(), u.end(), 0.0);
      double sq = 0;
      for (double v : u) sq += (v - sum / static_cast<double>(p)) * (v - sum / static_cast<double>(p));
      const double b = static_cast<double>(p) * sq;  // P^2 Var(u)
      std::vector<size_t> order(p);
      std::iota(order.begin(), order.end(), 0);
      constexpr uint64_t kPasses = 40000;
      double x = 0, s2 = 0;
      uint64_t kept = 0;
      for (uint64_t pass = 0; pass < kPasses; ++pass) {
        std::shuffle(order.begin(), order.end(), rng);
        for (size_t i : order) {
          x = rho * x + (static_cast<double>(p) * u[i] - sum);
          if (pass >= kPasses / 10) {
            s2 += x * x;
            ++kept;
          }
        }
      }
      const double simulated = s2 / static_cast<double>(kept) * (1 - rho * rho) / b;
      const double want = sampler::pass_factor(rho, p) * static_cast<double>(p) / static_cast<double>(p - 1);
      // The variance estimate's relative error: about sqrt(2 (1 + rho^2) / ((1 - rho^2) n)) for
      // n AR(1) draws; five of them.
      const double rel = std::sqrt(2 * (1 + rho * rho) / ((1 - rho * rho) * static_cast<double>(kept)));
      std::cout << "P " << p << ", rho " << rho << ": simulated " << simulated << ", pass_factor " << want << std::endl;
      EXPECT_NEAR(simulated, want, 5 * rel * want + 1e-3) << "P " << p << ", rho " << rho;
    }
  }
  EXPECT_EQ(sampler::pass_factor(0.3, 1), 0.0);  // the batch is every row
  EXPECT_NEAR(sampler::pass_factor(0.0, 10), 0.9, 1e-12);
  EXPECT_NEAR(sampler::pass_factor(1 - 1e-9, 1000), 0.0, 1e-3);
  sampler::GradientNoiseConfig independent;
  independent.zero_sum = false;
  EXPECT_EQ(independent.pass_factor(0.9), 1.0);  // ra: independent batches
}

// For every dynamics: a coordinate of curvature h whose gradient carries independent noise of
// variance B, with the share 1 - w B of the step's noise, has the stationary position variance
// of the noiseless gradient with the whole noise (hmc2's gradient point taken at theta).
TEST(GradientNoise, EveryDynamicsWeightKeepsItsStationaryVariance) {
  for (const sampler::DynamicsInfo& d : sampler::registered_dynamics()) {
    sampler::DynamicsParams p;
    p.step = d.state_dim == 1 ? 0.05 : 0.2;
    p.precondition = 0.8;
    p.prior_var = 4;
    const sampler::GaussianStep one = d.step(p);
    const GaussianJumps::Coef c = GaussianJumps::coef(one);
    const bool two = d.state_dim == 2;
    const double h = 1.5, w = sampler::noise_weight(c, two, h);
    ASSERT_GT(w, 0) << d.name;
    const double b = 0.3 / w;  // the gradient noise takes 30 % of the step's noise
    // The step's mean map with the gradient term a = h x, and its noise's covariance.
    Eigen::Matrix2d a;
    a << 1 + c.n00 + c.b0 * h, c.n01, c.n10 + c.b1 * h, 1 + c.n11;
    Eigen::Matrix2d q;
    q << one.q00, one.q01, one.q01, one.q11;
    Eigen::Vector2d bv(c.b0, c.b1);
    if (!two) {
      a(0, 1) = a(1, 0) = a(1, 1) = 0;
      q(0, 1) = q(1, 0) = q(1, 1) = 0;
      bv(1) = 0;
    }
    auto stationary = [&](const Eigen::Matrix2d& noise) {
      Eigen::Matrix2d s = Eigen::Matrix2d::Zero();
      for (int i = 0; i < 200000; ++i) s = a * s * a.transpose() + noise;
      return s(0, 0);
    };
    const double whole = stationary(q);
    const double corrected = stationary((1 - w * b) * q + b * bv * bv.transpose());
    const double uncorrected = stationary(q + b * bv * bv.transpose());
    std::cout << d.name << ": w " << w << ", position variance " << whole << ", corrected " << corrected
              << ", uncorrected " << uncorrected << std::endl;
    EXPECT_NEAR(corrected / whole, 1, 1e-9) << d.name;
    EXPECT_GT(uncorrected / whole, 1.1) << d.name << ": the test needs the noise to matter";
  }
  // ld's weight is eta M / (2 T).
  sampler::DynamicsParams p;
  p.step = 0.01;
  p.precondition = 3;
  p.temperature = 2;
  const GaussianJumps::Coef ld = GaussianJumps::coef(sampler::find_dynamics("ld")->step(p));
  for (double h : {0.0, 1.0, 30.0}) EXPECT_NEAR(sampler::noise_weight(ld, false, h), 0.01 * 3 / (2 * 2), 1e-12);
}

// A level that holds a coordinate in no row, or none in a row, keeps its noise; the others
// give up f w B of it, at least kLeastNoiseShare kept.
TEST(GradientNoise, WhichLevelsGiveUpNoise) {
  sampler::GradientNoiseConfig cfg;
  cfg.zero_sum = false;  // f = 1
  sampler::GradientNoise g(cfg, {10, 10, 0, 10}, {0, 1, 0, 0}, 0);
  GaussianJumps::Coef c;
  c.b0 = -0.1;
  c.fx1 = std::sqrt(0.2);  // ld at eta M = 0.1: w = 0.01 / 0.2 = 0.05
  EXPECT_EQ(g.share(0, c, false), 1.0);  // nothing measured yet
  for (int it = 0; it < 4; ++it) {
    for (uint32_t l = 0; l < 4; ++l) g.add(l, l == 3 ? 1000.0 : 20.0, 0.0);
    g.end_iteration(100);
  }
  EXPECT_NEAR(g.share(0, c, false), 1 - 0.05 * 2.0, 1e-12);  // B = 4 x 20 / (4 x 10)
  EXPECT_EQ(g.share(1, c, false), 1.0);                     // a coordinate in no row
  EXPECT_EQ(g.share(2, c, false), 1.0);                     // no coordinate in a row
  EXPECT_EQ(g.share(3, c, false), kLeastNoiseShare);
  g.retempered(2000);
  EXPECT_FALSE(g.due(2000 + sampler::kNoisePeriod - 1));
  EXPECT_TRUE(g.due(2000 + sampler::kNoisePeriod));
  EXPECT_EQ(g.share(0, c, false), 1.0);  // the sums start again
  // The next stretch's shares are its own: a start's large noise is gone from them.
  for (int it = 0; it < 4; ++it) {
    g.add(0, 5.0, 0.0);
    g.add(3, 5.0, 0.0);
    g.end_iteration(100);
  }
  EXPECT_NEAR(g.share(0, c, false), 1 - 0.05 * 0.5, 1e-12);  // B = 4 x 5 / (4 x 10)
  EXPECT_NEAR(g.share(3, c, false), 1 - 0.05 * 0.5, 1e-12);
}

// Four dense features in every row beside a 4,000-level factor (half the rows hold one level,
// about 12 rows a level) and the intercept: the rare levels move a posterior sd of theirs a
// pass, which moves the rows' margins away from the snapshot's, and the variance-reduced
// gradient of the dense features (and the intercept) carries that noise. The linear model's
// exact posterior by the Schur complement of the levels' diagonal block. Every default but
// --until-mixed off, --rao-blackwell off (the draws themselves) and 10 epochs, the length a
// default run has on a large store (20 passes, a refresh each): the four features' sds within
// 10 % with the correction (0.95-1.08 measured, seeds 1-5 and 29) and more than 20 % wide
// without (1.24-1.37); every mean within a quarter sd; the levels' median sd ratio within 5 %
// (0.976-0.980; 0.875 when a chain's start stayed in the noise's sums for ten stretches, the
// features' then 0.82-0.90).
TEST(GradientNoise, FrequentSdsMatchTheExactPosteriorBesideARareFactor) {
  const uint64_t seed = test_seed(29);
  std::cout << "seed " << seed << std::endl;
  constexpr uint32_t kDense = 4, kLevels = 4000, kFeatures = kDense + kLevels;
  constexpr size_t kRows = 100000;
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> level(0, kLevels - 1);
  SparseRows rows;
  // The exact posterior's pieces: F = (features, intercept) and the levels' counts and sums.
  Eigen::MatrixXd a = Eigen::MatrixXd::Identity(kDense + 1, kDense + 1);
  Eigen::MatrixXd cross = Eigen::MatrixXd::Zero(kDense + 1, kLevels);
  Eigen::VectorXd bf = Eigen::VectorXd::Zero(kDense + 1), bl = Eigen::VectorXd::Zero(kLevels);
  Eigen::VectorXd diag = Eigen::VectorXd::Ones(kLevels);
  for (size_t r = 0; r < kRows; ++r) {
    Eigen::VectorXd f(kDense + 1);
    std::vector<uint32_t> idx;
    std::vector<float> val;
    double y = 0.3 + n01(rng);
    for (uint32_t j = 0; j < kDense; ++j) {
      const auto x = static_cast<float>(n01(rng));
      idx.push_back(j);
      val.push_back(x);
      f(j) = x;
      y += 0.5 * x;
    }
    f(kDense) = 1;
    const bool has = (rng() & 1) != 0;
    const uint32_t l = level(rng);
    if (has) {
      idx.push_back(kDense + l);
      val.push_back(1.0f);
      y += std::sin(l);
    }
    a += f * f.transpose();
    bf += y * f;
    if (has) {
      cross.col(l) += f;
      diag(l) += 1;
      bl(l) += y;
    }
    rows.add_row(y, idx, val);
  }
  const Eigen::MatrixXd scaled = cross * diag.cwiseInverse().asDiagonal();
  const Eigen::MatrixXd schur = a - scaled * cross.transpose();
  const Eigen::LLT<Eigen::MatrixXd> llt(schur);
  const Eigen::VectorXd mean = llt.solve(bf - scaled * bl);
  const Eigen::VectorXd sd = llt.solve(Eigen::MatrixXd::Identity(kDense + 1, kDense + 1)).diagonal().cwiseSqrt();

  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows, kFeatures, false, 4096, true);
  auto run = [&](const std::string& correction) {
    SampleOptions o;
    o.model = "linear";
    o.intercept = true;
    o.seed = seed;
    o.evaluations = 0;
    o.memory = uint64_t{1} << 30;
    o.until_mixed = "off";
    o.rao_blackwell = "off";
    o.noise_correction = correction;
    o.epochs = 10;
    KeepDraws keep;
    SampleResult r;
    Status st = sample(*store, nullptr, o, keep, &r);
    EXPECT_TRUE(st.is_ok()) << st.message();
    return r;
  };
  const SampleResult on = run("auto"), off = run("off");
  ASSERT_TRUE(on.run.noise_correction) << on.run.noise_correction_rule;
  ASSERT_FALSE(off.run.noise_correction);
  EXPECT_LT(on.run.least_noise_share, 1.0);
  EXPECT_EQ(off.run.least_noise_share, 1.0);
  std::cout << on.run.method << ", " << on.run.epochs << " epochs; least noise share " << on.run.least_noise_share
            << std::endl;
  for (uint32_t j = 0; j <= kDense; ++j) {
    const uint64_t coord = j < kDense ? j : kFeatures;  // the intercept is the last coordinate
    const auto i = static_cast<Eigen::Index>(j);
    const double r_on = on.sd[coord] / sd(i), r_off = off.sd[coord] / sd(i);
    std::cout << "coordinate " << coord << ": sd ratio " << r_on << " (without the correction " << r_off
              << "), mean error " << (on.mean[coord] - mean(i)) / sd(i) << " sd" << std::endl;
    if (j < kDense) {
      EXPECT_NEAR(r_on, 1, 0.1) << "coordinate " << coord;
      EXPECT_GT(r_off, 1.2) << "coordinate " << coord << ": the test needs the noise to matter";
    }
    EXPECT_NEAR(on.mean[coord], mean(i), 0.25 * sd(i) + 4 * on.mcse[coord]) << "coordinate " << coord;
  }
  // The levels (about 12 rows each): level l's marginal variance is 1 / diag_l + v^T S v, v its
  // column of the cross block over diag_l, S the features' covariance (the Schur complement's
  // inverse).
  const Eigen::MatrixXd cov = llt.solve(Eigen::MatrixXd::Identity(kDense + 1, kDense + 1));
  std::vector<double> ratio_on, ratio_off;
  for (uint32_t l = 0; l < kLevels; ++l) {
    const Eigen::VectorXd v = cross.col(l) / diag(l);
    const double level_sd = std::sqrt(1 / diag(l) + v.dot(cov * v));
    ratio_on.push_back(on.sd[kDense + l] / level_sd);
    ratio_off.push_back(off.sd[kDense + l] / level_sd);
  }
  const auto median = [](std::vector<double> x) {
    std::nth_element(x.begin(), x.begin() + static_cast<std::ptrdiff_t>(x.size() / 2), x.end());
    return x[x.size() / 2];
  };
  const double m_on = median(ratio_on), m_off = median(ratio_off);
  std::cout << "levels: median sd ratio " << m_on << " (without the correction " << m_off << ")" << std::endl;
  EXPECT_NEAR(m_on, 1, 0.05) << "the correction must not narrow the rare levels";
}

}  // namespace gradient_noise_test
}  // namespace
}  // namespace agld::test
