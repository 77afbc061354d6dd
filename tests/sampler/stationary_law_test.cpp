// The exact stationary law of every dynamics, with no tuned tolerance (issue #16). With `full`
// (the whole gradient every step) on the linear model, each dynamics is a linear-Gaussian chain
// in (theta, p):
//     s' = A s + c + w,   w ~ N(0, Q),
// A, c and Q built here from the dynamics' one-coordinate step (sampler/dynamics.hpp, which
// tests/sampler/dynamics_test.cpp checks against ALGORITHMS.md's equations) and the data's
// Hessian X'X / noise_var, the gradient taken where the dynamics takes it (hmc2: the midpoint).
// Its stationary law is N(m, S) with m = (I - A)^-1 c and S = A S A^T + Q (a discrete Lyapunov
// equation, solved here by doubling), and states t steps apart have covariance A^t S. The
// engine's draws must have that mean, variance and autocovariance at the thinning's lag within
// Monte Carlo error (batch means). The step is large, so that the same dynamics at 1.3 times
// the step (and 1.5 times the friction) has moments many Monte Carlo errors away: another
// chain fails. (hmc2's position variance is the posterior's at any step on a Gaussian
// target, as for the BAOAB splitting; its autocovariance is not.)
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <iostream>

#include "literal_dynamics.hpp"
#include "sampler/dynamics.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace stationary_law_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 4;
constexpr size_t kRows = 80;
constexpr uint64_t kChains = 4;
constexpr double kZ = 4.5;  // |z| bound of each of 3 kDim comparisons a dynamics

struct Law {
  Eigen::VectorXd mean, var, lag;  // of theta: lag the covariance of states kLag steps apart
};
constexpr uint64_t kLag = 4;  // the thinning

// The stationary law of theta under `d` with the given step and friction (M = 1, prior_var 1).
Law stationary_law(const sampler::DynamicsInfo& d, double step, double friction, const SparseRows& rows,
                   double noise_var) {
  const auto n = static_cast<Eigen::Index>(kDim);
  Eigen::MatrixXd h = Eigen::MatrixXd::Zero(n, n);
  Eigen::VectorXd g0 = Eigen::VectorXd::Zero(n);
  for (size_t r = 0; r < rows.rows(); ++r) {
    Eigen::VectorXd x = Eigen::VectorXd::Zero(n);
    const auto idx = rows.row_indices(r);
    const auto val = rows.row_values(r);
    for (size_t e = 0; e < idx.size(); ++e) x(idx[e]) = val[e];
    h += x * x.transpose() / noise_var;
    g0 += x * rows.labels[r] / noise_var;
  }
  sampler::DynamicsParams p;
  p.step = step;
  p.friction = friction;
  p.prior_var = 1;
  const sampler::GaussianStep s = d.step(p);
  const double shift = d.eval_shift ? d.eval_shift(p) : 0.0;
  const Eigen::MatrixXd id = Eigen::MatrixXd::Identity(n, n);
  const Eigen::Index m = s.dim * n;
  // The data's gradient term a = H (theta + shift p) - g0 enters through b.
  Eigen::MatrixXd a = Eigen::MatrixXd::Zero(m, m), q = Eigen::MatrixXd::Zero(m, m);
  Eigen::VectorXd c(m);
  a.topLeftCorner(n, n) = (1 + s.n00) * id + s.b0 * h;
  c.head(n) = -s.b0 * g0;
  q.topLeftCorner(n, n) = s.q00 * id;
  if (s.dim == 2) {
    a.topRightCorner(n, n) = s.n01 * id + s.b0 * shift * h;
    a.bottomLeftCorner(n, n) = s.n10 * id + s.b1 * h;
    a.bottomRightCorner(n, n) = (1 + s.n11) * id + s.b1 * shift * h;
    c.tail(n) = -s.b1 * g0;
    q.topRightCorner(n, n) = s.q01 * id;
    q.bottomLeftCorner(n, n) = s.q01 * id;
    q.bottomRightCorner(n, n) = s.q11 * id;
  }
  const Eigen::VectorXd mean = (Eigen::MatrixXd::Identity(m, m) - a).partialPivLu().solve(c);
  // S = sum_k A^k Q A^kT by doubling: S_2k = S_k + A^k S_k A^kT.
  Eigen::MatrixXd cov = q, pow = a;
  for (int i = 0; i < 64; ++i) {
    cov += pow * cov * pow.transpose();
    pow = pow * pow;
  }
  Eigen::MatrixXd at = Eigen::MatrixXd::Identity(m, m);
  for (uint64_t t = 0; t < kLag; ++t) at = a * at;
  return {mean.head(n), cov.diagonal().head(n), (at * cov).diagonal().head(n)};
}

// Batch-means mean and standard error of f(draw i, the same chain's next draw) over the draws
// of coordinate t (the engine emits each kept iteration's draws chain by chain: the same
// chain's next is kChains on).
template <class F>
std::pair<double, double> batch_mean(const std::vector<std::vector<double>>& draws, size_t t, F f, size_t batches = 50) {
  const size_t per = (draws.size() - kChains) / batches;
  double sum = 0, sq = 0;
  for (size_t b = 0; b < batches; ++b) {
    double m = 0;
    for (size_t i = b * per; i < (b + 1) * per; ++i) m += f(draws[i][t], draws[i + kChains][t]);
    m /= static_cast<double>(per);
    sum += m;
    sq += m * m;
  }
  const double mean = sum / static_cast<double>(batches);
  const double var = (sq / static_cast<double>(batches) - mean * mean) * static_cast<double>(batches) / (batches - 1.0);
  return {mean, std::sqrt(var / static_cast<double>(batches))};
}

class StationaryLaw : public ::testing::TestWithParam<std::string> {};

TEST_P(StationaryLaw, FullOnTheLinearModelHasTheLyapunovLaw) {
  const sampler::DynamicsInfo* d = sampler::find_dynamics(GetParam());
  ASSERT_NE(d, nullptr);
  const uint64_t seed = test_seed(61);
  const ExactLinear p = exact_linear(seed, kRows, {1.0, -0.5, 0.3, 2.0}, 1.0, 0.7);
  TempDir dir;
  auto store = make_store(dir.file("lin.agld"), p.rows, kDim, false);
  // A large step: ld at 0.6 / lambda_max, the underdamped kinds at h^2 lambda_max = 0.6 with
  // D_f h = 0.3 (a momentum kept for a few steps); hmc2, of second order, closer to its
  // limit (h^2 lambda_max = 2, of 4); svrhmc, whose Euler step needs gamma > eta lambda_max, at
  // eta^2 lambda_max = 0.3 with gamma eta = 0.6.
  double h2 = 0.6, dh = 0.3;
  if (d->name == "hmc2") h2 = 2.0;
  if (d->name == "svrhmc") h2 = 0.3, dh = 0.6;
  const double step = d->state_dim == 2 ? std::sqrt(h2 / p.lambda_max) : h2 / p.lambda_max;
  const double friction = d->state_dim == 2 ? dh / step : 1.0;
  const Law law = stationary_law(*d, step, friction, p.rows, 1.0);
  const Law other = stationary_law(*d, 1.3 * step, 1.5 * friction, p.rows, 1.0);
  SampleOptions o;
  o.model = "linear";
  o.precondition = "none";
  o.method = std::string("full-ca") + (d->name == "ld" ? "" : "-" + std::string(d->name));
  o.step = step;
  if (d->state_dim == 2) o.friction = friction;
  o.seed = seed;
  o.chains = kChains;
  o.iterations = 100000;
  o.burn_in = 5000;
  o.thin = kLag;
  o.evaluations = 0;
  o.memory = uint64_t{512} << 20;
  o.track_default = false;
  for (uint32_t j = 0; j < kDim; ++j) o.track.push_back(j);
  KeepDraws keep;
  SampleResult r;
  Status st = sample(*store, nullptr, o, keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  double most_apart = 0;  // the other chain's moments from these, in Monte Carlo errors
  for (uint32_t j = 0; j < kDim; ++j) {
    const double mu = law.mean(j);
    const auto [mean, mean_se] = batch_mean(keep.draws, j, [](double v, double) { return v; });
    const auto [sq, sq_se] = batch_mean(keep.draws, j, [mu](double v, double) { return (v - mu) * (v - mu); });
    const auto [lag, lag_se] = batch_mean(keep.draws, j, [mu](double v, double w) { return (v - mu) * (w - mu); });
    const double zm = (mean - mu) / mean_se, zv = (sq - law.var(j)) / sq_se, zl = (lag - law.lag(j)) / lag_se;
    most_apart = std::max({most_apart, std::abs(other.var(j) - law.var(j)) / sq_se,
                           std::abs(other.lag(j) - law.lag(j)) / lag_se});
    std::cout << *o.method << " theta." << j + 1 << ": mean " << mean << " (stationary " << mu << ", z " << zm
              << "), variance " << sq << " (stationary " << law.var(j) << ", posterior " << p.sd(j) * p.sd(j)
              << ", z " << zv << "), lag-" << kLag << " autocovariance " << lag << " (stationary " << law.lag(j)
              << ", z " << zl << ")\n";
    EXPECT_LT(std::abs(zm), kZ) << *o.method << " theta." << j + 1;
    EXPECT_LT(std::abs(zv), kZ) << *o.method << " theta." << j + 1;
    EXPECT_LT(std::abs(zl), kZ) << *o.method << " theta." << j + 1;
  }
  std::cout << *o.method << ": at 1.3 times the step and 1.5 times the friction the moments move by up to "
            << most_apart << " Monte Carlo errors\n";
  EXPECT_GT(most_apart, 3 * kZ) << "the test cannot tell this chain from another";
}


INSTANTIATE_TEST_SUITE_P(EveryDynamics, StationaryLaw, ::testing::ValuesIn(sampler::dynamics_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace stationary_law_test
}  // namespace
}  // namespace agld::test
