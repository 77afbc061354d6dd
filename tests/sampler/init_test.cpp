// --init FILE (docs/samplers.md, "Defaults"): the chains start around column 0 of a .npy of a
// row per coordinate, spread by its column 1 (or by the prior's sd without one); a bad file is a
// one-line error before anything runs.
#include <gtest/gtest.h>

#include <cmath>

#include "agld/run_output.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace init_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 5;

class Init : public ::testing::Test {
 protected:
  void SetUp() override {
    problem_ = exact_linear(test_seed(201), 300, {1.0, -0.5, 0.3, 0.0, 2.0}, 1.0, 0.6);
    store_ = make_store(dir_.file("s.agld"), problem_.rows, kDim, false);
  }
  // A run whose first kept state is x_0 moved by a negligible step.
  SampleOptions options(const std::string& init) const {
    SampleOptions o;
    o.model = "linear";
    o.method = "ptu-ca";
    o.precondition = "none";
    o.step = 1e-14;
    o.iterations = 2;
    o.burn_in = 0;
    o.chains = 4;
    o.evaluations = 1;
    o.seed = test_seed(202);
    o.track_default = false;
    for (uint32_t j = 0; j < kDim; ++j) o.track.push_back(j);
    o.init = init;
    return o;
  }
  std::string write(const std::string& name, uint64_t rows, uint64_t cols, const std::vector<double>& data) {
    const std::string path = dir_.file(name);
    write_file(path, encode_npy_f64(rows, cols, data));
    return path;
  }

  TempDir dir_;
  ExactLinear problem_;
  std::unique_ptr<Store> store_;
};

const double kCenter[kDim] = {3, -2, 10, 0.5, -7};

TEST_F(Init, ChainsStartAroundTheFileSpreadByItsSds) {
  std::vector<double> data;
  for (uint32_t j = 0; j < kDim; ++j) {
    data.push_back(kCenter[j]);
    data.push_back(1e-3);
  }
  KeepDraws keep;
  SampleResult r;
  const Status st = sample(*store_, nullptr, options(write("mode.npy", kDim, 2, data)), keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_GE(keep.draws.size(), 4u);
  double spread = 0;
  for (const auto& d : keep.draws) {
    for (uint32_t j = 0; j < kDim; ++j) {
      EXPECT_NEAR(d[j], kCenter[j], 6e-3) << "coordinate " << j;
      spread = std::max(spread, std::abs(d[j] - kCenter[j]));
    }
  }
  EXPECT_GT(spread, 5e-4) << "the chains should be spread around the point, not on it";
}

TEST_F(Init, WithoutSdsThePriorSpreadsThem) {
  std::vector<double> data(kCenter, kCenter + kDim);
  KeepDraws keep;
  SampleResult r;
  const Status st = sample(*store_, nullptr, options(write("point.npy", kDim, 1, data)), keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  double sq = 0;
  uint64_t n = 0;
  for (const auto& d : keep.draws) {
    for (uint32_t j = 0; j < kDim; ++j, ++n) sq += (d[j] - kCenter[j]) * (d[j] - kCenter[j]);
  }
  const double sd = std::sqrt(sq / static_cast<double>(n));
  EXPECT_GT(sd, 0.4);  // the prior's sd is 1: 20 draws (4 chains, 5 coordinates; pairs repeat)
  EXPECT_LT(sd, 2.0);
}

TEST_F(Init, BadFilesAreOneLineErrors) {
  std::vector<double> nan_center = {1, 1, std::nan(""), 1, 1};
  std::vector<double> zero_sd;
  for (uint32_t j = 0; j < kDim; ++j) {
    zero_sd.push_back(1);
    zero_sd.push_back(j == 4 ? 0 : 1);
  }
  struct Bad {
    std::string path, expect;
  };
  const std::vector<Bad> bad = {
      {dir_.file("missing.npy"), "missing.npy"},
      {write("short.npy", kDim - 1, 1, std::vector<double>(kDim - 1, 0)), "expected (5, 1)"},
      {write("nan.npy", kDim, 1, nan_center), "row 2"},
      {write("zero.npy", kDim, 2, zero_sd), "row 4"},
  };
  for (const Bad& b : bad) {
    ResolvedSample r;
    const Status st = resolve_sample(*store_, nullptr, options(b.path), &r);
    ASSERT_FALSE(st.is_ok()) << b.path;
    EXPECT_NE(st.message().find("--init"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find(b.expect), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  }
}

}  // namespace init_test
}  // namespace
}  // namespace agld::test
