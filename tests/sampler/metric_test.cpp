// --metric FILE (docs/samplers.md, "Preconditioning"): diag's M from a standard deviation per
// coordinate (column 1 of a .npy, as posterior.npy), M_j = min(sd_j^2, 1/q_j) with q_j the cap
// of what one row brings to a minibatch. The statistics' own M given as a file is the default
// preconditioner; huge sds leave the cap; a bad file is a one-line error naming what is wrong.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "agld/run_output.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace metric_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint64_t kRows = 4000;
constexpr uint32_t kFeatures = 30;
constexpr uint64_t kBatch = 100;

// Rows of an intercept-less one-hot block (features 0..19, Zipf-like) and numeric columns
// 20..28; feature 29 in one row.
SparseRows rows_of(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_real_distribution<double> u(0, 1);
  SparseRows rows;
  for (uint64_t r = 0; r < kRows; ++r) {
    std::vector<uint32_t> idx = {static_cast<uint32_t>(20 * u(rng) * u(rng)), 20 + static_cast<uint32_t>(r % 9)};
    std::vector<float> val = {1.0f, static_cast<float>(n01(rng))};
    if (r == 77) {
      idx.push_back(29);
      val.push_back(1.5f);
    }
    rows.add_row(0.2 * idx[0] / 20.0 + val[1] * 0.3 + n01(rng), idx, val);
  }
  return rows;
}

class Metric : public ::testing::Test {
 protected:
  void SetUp() override {
    rows_ = rows_of(test_seed(191));
    StoreMeta meta;
    meta.features = kFeatures;
    meta.label_kind = LabelKind::kReal;
    meta.options.shuffle = true;
    ASSERT_TRUE(write_store_with_stats(dir_.file("s.agld"), rows_, 500, ChunkCodec{}, meta, 8).is_ok());
    ASSERT_TRUE(Store::open(dir_.file("s.agld"), &store_).is_ok());
    stats_ = brute_feature_stats(rows_, kFeatures);
  }
  SampleOptions options() const {
    SampleOptions o;
    o.model = "linear";
    o.method = "ptu-ca";
    o.intercept = true;
    o.chains = 2;
    o.iterations = 200;
    o.evaluations = 1;
    o.seed = test_seed(192);
    o.metric = "diag";  // the statistics' diagonal, which a file of sds replaces
    return o;
  }
  // A .npy of (d, 2): mean 0 and sd[j].
  std::string write_metric(const std::string& name, const std::vector<double>& sd, uint64_t cols = 2) {
    std::vector<double> data;
    for (double s : sd) {
      data.push_back(0);
      if (cols == 2) data.push_back(s);
    }
    const std::string path = dir_.file(name);
    write_file(path, encode_npy_f64(sd.size(), cols, data));
    return path;
  }
  // h_j and q_j of the statistics (linear, noise_var 1: c = 1; prior_var 1), the intercept last.
  double h(uint64_t j) const { return 1 + (j < kFeatures ? stats_.sum_sq[j] : static_cast<double>(kRows)); }
  double q(uint64_t j) const {
    const double per_row = static_cast<double>(kRows) / kBatch;
    const double max_sq = j < kFeatures ? double{stats_.max_abs[j]} * stats_.max_abs[j] : 1.0;
    return 1 + per_row * max_sq;
  }
  Status run(const SampleOptions& o, SampleResult* r) {
    KeepDraws keep;
    return sample(*store_, nullptr, o, keep, r);
  }

  TempDir dir_;
  SparseRows rows_;
  std::unique_ptr<Store> store_;
  BruteFeatureStats stats_;
};

TEST_F(Metric, TheStatisticsOwnSdsGiveTheDefaultPreconditioner) {
  std::vector<double> sd(kFeatures + 1);
  for (uint64_t j = 0; j <= kFeatures; ++j) sd[j] = 1 / std::sqrt(h(j));
  SampleResult base, file;
  ASSERT_TRUE(run(options(), &base).is_ok());
  SampleOptions o = options();
  o.metric = write_metric("m.npy", sd);
  const Status st = run(o, &file);
  ASSERT_TRUE(st.is_ok()) << st.message();
  const ResolvedSample &a = base.run, &b = file.run;
  EXPECT_EQ(a.precondition_levels, b.precondition_levels);
  EXPECT_NEAR(b.precondition_m_min / a.precondition_m_min, 1, 1e-6);
  EXPECT_NEAR(b.precondition_m_max / a.precondition_m_max, 1, 1e-6);
  EXPECT_NEAR(b.step / a.step, 1, 1e-5);
  EXPECT_NE(b.step_rule.find("--metric"), std::string::npos) << b.step_rule;
}

TEST_F(Metric, HugeSdsLeaveTheRowCap) {
  SampleOptions o = options();
  o.metric = write_metric("m.npy", std::vector<double>(kFeatures + 1, 1e6));
  SampleResult r;
  const Status st = run(o, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  double lo = INFINITY, hi = 0;
  for (uint64_t j = 0; j <= kFeatures; ++j) {
    lo = std::min(lo, 1 / q(j));
    hi = std::max(hi, 1 / q(j));
  }
  EXPECT_NEAR(r.run.precondition_m_min / lo, 1, 1e-6);
  EXPECT_NEAR(r.run.precondition_m_max / hi, 1, 1e-6);
}

TEST_F(Metric, BadFilesAndOptionsAreOneLineErrors) {
  const std::vector<double> good(kFeatures + 1, 0.1);
  std::vector<double> negative = good, nan = good;
  negative[7] = -1;
  nan[3] = std::nan("");
  struct Bad {
    std::string path, expect;
  };
  const std::vector<Bad> bad = {
      {dir_.file("missing.npy"), "missing.npy"},
      {write_metric("short.npy", std::vector<double>(kFeatures, 0.1)), "expected (31, 2)"},
      {write_metric("one.npy", good, 1), "expected (31, 2)"},
      {write_metric("neg.npy", negative), "row 7"},
      {write_metric("nan.npy", nan), "row 3"},
  };
  for (const Bad& b : bad) {
    SampleOptions o = options();
    o.metric = b.path;
    SampleResult r;
    const Status st = run(o, &r);
    ASSERT_FALSE(st.is_ok()) << b.path;
    EXPECT_NE(st.message().find(b.expect), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("--metric"), std::string::npos) << st.message();
    EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
  }
  write_file(dir_.file("text.npy"), "not an npy");
  SampleOptions o = options();
  o.metric = dir_.file("text.npy");
  SampleResult r;
  Status st = run(o, &r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("NumPy"), std::string::npos) << st.message();
  o.metric = write_metric("ok.npy", good);
  o.precondition = "none";
  st = run(o, &r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("--precondition diag"), std::string::npos) << st.message();
}

}  // namespace metric_test
}  // namespace
}  // namespace agld::test
