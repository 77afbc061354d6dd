// Every snapshot strategy under every access order with every dynamics (the default suite: every
// pair of them, method_pairs; LinearExactLong: the rest), on the linear model, against its
// exact Gaussian posterior (precision X'X / s2 + I / s2p): means within 0.1 posterior sd,
// sds within 10%. The Monte Carlo error (batch means) is printed and must be below a
// quarter of the mean's tolerance, so that the bound means something and a correct
// sampler fails it with negligible probability (4 standard errors).
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>
#include <set>

#include "agld/reader.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/snapshot.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace linear_posterior_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 5;
constexpr size_t kRows = 120;
constexpr uint64_t kChains = 4;

ExactLinear make_problem(uint64_t seed) {
  // noise_var = 1, prior_var = 1
  return exact_linear(seed, kRows, {1.0, -0.5, 0.3, 0.0, 2.0}, 1.0, 0.6);
}

void expect_gaussian_posterior(const MethodParts& c) {
  const uint64_t seed = test_seed(31);
  const ExactLinear p = make_problem(seed);
  TempDir dir;
  auto store = make_store(dir.file("lin.agld"), p.rows, kDim, false);
  SampleOptions o;
  o.model = "linear";
  o.precondition = "none";  // the step below is in the unpreconditioned metric
  o.method = c.method();
  o.seed = seed;
  o.batch = 10;
  o.memory = uint64_t{512} << 20;
  o.track_default = false;
  for (uint32_t j = 0; j < kDim; ++j) o.track.push_back(j);
  o.thin = 5;
  o.evaluations = 0;
  // The step: a small fraction of 1 / lambda_max; SGLD's gradient noise needs it smaller
  // still. ptu+ refreshes from whole passes here (B = N), where its estimate is exact.
  double frac = 0.025;
  uint64_t iterations = 600000;
  if (c.snapshot == "none") {
    frac = 0.005;
    iterations = 2500000;
  }
  if (c.snapshot == "ptu+") o.snapshot_batch = c.access == "ra" ? 4 * kRows : kRows;
  if (c.snapshot == "ptu+" && c.access == "ra") {
    frac = 0.015;
    iterations = 1200000;
  }
  o.step = frac / p.lambda_max;
  // The underdamped kinds: h = sqrt(eta), ld's bounds (docs/samplers.md, "Dynamics"), and a
  // friction that forgets the momentum in a few steps (D_f h = 0.5).
  if (sampler::find_dynamics(c.dynamics)->state_dim == 2) {
    o.step = std::sqrt(*o.step);
    o.friction = 0.5 / *o.step;
  }
  o.chains = kChains;  // the same draws in all as one chain of kChains times the length
  o.iterations = iterations / kChains;
  o.burn_in = iterations / kChains / 10;
  KeepDraws keep;
  SampleResult r;
  Status st = sample(*store, nullptr, o, keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(keep.draws.size(), r.draws * kChains);
  for (uint32_t j = 0; j < kDim; ++j) {
    const Summary s = summarize(keep.draws, j);
    const double sd = p.sd(j);
    std::cout << *o.method << " coordinate " << j << ": mean " << s.mean << " (exact " << p.mean(j)
              << ", z " << (s.mean - p.mean(j)) / sd << " sd, mcse " << s.mcse / sd << " sd), sd "
              << s.sd << " (exact " << sd << ", ratio " << s.sd / sd << ")" << std::endl;
    EXPECT_NEAR(r.mean[j], s.mean, 1e-9 * (1 + std::abs(s.mean)));  // the summary is of the same draws
    EXPECT_LE(s.mcse, 0.1 * sd / 4) << "the run is too short for the bound to mean anything";
    EXPECT_NEAR(s.mean, p.mean(j), 0.1 * sd) << *o.method << " coordinate " << j;
    EXPECT_NEAR(s.sd / sd, 1.0, 0.1) << *o.method << " coordinate " << j;
  }
}

// The default suite: every pair of a snapshot, an access order and a dynamics
// (method_pairs); the long suite, the rest of their cross product.
class LinearExact : public ::testing::TestWithParam<MethodParts> {};
class LinearExactLong : public ::testing::TestWithParam<MethodParts> {};
TEST_P(LinearExact, MatchesTheGaussianPosterior) { expect_gaussian_posterior(GetParam()); }
TEST_P(LinearExactLong, MatchesTheGaussianPosterior) { expect_gaussian_posterior(GetParam()); }

std::string case_name(const ::testing::TestParamInfo<MethodParts>& p) { return p.param.test_name(); }
INSTANTIATE_TEST_SUITE_P(EverySnapshotAndAccess, LinearExact, ::testing::ValuesIn(method_pairs()), case_name);
INSTANTIATE_TEST_SUITE_P(EverySnapshotAndAccess, LinearExactLong, ::testing::ValuesIn(method_rest()), case_name);

// method_pairs covers every pair of values of the three registries, and with method_rest
// the whole cross product, each case once.
TEST(MethodPairs, CoverEveryPairAndWithTheRestTheCrossProduct) {
  const std::vector<MethodParts> pairs = method_pairs(), rest = method_rest();
  std::set<std::string> all;
  for (const auto* v : {&pairs, &rest}) {
    for (const MethodParts& m : *v) EXPECT_TRUE(all.insert(m.test_name()).second) << m.test_name();
  }
  const auto snapshots = sampler::registered_snapshots();
  const auto dynamics = sampler::registered_dynamics();
  const std::vector<ReaderOrderInfo> orders = reader_orders();
  EXPECT_EQ(all.size(), snapshots.size() * orders.size() * dynamics.size());
  auto covered = [&](auto&& match) { return std::any_of(pairs.begin(), pairs.end(), match); };
  for (const auto& s : snapshots) {
    for (const auto& a : orders) {
      EXPECT_TRUE(covered([&](const MethodParts& m) { return m.snapshot == s.name && m.access == a.name; }))
          << s.name << " " << a.name;
    }
    for (const auto& d : dynamics) {
      EXPECT_TRUE(covered([&](const MethodParts& m) { return m.snapshot == s.name && m.dynamics == d.name; }))
          << s.name << " " << d.name;
    }
  }
  for (const auto& a : orders) {
    for (const auto& d : dynamics) {
      EXPECT_TRUE(covered([&](const MethodParts& m) { return m.access == a.name && m.dynamics == d.name; }))
          << a.name << " " << d.name;
    }
  }
  std::cout << pairs.size() << " cases of " << all.size() << " in the default suite" << std::endl;
}

// method_each (the sanitizer builds' cases) takes every snapshot, access order and dynamics.
TEST(MethodEach, TakesEveryValueOfEachRegistry) {
  const std::vector<MethodParts> each = method_each();
  auto taken = [&](auto&& match) { return std::any_of(each.begin(), each.end(), match); };
  for (const auto& s : sampler::registered_snapshots()) {
    EXPECT_TRUE(taken([&](const MethodParts& m) { return m.snapshot == s.name; })) << s.name;
  }
  for (const auto& a : reader_orders()) {
    EXPECT_TRUE(taken([&](const MethodParts& m) { return m.access == a.name; })) << a.name;
  }
  for (const auto& d : sampler::registered_dynamics()) {
    EXPECT_TRUE(taken([&](const MethodParts& m) { return m.dynamics == d.name; })) << d.name;
  }
  EXPECT_LT(each.size(), method_pairs().size());
}

}  // namespace linear_posterior_test
}  // namespace
}  // namespace agld::test
