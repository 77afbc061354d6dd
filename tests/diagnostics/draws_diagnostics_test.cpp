// The exact diagnostics against the R package `posterior` 1.4.0: every function and
// summarize() on every case of tests/diagnostics/fixtures (made by make_posterior_fixtures.R;
// R is not needed here), to 1e-6 relative, NaN where posterior gives NA. Then properties that
// need no fixture: rank-based invariance, the quantile's type 7, tail-ESS sanity.
#include "diagnostics/draws_diagnostics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <map>
#include <ostream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace agld::diagnostics {
namespace {
namespace draws_diagnostics_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr double kRelTol = 1e-6;
const std::string kFixtures = std::string(AGLD_SOURCE_DIR) + "/tests/diagnostics/fixtures/";

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out;
  std::stringstream ss(line);
  for (std::string field; std::getline(ss, field, ',');) out.push_back(field);
  return out;
}

double parse_number(const std::string& s) {
  if (s == "NA") return std::numeric_limits<double>::quiet_NaN();
  return std::strtod(s.c_str(), nullptr);  // also "Inf", "-Inf", "NaN"
}

struct Case {
  std::string name;
  size_t chains = 0, n = 0;
  std::vector<double> draws;  // chain-major
  std::map<std::string, double> expected;
};

// gtest prints a parameter with this (not as bytes).
void PrintTo(const Case& c, std::ostream* os) { *os << c.name << " (" << c.chains << " x " << c.n << ")"; }

// Both CSVs, joined by case, in the order of posterior_expected.csv.
std::vector<Case> load_cases() {
  std::vector<Case> cases;
  std::ifstream expected(kFixtures + "posterior_expected.csv");
  std::string line;
  if (!std::getline(expected, line)) return cases;
  const std::vector<std::string> header = split_csv(line);
  std::map<std::string, size_t> index;
  while (std::getline(expected, line)) {
    const std::vector<std::string> f = split_csv(line);
    Case c;
    c.name = f[0];
    c.chains = std::stoul(f[1]);
    c.n = std::stoul(f[2]);
    for (size_t i = 3; i < header.size(); ++i) c.expected[header[i]] = parse_number(f[i]);
    c.draws.assign(c.chains * c.n, std::numeric_limits<double>::signaling_NaN());
    index[c.name] = cases.size();
    cases.push_back(std::move(c));
  }
  std::ifstream draws(kFixtures + "posterior_draws.csv");
  std::getline(draws, line);  // header: case,chain,iteration,value
  while (std::getline(draws, line)) {
    const std::vector<std::string> f = split_csv(line);
    Case& c = cases.at(index.at(f[0]));
    const size_t chain = std::stoul(f[1]) - 1, iteration = std::stoul(f[2]) - 1;
    c.draws.at(chain * c.n + iteration) = parse_number(f[3]);
  }
  return cases;
}

const std::vector<Case>& all_cases() {
  static const std::vector<Case> cases = load_cases();
  return cases;
}

// The largest relative difference seen, printed once all tests have run.
struct Largest {
  double rel = 0;
  std::string where;
};
Largest& largest() {
  static Largest l;
  return l;
}
class ReportLargest : public ::testing::Environment {
 public:
  void TearDown() override {
    std::printf("largest relative difference from posterior: %.3g (%s)\n", largest().rel, largest().where.c_str());
  }
};
[[maybe_unused]] ::testing::Environment* const kReport = ::testing::AddGlobalTestEnvironment(new ReportLargest);

void expect_matches(double actual, double expected, const std::string& what) {
  if (std::isnan(expected)) {
    EXPECT_TRUE(std::isnan(actual)) << what << ": posterior gives NA, agld " << actual;
    return;
  }
  if (std::isinf(expected)) {
    EXPECT_EQ(actual, expected) << what;
    return;
  }
  const double rel = std::abs(actual - expected) / std::max(std::abs(expected), std::numeric_limits<double>::min());
  if (!(rel <= largest().rel)) largest() = {rel, what};
  EXPECT_LE(rel, kRelTol) << what << ": agld " << actual << ", posterior " << expected;
}

class PosteriorFixture : public ::testing::TestWithParam<Case> {};

TEST(PosteriorFixtures, Load) {
  ASSERT_GE(all_cases().size(), 20u) << "missing or short fixtures in " << kFixtures;
  for (const Case& c : all_cases()) {
    EXPECT_EQ(c.expected.size(), 10u) << c.name;
    for (double v : c.draws) EXPECT_FALSE(std::isnan(v) && c.name != "na_middle") << c.name << ": a draw is missing";
  }
}

TEST_P(PosteriorFixture, EachFunction) {
  const Case& c = GetParam();
  const auto& e = c.expected;
  const std::string at = c.name + ": ";
  expect_matches(rhat(c.draws, c.chains), e.at("rhat"), at + "rhat");
  expect_matches(ess_bulk(c.draws, c.chains), e.at("ess_bulk"), at + "ess_bulk");
  expect_matches(ess_tail(c.draws, c.chains), e.at("ess_tail"), at + "ess_tail");
  expect_matches(ess_mean(c.draws, c.chains), e.at("ess_mean"), at + "ess_mean");
  expect_matches(mcse_mean(c.draws, c.chains), e.at("mcse_mean"), at + "mcse_mean");
  expect_matches(quantile(c.draws, 0.05), e.at("q5"), at + "q5");
  expect_matches(quantile(c.draws, 0.5), e.at("q50"), at + "q50");
  expect_matches(quantile(c.draws, 0.95), e.at("q95"), at + "q95");
}

TEST_P(PosteriorFixture, Summarize) {
  const Case& c = GetParam();
  const auto& e = c.expected;
  const std::string at = c.name + ": summarize ";
  const DrawSummary s = summarize(c.draws, c.chains);
  expect_matches(s.mean, e.at("mean"), at + "mean");
  expect_matches(s.sd, e.at("sd"), at + "sd");
  expect_matches(s.mcse, e.at("mcse_mean"), at + "mcse");
  expect_matches(s.q5, e.at("q5"), at + "q5");
  expect_matches(s.q50, e.at("q50"), at + "q50");
  expect_matches(s.q95, e.at("q95"), at + "q95");
  expect_matches(s.ess_bulk, e.at("ess_bulk"), at + "ess_bulk");
  expect_matches(s.ess_tail, e.at("ess_tail"), at + "ess_tail");
  expect_matches(s.rhat, e.at("rhat"), at + "rhat");
}

INSTANTIATE_TEST_SUITE_P(Posterior14, PosteriorFixture, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) { return p.param.name; });

// Chain-major AR(1) chains with unit stationary variance.
std::vector<double> ar1(size_t chains, size_t n, double phi, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> z;
  std::vector<double> x(chains * n);
  for (size_t c = 0; c < chains; ++c) {
    double v = z(rng);
    for (size_t t = 0; t < n; ++t) x[c * n + t] = v = phi * v + std::sqrt(1 - phi * phi) * z(rng);
  }
  return x;
}

TEST(DrawsDiagnostics, RankBasedInvariance) {
  const std::vector<double> x = ar1(4, 500, 0.6, 11);
  // ess_bulk depends on the ranks only: any increasing map leaves it unchanged.
  std::vector<double> e(x.size());
  std::transform(x.begin(), x.end(), e.begin(), [](double v) { return std::exp(v); });
  EXPECT_NEAR(ess_bulk(e, 4), ess_bulk(x, 4), 1e-9 * ess_bulk(x, 4));
  // rhat also folds the draws about their median, so it is invariant under increasing maps
  // that are odd about the median: m + (x - m)^3 (exp would change the folded ranks).
  std::vector<double> sorted(x);
  std::sort(sorted.begin(), sorted.end());
  const double m = (sorted[sorted.size() / 2 - 1] + sorted[sorted.size() / 2]) / 2;
  std::vector<double> cube(x.size());
  std::transform(x.begin(), x.end(), cube.begin(), [m](double v) { return m + (v - m) * (v - m) * (v - m); });
  EXPECT_NEAR(rhat(cube, 4), rhat(x, 4), 1e-12);
  EXPECT_NEAR(ess_bulk(cube, 4), ess_bulk(x, 4), 1e-9 * ess_bulk(x, 4));
  // ess_mean is not rank-based: exp changes it.
  EXPECT_GT(std::abs(ess_mean(e, 4) - ess_mean(x, 4)), 1e-6);
}

TEST(DrawsDiagnostics, QuantileType7) {
  std::vector<double> x(101);
  for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<double>(100 - i);  // 100 .. 0, unsorted
  EXPECT_DOUBLE_EQ(quantile(x, 0.05), 5);
  EXPECT_DOUBLE_EQ(quantile(x, 0.5), 50);
  EXPECT_DOUBLE_EQ(quantile(x, 0), 0);
  EXPECT_DOUBLE_EQ(quantile(x, 1), 100);
  const std::vector<double> four{4, 1, 3, 2};
  EXPECT_DOUBLE_EQ(quantile(four, 0.5), 2.5);   // index 1 + 3 * 0.5 = 2.5
  EXPECT_DOUBLE_EQ(quantile(four, 0.05), 1.15);  // index 1.15
  EXPECT_TRUE(std::isnan(quantile(std::vector<double>{1, std::nan(""), 3}, 0.5)));
}

TEST(DrawsDiagnostics, TailEssSanity) {
  const std::vector<double> iid = ar1(4, 1000, 0.0, 5), slow = ar1(4, 1000, 0.95, 6);
  const double s = 4000;
  // Independent draws: the indicators of the tails are independent too.
  EXPECT_GT(ess_tail(iid, 4), 0.7 * s);
  EXPECT_LT(ess_tail(iid, 4), 1.3 * s);
  // A slow chain: far fewer, and its tail ESS at most the cap S log10 S anyway.
  EXPECT_LT(ess_tail(slow, 4), 0.2 * s);
  EXPECT_GT(ess_tail(slow, 4), 0);
  // A non-finite draw: posterior's ess_tail is NA, but the rank-based rhat and ess_bulk are not.
  std::vector<double> inf = iid;
  inf[10] = std::numeric_limits<double>::infinity();
  EXPECT_TRUE(std::isnan(ess_tail(inf, 4)));
  EXPECT_TRUE(std::isfinite(rhat(inf, 4)));
  EXPECT_TRUE(std::isfinite(ess_bulk(inf, 4)));
  // Shifting one chain by several sds is caught by rhat; ess_tail of the pooled tails drops.
  std::vector<double> shifted = iid;
  for (size_t t = 0; t < 1000; ++t) shifted[t] += 3;
  EXPECT_GT(rhat(shifted, 4), 1.1);
  EXPECT_LT(ess_tail(shifted, 4), ess_tail(iid, 4) / 4);
}

TEST(DrawsDiagnostics, BadShapeThrows) {
  const std::vector<double> x{1, 2, 3};
  EXPECT_THROW(rhat(x, 2), std::invalid_argument);
  EXPECT_THROW(ess_bulk(x, 0), std::invalid_argument);
}

}  // namespace draws_diagnostics_test
}  // namespace
}  // namespace agld::diagnostics
