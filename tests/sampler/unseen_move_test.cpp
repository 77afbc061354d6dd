// The exact move along the directions no row sees (sampler/unseen_move.hpp): it changes no
// margin, it draws the component along those directions from the prior whatever the start,
// and a default run on one-hot fields beside an intercept matches the exact posterior.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <random>

#include "agld/optimize.hpp"
#include "sampler/unseen_move.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace unseen_move_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::UnseenMove;

// Fields [0, 3) and [3, 8), a numeric feature 8, the intercept 9.
const std::vector<FeatureField> kFields = {{0, 3}, {3, 5}};
constexpr Eigen::Index kDim = 10;

// The directions written out: 1_F - e_b for each field (with an intercept), or 1_F - 1_last.
Eigen::MatrixXd directions(const std::vector<FeatureField>& fields, bool intercept, uint64_t dim) {
  const size_t m = intercept ? fields.size() : fields.size() - 1;
  Eigen::MatrixXd u = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(dim), static_cast<Eigen::Index>(m));
  for (size_t i = 0; i < m; ++i) {
    for (uint64_t j = fields[i].first; j < fields[i].first + fields[i].count; ++j) u(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) = 1;
    if (intercept) {
      u(static_cast<Eigen::Index>(dim - 1), static_cast<Eigen::Index>(i)) = -1;
    } else {
      const FeatureField& l = fields.back();
      for (uint64_t j = l.first; j < l.first + l.count; ++j) u(static_cast<Eigen::Index>(j), static_cast<Eigen::Index>(i)) = -1;
    }
  }
  return u;
}

TEST(UnseenMove, NoneWithoutADirectionOrUnderAFlatPrior) {
  const uint64_t d = kDim;
  EXPECT_FALSE(UnseenMove::make({}, true, d, 1.0));
  EXPECT_FALSE(UnseenMove::make(std::span(kFields).first(1), false, d, 1.0));
  EXPECT_FALSE(UnseenMove::make(kFields, true, d, std::numeric_limits<double>::infinity()));
  EXPECT_EQ(UnseenMove::make(kFields, true, d, 1.0)->directions(), 2u);
  EXPECT_EQ(UnseenMove::make(kFields, false, d - 1, 1.0)->directions(), 1u);
}

// Every row with one level of each field (and the numeric feature, and the intercept) keeps
// its margin.
TEST(UnseenMove, ChangesNoMargin) {
  const uint64_t seed = test_seed(5);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  for (const bool intercept : {true, false}) {
    const uint64_t dim = intercept ? uint64_t{kDim} : uint64_t{kDim} - 1;
    auto move = UnseenMove::make(kFields, intercept, dim, 2.0);
    ASSERT_TRUE(move);
    std::vector<double> theta(dim);
    for (double& t : theta) t = 3 * n01(rng);
    const std::vector<double> before = theta;
    move->apply(StridedSpan<double>(theta.data(), dim, 1), [&] { return n01(rng); });
    for (uint64_t a = 0; a < 3; ++a) {
      for (uint64_t b = 3; b < 8; ++b) {
        auto margin = [&](const std::vector<double>& t) { return t[a] + t[b] + 0.7 * t[8] + (intercept ? t[9] : 0); };
        EXPECT_NEAR(margin(theta), margin(before), 1e-12) << "levels " << a << ", " << b;
      }
    }
    EXPECT_NE(theta, before);
  }
}

// From a start far along the directions, many moves: theta's mean is the start with its
// component along V removed, (I - P) theta, and its covariance s2p P (P the projector onto V).
TEST(UnseenMove, DrawsTheComponentFromThePrior) {
  const uint64_t seed = test_seed(6);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  const double s2p = 2.0;
  auto move = UnseenMove::make(kFields, true, uint64_t{kDim}, s2p);
  ASSERT_TRUE(move);
  const Eigen::MatrixXd u = directions(kFields, true, uint64_t{kDim});
  const Eigen::MatrixXd p = u * (u.transpose() * u).inverse() * u.transpose();
  Eigen::VectorXd start(kDim);
  for (Eigen::Index j = 0; j < start.size(); ++j) start[j] = n01(rng);
  start += 40 * u.col(0) - 25 * u.col(1);
  const Eigen::VectorXd mean = start - p * start;
  constexpr int kDraws = 20000;
  Eigen::VectorXd sum = Eigen::VectorXd::Zero(kDim), sq = Eigen::VectorXd::Zero(kDim);
  for (int t = 0; t < kDraws; ++t) {
    Eigen::VectorXd theta = start;
    move->apply(StridedSpan<double>(theta.data(), kDim, 1), [&] { return n01(rng); });
    sum += theta;
    sq += (theta - mean).cwiseAbs2();
  }
  for (Eigen::Index j = 0; j < kDim; ++j) {
    const double var = s2p * p(j, j);
    const double m = sum[j] / kDraws, v = sq[j] / kDraws;
    if (var < 1e-12) {  // the numeric feature: untouched
      EXPECT_NEAR(m, mean[j], 1e-9) << j;
      continue;
    }
    // 5 standard errors: of the mean, sqrt(var / n); of the variance, var sqrt(2 / n).
    EXPECT_NEAR(m, mean[j], 5 * std::sqrt(var / kDraws)) << "coordinate " << j << ", seed " << seed;
    EXPECT_NEAR(v, var, 5 * var * std::sqrt(2.0 / kDraws)) << "coordinate " << j << ", seed " << seed;
  }
}

// A linear model on two one-hot fields (6 and 10 levels, skewed popularity), a numeric
// feature and an intercept, and its exact Gaussian posterior (precision X'X / s2 + I / s2p,
// s2 = s2p = 1).
struct OneHotCase {
  SparseRows rows;
  Eigen::MatrixXd cov;
  Eigen::VectorXd mean;
  static constexpr uint32_t kFeatures = 17;  // the two fields and a numeric feature (16)
  static constexpr Eigen::Index kDim = kFeatures + 1;
  inline static const std::vector<FeatureField> kFields = {{0, 6}, {6, 10}};
};
OneHotCase one_hot_case(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::discrete_distribution<uint32_t> level_a({30, 20, 10, 5, 2, 1}), level_b({40, 20, 10, 8, 6, 5, 4, 3, 2, 1});
  constexpr size_t kRows = 4000;
  const Eigen::Index d = OneHotCase::kDim;
  Eigen::VectorXd beta(d);
  for (Eigen::Index j = 0; j < d; ++j) beta[j] = 0.5 * n01(rng);
  beta[d - 1] = 2.0;  // the intercept
  OneHotCase c;
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(kRows, d);
  Eigen::VectorXd y(kRows);
  for (size_t r = 0; r < kRows; ++r) {
    const auto i = static_cast<Eigen::Index>(r);
    const uint32_t a = level_a(rng), b = 6 + level_b(rng);
    const float v = static_cast<float>(n01(rng) + 1.5);
    x(i, a) = 1;
    x(i, b) = 1;
    x(i, 16) = v;
    x(i, d - 1) = 1;
    y[i] = x.row(i).dot(beta) + n01(rng);
    c.rows.add_row(y[i], std::vector<uint32_t>{a, b, 16}, std::vector<float>{1, 1, v});
  }
  c.cov = (x.transpose() * x + Eigen::MatrixXd::Identity(d, d)).inverse();
  c.mean = c.cov * x.transpose() * y;
  return c;
}

// With defaults only, the run matches the exact posterior within 0.1 posterior sd (means)
// and 10 % (sds), and the intercept has mixed.
TEST(UnseenMove, DefaultRunOnOneHotFieldsMatchesTheExactPosterior) {
  const uint64_t seed = test_seed(7);
  const OneHotCase c = one_hot_case(seed);
  const Eigen::Index d = OneHotCase::kDim;
  const Eigen::MatrixXd& cov = c.cov;
  const Eigen::VectorXd& mean = c.mean;
  TempDir dir;
  auto store = make_store(dir.file("onehot.agld"), c.rows, OneHotCase::kFeatures, false, 64, true, OneHotCase::kFields);
  auto run = [&](const std::string& unseen) {
    SampleOptions o;
    o.model = "linear";
    o.intercept = true;
    o.seed = seed;
    o.unseen = unseen;
    o.memory = uint64_t{512} << 20;
    KeepDraws keep;
    SampleResult r;
    const Status st = sample(*store, nullptr, o, keep, &r);
    EXPECT_TRUE(st.is_ok()) << st.message();
    return r;
  };
  const SampleResult on = run("auto");
  ASSERT_EQ(on.mean.size(), static_cast<size_t>(d));
  EXPECT_EQ(on.run.unseen_directions, 2u);
  int off_by = 0;
  for (Eigen::Index j = 0; j < d; ++j) {
    const double sd = std::sqrt(cov(j, j));
    const bool ok = std::abs(on.mean[j] - mean[j]) < 0.1 * sd && std::abs(on.sd[j] / sd - 1) < 0.1;
    off_by += !ok;
    EXPECT_TRUE(ok) << "coordinate " << j << ": mean " << on.mean[j] << " (exact " << mean[j] << "), sd "
                    << on.sd[j] << " (exact " << sd << "), R-hat " << on.rhat[j] << "; seed " << seed;
  }
  EXPECT_LT(on.rhat[d - 1], 1.01) << "the intercept; seed " << seed;
  const SampleResult off = run("off");
  EXPECT_EQ(off.run.unseen_directions, 0u);
  // Without the move the intercept's R-hat is 1.6 to 2.2 on most seeds (1.009 on one of
  // four): printed, not asserted.
  std::cout << "intercept R-hat " << on.rhat[d - 1] << " with the move, " << off.rhat[d - 1] << " without; "
            << off_by << " coordinates off; " << on.run.epochs << " passes; seed " << seed << "\n";
}

// Every kept state's component along the directions is drawn anew, not only at the refreshes
// (a pass apart: a run would have a few dozen independent values of it, and means along it a
// sixth of a posterior sd off): along each field's direction 1_F - e_b the kept states' values
// are uncorrelated from one to the next, with the exact posterior's variance.
TEST(UnseenMove, EveryKeptStateDrawsTheComponentAnew) {
  const uint64_t seed = test_seed(9);
  const OneHotCase c = one_hot_case(seed);
  const Eigen::Index d = OneHotCase::kDim;
  TempDir dir;
  auto store = make_store(dir.file("onehot.agld"), c.rows, OneHotCase::kFeatures, false, 64, true, OneHotCase::kFields);
  SampleOptions o;
  o.model = "linear";
  o.intercept = true;
  o.seed = seed;
  o.chains = 1;
  o.iterations = 4000;  // 40 iterations a pass (refresh): 2,000 kept states, 50 refreshes
  o.thin = 1;
  o.until_mixed = "off";
  o.memory = uint64_t{512} << 20;
  o.track_default = false;
  for (uint32_t j = 0; j < static_cast<uint32_t>(d); ++j) o.track.push_back(j);
  KeepDraws keep;
  SampleResult r;
  const Status st = sample(*store, nullptr, o, keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  ASSERT_EQ(r.run.unseen_directions, 2u);
  const size_t n = keep.draws.size();
  ASSERT_GE(n, 1000u);
  for (const FeatureField& f : OneHotCase::kFields) {
    Eigen::VectorXd v = Eigen::VectorXd::Zero(d);
    v.segment(f.first, f.count).setOnes();
    v[d - 1] = -1;
    std::vector<double> p(n);
    double mean = 0;
    for (size_t t = 0; t < n; ++t) {
      p[t] = Eigen::Map<const Eigen::VectorXd>(keep.draws[t].data(), d).dot(v);
      mean += p[t] / static_cast<double>(n);
    }
    double var = 0, lag = 0;
    for (size_t t = 0; t < n; ++t) var += (p[t] - mean) * (p[t] - mean) / static_cast<double>(n);
    for (size_t t = 1; t < n; ++t) lag += (p[t] - mean) * (p[t - 1] - mean) / static_cast<double>(n);
    const double exact = v.dot(c.cov * v), r1 = lag / var;
    std::cout << "field at " << f.first << ": lag-1 autocorrelation " << r1 << ", variance " << var << " (exact " << exact
              << "), " << n << " kept states; seed " << seed << "\n";
    // Independent draws: r1 within 5 / sqrt(n) of 0 (it is above 0.9 when the component moves
    // only at refreshes), the variance within 5 standard errors, var sqrt(2 / n).
    EXPECT_LT(std::abs(r1), 5 / std::sqrt(static_cast<double>(n))) << "field at " << f.first << "; seed " << seed;
    EXPECT_NEAR(var, exact, 5 * exact * std::sqrt(2.0 / static_cast<double>(n))) << "field at " << f.first << "; seed " << seed;
  }
}

// agld optimize sets the mode's component along the directions exactly: on the linear model
// the mode is the posterior mean, and the default run reaches it along the directions too.
TEST(UnseenMove, OptimizeFindsTheModeAlongTheDirections) {
  const uint64_t seed = test_seed(8);
  const OneHotCase c = one_hot_case(seed);
  TempDir dir;
  auto store = make_store(dir.file("onehot.agld"), c.rows, OneHotCase::kFeatures, false, 64, true, OneHotCase::kFields);
  OptimizeOptions o;
  o.model = "linear";
  o.intercept = true;
  o.seed = seed;
  o.memory = uint64_t{512} << 20;
  OptimizeObserver quiet;
  OptimizeResult r;
  const Status st = optimize(*store, nullptr, o, quiet, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  EXPECT_EQ(r.run.unseen_directions, 2u);
  for (Eigen::Index j = 0; j < OneHotCase::kDim; ++j) {
    EXPECT_NEAR(r.mode[static_cast<size_t>(j)], c.mean[j], 0.01 * std::sqrt(c.cov(j, j)))
        << "coordinate " << j << " after " << r.epochs.size() - 1 << " epochs (" << r.stop_reason << "); seed " << seed;
  }
}

}  // namespace unseen_move_test
}  // namespace
}  // namespace agld::test
