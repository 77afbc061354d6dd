// Lazy sparse updates against the dense path (every coordinate stepped every iteration)
// on a sparse problem: the posterior moments agree within Monte Carlo error. With the
// diagonal preconditioner the coordinates step at several levels, each with its own jumps.
#include <gtest/gtest.h>

#include <ostream>
#include <random>

#include "sampler_test_support.hpp"

namespace agld::test {
namespace {

constexpr uint32_t kDim = 30;

// Rows with 2 of 30 features each: most coordinates sit untouched for many iterations.
SparseRows sparse_rows(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> feature(0, kDim - 1);
  SparseRows rows;
  for (int r = 0; r < 300; ++r) {
    uint32_t a = feature(rng), b = feature(rng);
    while (b == a) b = feature(rng);
    if (a > b) std::swap(a, b);
    const float va = static_cast<float>(n01(rng)), vb = 1.0f;
    const double y = 0.8 * va - 0.5 * vb + (a % 3 == 0 ? 1.0 : 0.0) + n01(rng);
    rows.add_row(y, std::vector<uint32_t>{a, b}, std::vector<float>{va, vb});
  }
  return rows;
}

struct Case {
  const char* method;
  const char* precondition;
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.method << ", precondition " << c.precondition; }

class LazyDense : public ::testing::TestWithParam<Case> {};

TEST_P(LazyDense, SameMomentsWithinMonteCarloError) {
  const uint64_t seed = test_seed(51);
  const SparseRows rows = sparse_rows(seed);
  TempDir dir;
  auto store = make_store(dir.file("sparse.agld"), rows, kDim, false);
  std::vector<Summary> lazy(kDim), dense(kDim);
  for (bool is_dense : {false, true}) {
    SampleOptions o;
    o.model = "linear";
    o.method = GetParam().method;
    o.precondition = GetParam().precondition;
    o.seed = seed + (is_dense ? 1 : 0);
    o.batch = 10;
    // (N / n) max |x_i|^2 eta stays well below 1: stable for the VR estimates. diag: its
    // default step.
    if (o.precondition == "none") o.step = 1e-3;
    o.chains = 4;  // the draws of all four, kept in turn
    o.iterations = 200000;
    o.burn_in = 20000;
    o.thin = 4;
    o.evaluations = 0;
    o.memory = uint64_t{512} << 20;
    o.dense = is_dense;
    o.track_default = false;
    for (uint32_t j = 0; j < kDim; ++j) o.track.push_back(j);
    KeepDraws keep;
    SampleResult r;
    Status st = sample(*store, nullptr, o, keep, &r);
    ASSERT_TRUE(st.is_ok()) << st.message();
    for (uint32_t j = 0; j < kDim; ++j) (is_dense ? dense : lazy)[j] = summarize(keep.draws, j);
  }
  for (uint32_t j = 0; j < kDim; ++j) {
    const Summary& l = lazy[j];
    const Summary& d = dense[j];
    // The sd's standard error from the effective sample size (sd / mcse)^2: sd / sqrt(2 ESS).
    const double se_mean = std::hypot(l.mcse, d.mcse);
    const double se_sd = std::hypot(l.mcse / std::sqrt(2.0), d.mcse / std::sqrt(2.0));
    std::cout << GetParam().method << "/" << GetParam().precondition << " coordinate " << j << ": mean lazy " << l.mean << " dense " << d.mean
              << " (" << (l.mean - d.mean) / se_mean << " se), sd lazy " << l.sd << " dense " << d.sd
              << " (" << (l.sd - d.sd) / se_sd << " se)" << std::endl;
    EXPECT_NEAR(l.mean, d.mean, 4 * se_mean) << "coordinate " << j;
    EXPECT_NEAR(l.sd, d.sd, 4 * se_sd) << "coordinate " << j;
    EXPECT_LT(se_mean, 0.1 * d.sd) << "the runs are too short for the comparison to mean anything";
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, LazyDense,
                         ::testing::Values(Case{"none-ra", "none"}, Case{"tmu-rr", "none"}, Case{"ptu-ca", "none"},
                                           Case{"none-ra", "diag"}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string s = std::string(param_info.param.method) + "_" + param_info.param.precondition;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch;
                           return s;
                         });

}  // namespace
}  // namespace agld::test
