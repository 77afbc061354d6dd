// Divergence (docs/samplers.md, "Divergence"): a chain whose |theta| passes the divergence
// radius stops the run, long before its state is non-finite. The radius is ten times a bound
// on where posterior draws lie: checked against exact posteriors (a linear model whose
// posterior is far from the prior, and heart_scale's Stan posterior), so that no correct run
// can trip it.
#include <gtest/gtest.h>

#include <cmath>

#include "agld/convert.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace divergence_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 5;  // the problem's coordinates
constexpr size_t kRows = 400;
constexpr double kNoiseVar = 0.01;

// A linear model whose data pull the posterior hundreds of prior sds from the prior's mean.
ExactLinear make_problem(uint64_t seed) { return exact_linear(seed, kRows, {300, -200, 100, 0, 500}, kNoiseVar, 1.0); }

SampleOptions linear_options() {
  SampleOptions o;
  o.model = "linear";
  o.noise_var = kNoiseVar;
  o.chains = 2;
  return o;
}

TEST(Divergence, TheRadiusBoundsAPosteriorFarFromThePrior) {
  const uint64_t seed = test_seed(171);
  TempDir dir;
  const ExactLinear p = make_problem(seed);
  auto store = make_store(dir.file("s.agld"), p.rows, kDim, false);
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, linear_options(), &r).is_ok());
  // Where posterior draws lie: the mean's norm plus 5 sds of the spread around it.
  const double reach = p.mean.norm() + 5 * std::sqrt(p.trace);
  std::cout << "posterior mean's norm " << p.mean.norm() << ", reach " << reach << ", radius "
            << r.divergence_radius << std::endl;
  EXPECT_GT(p.mean.norm(), 300) << "the posterior should be far from the prior for the test to mean anything";
  EXPECT_LT(reach, r.divergence_radius / 10) << "the radius is ten times a bound on the reach";
}

TEST(Divergence, TheRadiusBoundsHeartScalesStanPosterior) {
  TempDir dir;
  ConvertOptions opt;
  opt.inputs = {heart_scale_svm()};
  opt.output = dir.file("hs.agld");
  opt.task = "binary";
  ConvertReport report;
  ASSERT_TRUE(convert(opt, &report).is_ok());
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(opt.output, &store).is_ok());
  SampleOptions o;
  o.intercept = false;
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
  const StanReference ref = read_heart_scale_reference();
  ASSERT_EQ(ref.mean.size(), 13u);
  double mean_sq = 0, var = 0;
  for (size_t j = 0; j < ref.mean.size(); ++j) {
    mean_sq += ref.mean[j] * ref.mean[j];
    var += ref.sd[j] * ref.sd[j];
  }
  const double reach = std::sqrt(mean_sq) + 5 * std::sqrt(var);
  std::cout << "heart_scale: reach " << reach << ", radius " << r.divergence_radius << std::endl;
  EXPECT_LT(reach, r.divergence_radius / 10);
}

TEST(Divergence, FlatPriorHasNoRadius) {
  TempDir dir;
  const ExactLinear p = make_problem(test_seed(172));
  auto store = make_store(dir.file("s.agld"), p.rows, kDim, false);
  SampleOptions o = linear_options();
  o.prior_var = std::numeric_limits<double>::infinity();
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
  EXPECT_TRUE(std::isinf(r.divergence_radius));
}

// A step of 3 / lambda_max, where the full-gradient dynamics multiplies the stiffest direction
// by 1 - 3 = -2 a step: the state grows geometrically. The run stops when it
// passes the radius, naming the step, and not when it overflows.
TEST(Divergence, ATooLargeStepStopsAtTheRadius) {
  const uint64_t seed = test_seed(173);
  TempDir dir;
  const ExactLinear p = make_problem(seed);
  auto store = make_store(dir.file("s.agld"), p.rows, kDim, false);
  for (const char* method : {"ptu-ca", "tmu-rr", "full-ca"}) {
    SampleOptions o = linear_options();
    o.method = method;
    o.precondition = "none";
    o.seed = seed;
    o.step = 3 / p.lambda_max;
    o.iterations = 20000;
    KeepDraws keep;
    SampleResult result;
    const Status st = sample(*store, nullptr, o, keep, &result);
    ASSERT_FALSE(st.is_ok()) << method;
    std::cout << method << ": " << st.message() << std::endl;
    EXPECT_NE(st.message().find("beyond"), std::string::npos) << method << ": " << st.message();
    EXPECT_NE(st.message().find("--step"), std::string::npos) << method << ": " << st.message();
  }
}

}  // namespace divergence_test
}  // namespace
}  // namespace agld::test
