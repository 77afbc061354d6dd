// The lazy k-step jump of overdamped Langevin against k single steps composed exactly,
// and the sampled jump against its closed-form mean and variance.
#include <gtest/gtest.h>

#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <limits>
#include <random>

#include "sampler/langevin.hpp"
#include "test_support.hpp"

namespace agld::sampler {
namespace {

// k steps of x' = a x + b + s xi composed one at a time: mean coefficients and variance.
struct Composed {
  double mul = 1, gain = 0, var = 0;
};
Composed compose(double eta, double prior_var, uint64_t k) {
  const double a = 1 - eta / prior_var;
  Composed c;
  for (uint64_t t = 0; t < k; ++t) {
    c.mul *= a;
    c.gain = a * c.gain + 1;       // b (1 + a + ... + a^(t))
    c.var = a * a * c.var + 2 * eta;
  }
  return c;
}

TEST(Langevin, JumpMatchesComposedSteps) {
  for (double eta : {1e-7, 1e-4, 1e-2, 0.3}) {
    for (double s2p : {1.0, 10.0}) {
      Langevin ld(eta, s2p);
      for (uint64_t k : {1u, 2u, 7u, 100u, 1023u, 1024u, 1025u, 5000u, 100000u}) {
        const Composed c = compose(eta, s2p, k);
        const Langevin::Jump j = ld.jump(k);
        EXPECT_NEAR(j.mul, c.mul, 1e-10 * std::abs(c.mul) + 1e-300) << eta << " " << s2p << " " << k;
        EXPECT_NEAR(j.gain, c.gain, 1e-9 * c.gain) << eta << " " << s2p << " " << k;
        EXPECT_NEAR(j.sd * j.sd, c.var, 1e-9 * c.var) << eta << " " << s2p << " " << k;
      }
    }
  }
}

// At temperature T the noise's variance is T times Langevin's; at 0 a jump is exactly k
// steps of gradient descent x' = x - eta (x / s2p + a_j) (`agld optimize`'s lazy steps).
TEST(Langevin, TemperatureScalesTheNoiseAndZeroIsGradientDescent) {
  for (double s2p : {1.0, 10.0, std::numeric_limits<double>::infinity()}) {
    const double eta = 0.01;
    Langevin hot(eta, s2p), warm(eta, s2p, Langevin::kTableSize, 0.25), cold(eta, s2p, Langevin::kTableSize, 0);
    EXPECT_EQ(cold.noise_sd(), 0.0);
    EXPECT_NEAR(warm.noise_sd(), 0.5 * hot.noise_sd(), 1e-15);
    for (uint64_t k : {1u, 7u, 1023u, 1024u, 5000u, 100000u}) {
      EXPECT_EQ(cold.jump(k).sd, 0.0) << k;
      EXPECT_NEAR(warm.jump(k).sd, 0.5 * hot.jump(k).sd, 1e-12 * hot.jump(k).sd) << k;
      EXPECT_EQ(cold.jump(k).mul, hot.jump(k).mul);
      EXPECT_EQ(cold.jump(k).gain, hot.jump(k).gain);
      double x = 1.7;
      for (uint64_t t = 0; t < k; ++t) x = cold.step(x, 0.0, -0.4, 0.0);
      EXPECT_NEAR(cold.advance(1.7, -0.4, k, 123.0), x, 1e-9 * (1 + std::abs(x))) << s2p << " " << k;
    }
  }
}

TEST(Langevin, FlatPriorIsARandomWalkWithDrift) {
  Langevin ld(0.01, INFINITY);
  for (uint64_t k : {1u, 10u, 2000u}) {
    const Langevin::Jump j = ld.jump(k);
    EXPECT_DOUBLE_EQ(j.mul, 1.0);
    EXPECT_DOUBLE_EQ(j.gain, static_cast<double>(k));
    EXPECT_NEAR(j.sd * j.sd, 2 * 0.01 * static_cast<double>(k), 1e-12);
  }
}

TEST(Langevin, OneJumpIsOneStep) {
  Langevin ld(0.05, 2.0);
  // One data-free step with xi and a one-step jump with the same normal agree exactly.
  for (double x : {-3.0, 0.0, 1.5}) {
    EXPECT_NEAR(ld.advance(x, 0.7, 1, 0.3), ld.step(x, 0.0, 0.7, 0.3), 1e-14);
  }
}

// The sampled k-step transition has the closed-form mean and variance: z-tests with the
// Monte Carlo error of n draws.
TEST(Langevin, SampledJumpHasClosedFormMoments) {
  const uint64_t seed = test::test_seed(11);
  std::mt19937_64 rng(seed);
  boost::random::normal_distribution<double> normal;
  const double eta = 0.01, s2p = 1.0, x0 = 2.0, a_j = -1.5;
  Langevin ld(eta, s2p);
  for (uint64_t k : {3u, 50u, 4000u}) {
    const Composed c = compose(eta, s2p, k);
    const double mean = c.mul * x0 - eta * a_j * c.gain;
    const int n = 200000;
    double s = 0, ss = 0;
    for (int i = 0; i < n; ++i) {
      const double v = ld.advance(x0, a_j, k, normal(rng));
      s += v;
      ss += v * v;
    }
    const double m = s / n, var = ss / n - m * m;
    const double se_mean = std::sqrt(c.var / n), se_var = c.var * std::sqrt(2.0 / n);
    EXPECT_NEAR(m, mean, 4 * se_mean) << "k " << k;
    EXPECT_NEAR(var, c.var, 4 * se_var) << "k " << k;
  }
}

}  // namespace
}  // namespace agld::sampler
