// The online diagnostics against the same figures computed from the draws themselves:
// classic split-R-hat exactly (1e-9), for even and odd lengths, one and several chains, a
// covered subset and a run stopped early; ESS and MCSE on AR(1) chains, whose true values
// are known, within the batch-means estimator's error; chains that disagree are flagged.
#include "diagnostics/online_diagnostics.hpp"

#include <gtest/gtest.h>

#include <ostream>

#include <cmath>
#include <random>
#include <vector>

#include "test_support.hpp"

namespace agld::diagnostics {
namespace {
namespace online_diagnostics_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// draws[c][t][j]
using Draws = std::vector<std::vector<std::vector<double>>>;

Draws ar1(size_t chains, size_t n, size_t d, double rho, std::mt19937_64& rng, double shift_chain0 = 0) {
  std::normal_distribution<double> z;
  Draws x(chains, std::vector<std::vector<double>>(n, std::vector<double>(d)));
  const double innov = std::sqrt(1 - rho * rho);
  for (size_t c = 0; c < chains; ++c) {
    for (size_t j = 0; j < d; ++j) {
      double v = z(rng);
      for (size_t t = 0; t < n; ++t) {
        v = rho * v + innov * z(rng);
        x[c][t][j] = 5 + v + (c == 0 ? shift_chain0 : 0);  // far from zero: the offsets matter
      }
    }
  }
  return x;
}

void run(OnlineDiagnostics& od, const Draws& x, size_t draws, std::vector<double>* rhat, std::vector<double>* ess,
         std::vector<double>* mcse, uint64_t d) {
  const size_t k = x.size();
  for (size_t t = 0; t < draws; ++t) {
    std::vector<StridedSpan<const double>> states;
    for (size_t c = 0; c < k; ++c) states.emplace_back(x[c][t]);
    od.add(states, 0, od.covered() / 2);  // in two ranges, as the engine's threads do
    od.add(states, od.covered() / 2, od.covered());
    od.next_draw();
  }
  rhat->assign(d, 0);
  ess->assign(d, 0);
  mcse->assign(d, 0);
  od.finish(*rhat, *ess, *mcse);
}

// Split-R-hat from the draws: halves of each chain's first `draws` (the middle one of an odd
// planned length left out), or, stopped early, as the online version folds them.
double split_rhat(const Draws& x, size_t planned, size_t draws, size_t j) {
  const size_t h = planned / 2;
  std::vector<std::vector<double>> halves;
  for (const auto& chain : x) {
    std::vector<double> a, b;
    for (size_t t = 0; t < draws; ++t) {
      if (t < h) a.push_back(chain[t][j]);
      else if (t >= planned - h) b.push_back(chain[t][j]);
    }
    if (!a.empty()) halves.push_back(a);
    if (!b.empty()) halves.push_back(b);
  }
  double w = 0, sm = 0, sm2 = 0, s = 0, df = 0;
  for (const auto& v : halves) {
    double m = 0;
    for (double y : v) m += y;
    m /= static_cast<double>(v.size());
    double ss = 0;
    for (double y : v) ss += (y - m) * (y - m);
    w += ss;
    df += static_cast<double>(v.size() - 1);
    sm += m;
    sm2 += m * m;
    s += static_cast<double>(v.size());
  }
  const double hn = static_cast<double>(halves.size());
  w /= df;
  const double mbar = sm / hn, bvar = (sm2 - hn * mbar * mbar) / (hn - 1), nbar = s / hn;
  return std::sqrt(((nbar - 1) / nbar * w + bvar) / w);
}

struct Shape {
  size_t chains, n, stop;
};
// ctest lists a shape by its numbers, not its bytes.
void PrintTo(const Shape& s, std::ostream* os) { *os << s.chains << " chains of " << s.n << ", stopped at " << s.stop; }

class OnlineRhat : public ::testing::TestWithParam<Shape> {};

TEST_P(OnlineRhat, EqualsSplitRhatOfTheDraws) {
  const Shape s = GetParam();
  std::mt19937_64 rng(test::test_seed(3));
  constexpr size_t kDim = 6;
  const Draws x = ar1(s.chains, s.n, kDim, 0.6, rng, 0.3);
  OnlineDiagnostics od(kDim, {}, s.chains, s.n);
  std::vector<double> rhat, ess, mcse;
  run(od, x, s.stop, &rhat, &ess, &mcse, kDim);
  for (size_t j = 0; j < kDim; ++j) {
    const double want = split_rhat(x, s.n, s.stop, j);
    EXPECT_NEAR(rhat[j], want, 1e-9 * want) << "coordinate " << j;
    EXPECT_TRUE(std::isfinite(ess[j]));
    EXPECT_GT(mcse[j], 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, OnlineRhat,
                         ::testing::Values(Shape{4, 400, 400}, Shape{4, 401, 401}, Shape{1, 400, 400},
                                           Shape{3, 37, 37}, Shape{4, 400, 250}, Shape{4, 400, 120},
                                           Shape{2, 4, 4}),
                         [](const ::testing::TestParamInfo<Shape>& p) {
                           return std::to_string(p.param.chains) + "chains_" + std::to_string(p.param.n) +
                                  "draws" + (p.param.stop < p.param.n ? "_stopped_at_" + std::to_string(p.param.stop) : "");
                         });

TEST(OnlineDiagnostics, CoversASubsetOnly) {
  std::mt19937_64 rng(test::test_seed(4));
  const Draws x = ar1(4, 200, 10, 0.3, rng);
  OnlineDiagnostics od(10, {1, 4, 9}, 4, 200);
  EXPECT_EQ(od.covered(), 3u);
  std::vector<double> rhat, ess, mcse;
  run(od, x, 200, &rhat, &ess, &mcse, 10);
  for (size_t j = 0; j < 10; ++j) {
    const bool covered = j == 1 || j == 4 || j == 9;
    EXPECT_EQ(std::isnan(rhat[j]), !covered) << j;
    EXPECT_EQ(std::isnan(ess[j]), !covered) << j;
    if (covered) {
      EXPECT_NEAR(rhat[j], split_rhat(x, 200, 200, j), 1e-9);
    }
  }
}

// AR(1) with coefficient rho and unit variance: the variance of the mean of S draws tends to
// tau / S, tau = (1 + rho) / (1 - rho), so ESS = S / tau. Batches of b draws see b Var(batch
// mean) = 1 + 2 sum_{k<b} (1 - k/b) rho^k, a little below tau: that is what batch means
// estimate, and the expectation here. Over 4 chains (80 batches) the estimate's relative error
// is about sqrt(2 / 80) = 16 %; averaged over 100 coordinates 1.6 %: the bounds are 4 of those
// (ESS), and half that for the MCSE, its square root.
TEST(OnlineDiagnostics, EssAndMcseOfAutoregressiveChains) {
  const uint64_t seed = test::test_seed(5);
  std::mt19937_64 rng(seed);
  constexpr size_t kDim = 100, kChains = 4, kDraws = 5000;
  const size_t b = kDraws / 2 / 10;
  for (double rho : {0.0, 0.5, 0.9}) {
    const Draws x = ar1(kChains, kDraws, kDim, rho, rng);
    OnlineDiagnostics od(kDim, {}, kChains, kDraws);
    std::vector<double> rhat, ess, mcse;
    run(od, x, kDraws, &rhat, &ess, &mcse, kDim);
    const double s = kChains * kDraws;
    double tau_b = 1;
    for (size_t k = 1; k < b; ++k) tau_b += 2 * (1 - static_cast<double>(k) / static_cast<double>(b)) * std::pow(rho, static_cast<double>(k));
    const double want = s / tau_b;
    double mean_ess = 0, mean_mcse = 0;
    for (size_t j = 0; j < kDim; ++j) {
      EXPECT_LT(rhat[j], 1.01) << "rho " << rho;
      mean_ess += ess[j] / kDim;
      mean_mcse += mcse[j] / kDim;
    }
    std::cout << "rho " << rho << ": ESS " << mean_ess << " (expected " << want << ", true " << s * (1 - rho) / (1 + rho)
              << "), MCSE " << mean_mcse << " (expected " << std::sqrt(1 / want) << ")" << std::endl;
    EXPECT_NEAR(mean_ess / want, 1.0, 0.065) << "rho " << rho;
    EXPECT_NEAR(mean_mcse / std::sqrt(1 / want), 1.0, 0.033) << "rho " << rho;
  }
}

TEST(OnlineDiagnostics, ChainsThatDisagreeAreFlagged) {
  std::mt19937_64 rng(test::test_seed(6));
  constexpr size_t kDim = 5, kDraws = 2000;
  const Draws x = ar1(4, kDraws, kDim, 0.5, rng, 1.0);  // chain 0 one sd away
  OnlineDiagnostics od(kDim, {}, 4, kDraws);
  std::vector<double> rhat, ess, mcse;
  run(od, x, kDraws, &rhat, &ess, &mcse, kDim);
  for (size_t j = 0; j < kDim; ++j) {
    EXPECT_GT(rhat[j], 1.05) << j;
    // The chains' disagreement is in the replicated batch means (centred on the grand mean):
    // the ESS is well under that of agreeing chains (8,000 / 3 = 2,667).
    EXPECT_LT(ess[j], 2667 / 4) << j;
  }
}

TEST(OnlineDiagnostics, TooFewDrawsGiveNaN) {
  std::mt19937_64 rng(1);
  const Draws x = ar1(1, 3, 2, 0, rng);
  OnlineDiagnostics od(2, {}, 1, 3);  // halves of one draw: no variance within
  std::vector<double> rhat, ess, mcse;
  run(od, x, 3, &rhat, &ess, &mcse, 2);
  EXPECT_TRUE(std::isnan(rhat[0]));
  EXPECT_TRUE(std::isnan(ess[0]));
}

}  // namespace online_diagnostics_test
}  // namespace
}  // namespace agld::diagnostics
