// The conditional moments by quadrature (sampler/conditional_quadrature.hpp): the linear
// model's Gaussian conditional to the grid's design error (about e^-12), and on logistic
// conditionals of a few rows (skewed, saturated, under a wide prior) a brute-force integral on a
// grid a hundred times finer, whatever the starting point.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "model/model.hpp"
#include "sampler/conditional_quadrature.hpp"
#include "test_support.hpp"

namespace agld::test {
namespace {
namespace conditional_quadrature_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::ConditionalRow;

std::unique_ptr<model::Model> make(const std::string& name, double noise_var = 1) {
  SampleOptions o;
  o.noise_var = noise_var;
  return model::find_model(name)->make(o);
}

TEST(ConditionalQuadrature, LinearIsTheGaussianConditional) {
  const uint64_t seed = test_seed(3);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  const double noise_var = 0.6;
  const auto linear = make("linear", noise_var);
  for (size_t n : {1, 2, 7, 64}) {
    std::vector<ConditionalRow> rows;
    double h = 1 / 2.0, b = 0;  // prior variance 2
    for (size_t i = 0; i < n; ++i) {
      const ConditionalRow r{static_cast<float>(n01(rng)), static_cast<float>(0.2 + std::abs(n01(rng))),
                             static_cast<float>(3 * n01(rng))};
      rows.push_back(r);
      h += static_cast<double>(r.x) * r.x / noise_var;
      b += static_cast<double>(r.x) * (static_cast<double>(r.y) - r.offset) / noise_var;
    }
    const auto m = sampler::conditional_moments(rows, *linear, 0.5, 0.0);
    const double mean = b / h, var = 1 / h;
    // The grid's step is 1.25 sds here: the trapezoid rule's error is about e^-12.
    EXPECT_NEAR(m.mean, mean, 1e-4 * std::sqrt(var)) << n << " rows, seed " << seed;
    EXPECT_NEAR(m.var / var, 1, 1e-4) << n << " rows, seed " << seed;
  }
}

// The moments of exp(-U) on a uniform grid of `points` over [lo, hi]: the reference.
sampler::ConditionalMoments brute(const std::vector<ConditionalRow>& rows, const model::Model& model, double p0,
                                  double lo, double hi, int points) {
  auto u = [&](double t) {
    double s = 0.5 * p0 * t * t;
    for (const ConditionalRow& r : rows) s += model.loss(r.y, r.offset + static_cast<double>(r.x) * t);
    return s;
  };
  double umin = INFINITY;
  const double step = (hi - lo) / (points - 1);
  for (int i = 0; i < points; ++i) umin = std::min(umin, u(lo + step * i));
  long double z = 0, m1 = 0, m2 = 0;
  for (int i = 0; i < points; ++i) {
    const double t = lo + step * i, w = std::exp(umin - u(t));
    z += w;
    m1 += w * t;
    m2 += w * t * t;
  }
  const double mean = static_cast<double>(m1 / z);
  return {mean, static_cast<double>(m2 / z) - mean * mean};
}

struct LogisticCase {
  std::string name;
  double prior_var;
  std::vector<ConditionalRow> rows;
};

std::vector<LogisticCase> logistic_cases() {
  std::vector<LogisticCase> c;
  c.push_back({"one_row_agreeing", 1, {{0.5f, 1, 1}}});
  c.push_back({"one_row_surprised", 1, {{6.0f, 1, -1}}});
  c.push_back({"one_row_wide_prior", 100, {{-2.0f, 1, 1}}});
  std::vector<ConditionalRow> saturated(64, ConditionalRow{3.0f, 1, 1});
  c.push_back({"sixty_four_rows_saturated", 1, saturated});
  std::mt19937_64 rng(17);
  std::normal_distribution<double> n01;
  std::bernoulli_distribution coin(0.3);
  std::vector<ConditionalRow> mixed;
  for (int i = 0; i < 30; ++i) {
    mixed.push_back({static_cast<float>(1.5 * n01(rng)), static_cast<float>(0.1 + 2 * std::abs(n01(rng))),
                     coin(rng) ? 1.0f : -1.0f});
  }
  c.push_back({"thirty_rows_mixed_values", 1, mixed});
  c.push_back({"two_rows_large_values", 4, {{0.0f, 5, 1}, {-1.0f, 4, -1}}});
  return c;
}

class LogisticConditional : public ::testing::TestWithParam<LogisticCase> {};

TEST_P(LogisticConditional, MatchesABruteForceIntegral) {
  const LogisticCase& c = GetParam();
  const auto logistic = make("logistic");
  const double p0 = 1 / c.prior_var, s = std::sqrt(c.prior_var);
  // The mass is within the prior's 12 sds of the mode; the finest scale is at least
  // 1 / sqrt(1/s2p + sum x^2 / 4) >= 0.1 here: 200,001 points over 24 + 24 s is finer than 0.01.
  const double span = 12 * s + 20;
  const auto want = brute(c.rows, *logistic, p0, -span, span, 200001);
  for (double start : {0.0, -3.0, 40.0 * s}) {
    const auto got = sampler::conditional_moments(c.rows, *logistic, p0, start);
    const double sd = std::sqrt(want.var);
    EXPECT_NEAR(got.mean, want.mean, 1e-4 * sd) << c.name << " from " << start;
    EXPECT_NEAR(got.var / want.var, 1, 1e-4) << c.name << " from " << start;
  }
}

INSTANTIATE_TEST_SUITE_P(Cases, LogisticConditional, ::testing::ValuesIn(logistic_cases()),
                         [](const ::testing::TestParamInfo<LogisticCase>& i) { return i.param.name; });

// A row whose margin is not finite (a chain that diverged), or a flat prior: no conditional.
TEST(ConditionalQuadrature, NoMomentsWithoutAProperFiniteConditional) {
  const auto logistic = make("logistic");
  const std::vector<ConditionalRow> bad = {{NAN, 1, 1}};
  EXPECT_TRUE(std::isnan(sampler::conditional_moments(bad, *logistic, 1, 0).mean));
  const std::vector<ConditionalRow> one = {{0.0f, 1, 1}};
  EXPECT_TRUE(std::isnan(sampler::conditional_moments(one, *logistic, 0, 0).mean));
  EXPECT_TRUE(std::isnan(sampler::conditional_moments(one, *logistic, 1, NAN).mean));
}

}  // namespace conditional_quadrature_test
}  // namespace
}  // namespace agld::test
