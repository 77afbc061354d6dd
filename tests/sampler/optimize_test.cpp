// optimize() (docs/samplers.md, "The mode (`agld optimize`)"): the mode against closed forms
// and Newton's method, the Hessian's diagonal against the exact one, the lazy SVRG steps
// against a plain step-by-step SVRG written here, the stop reasons, the passes counted, and
// divergence.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <iostream>
#include <random>

#include "agld/convert.hpp"
#include "agld/optimize.hpp"
#include "agld/reader.hpp"
#include "model/model.hpp"
#include "reader/order.hpp"
#include "sampler/optimizer.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace optimize_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// Keeps every snapshot the run reports.
class KeepEpochs final : public OptimizeObserver {
 public:
  Status on_epoch(const OptimizeEpoch& e) override {
    epochs.push_back(e);
    return Status::ok();
  }
  std::vector<OptimizeEpoch> epochs;
};

// Rows as dense Eigen (n x d) with the intercept's column appended if asked.
Eigen::MatrixXd dense(const SparseRows& rows, uint64_t features, bool intercept) {
  const auto d = static_cast<Eigen::Index>(features + (intercept ? 1 : 0));
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(rows.rows()), d);
  for (size_t r = 0; r < rows.rows(); ++r) {
    const auto idx = rows.row_indices(r);
    const auto val = rows.row_values(r);
    for (size_t e = 0; e < idx.size(); ++e) x(static_cast<Eigen::Index>(r), idx[e]) = val[e];
    if (intercept) x(static_cast<Eigen::Index>(r), d - 1) = 1;
  }
  return x;
}

// ---- The linear model: the mode is the exact posterior mean. ----

constexpr uint32_t kBlockA = 4, kBlockB = 40, kNumeric = 3, kRare = 3;
constexpr uint32_t kFeatures = kBlockA + kBlockB + kNumeric + kRare;

// Two one-hot blocks, the second Zipf-like with levels in a handful of rows, numeric columns,
// and rare features in one or two rows. Each block's level 0 is its reference level, absent
// from the rows (dummy coding): with full blocks beside the intercept the directions that
// only the prior bounds make a first-order method crawl (docs/samplers.md, "The mode").
SparseRows onehot_rows(uint64_t seed, size_t n, bool binary_labels) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_real_distribution<double> u(0, 1);
  SparseRows rows;
  for (size_t r = 0; r < n; ++r) {
    const auto a = static_cast<uint32_t>(r % kBlockA), b = static_cast<uint32_t>(kBlockB * u(rng) * u(rng));
    std::vector<uint32_t> idx;
    std::vector<float> val;
    if (a > 0) idx.push_back(a), val.push_back(1.0f);
    if (b > 0) idx.push_back(kBlockA + b), val.push_back(1.0f);
    double m = 0.5 - 0.3 * a + 0.02 * b;
    for (uint32_t c = 0; c < kNumeric; ++c) {
      const float v = static_cast<float>(n01(rng));
      idx.push_back(kBlockA + kBlockB + c);
      val.push_back(v);
      m += (c + 1) * 0.4 * v;
    }
    for (uint32_t q = 0; q < kRare; ++q) {
      if (r == 7 + 101 * q || (q == 0 && r == n - 3)) {
        idx.push_back(kBlockA + kBlockB + kNumeric + q);
        val.push_back(1.5f);
        m += 1.0;
      }
    }
    const double y = binary_labels ? (u(rng) < 1 / (1 + std::exp(-m)) ? 1.0 : -1.0) : m + n01(rng);
    rows.add_row(y, idx, val);
  }
  return rows;
}

struct Exact {
  Eigen::VectorXd mean, precision_diag;
};

// The posterior of the linear model: precision P = X'X / s2 + I / s2p, mean P^-1 X'y / s2.
Exact linear_exact(const SparseRows& rows, bool intercept, double s2, double s2p) {
  const Eigen::MatrixXd x = dense(rows, kFeatures, intercept);
  const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(rows.labels.data(), static_cast<Eigen::Index>(rows.rows()));
  const Eigen::MatrixXd p = x.transpose() * x / s2 + Eigen::MatrixXd::Identity(x.cols(), x.cols()) / s2p;
  return {p.ldlt().solve(x.transpose() * y / s2), p.diagonal()};
}

class OptimizeLinear : public ::testing::TestWithParam<const char*> {};

TEST_P(OptimizeLinear, TheModeIsTheExactPosteriorMeanAndHIsItsPrecisionsDiagonal) {
  const uint64_t seed = test_seed(5);
  const SparseRows rows = onehot_rows(seed, 1500, false);
  const double s2 = 0.8, s2p = 2.0;
  const Exact ex = linear_exact(rows, true, s2, s2p);
  TempDir dir;
  auto store = make_store(dir.file("lin.agld"), rows, kFeatures, false);
  OptimizeOptions o;
  o.model = "linear";
  o.noise_var = s2;
  o.prior_var = s2p;
  o.intercept = true;
  o.precondition = GetParam();
  o.tol = 1e-10;
  o.epochs = 400;
  if (o.precondition == "none") {  // a step set by the commonest features: rare ones crawl
    o.batch = 5;  // as many steps a pass as the step allows
    o.epochs = 6000;
  }
  o.seed = seed;
  o.memory = uint64_t{512} << 20;
  KeepEpochs keep;
  OptimizeResult r;
  Status st = optimize(*store, nullptr, o, keep, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::cout << "precondition " << o.precondition << ": stopped by " << r.stop_reason << " after "
            << r.epochs.size() - 1 << " epochs, " << r.epochs.back().passes << " passes, |g|_M relative "
            << r.epochs.back().rel_grad_norm << ", step " << r.run.step << std::endl;
  EXPECT_EQ(r.stop_reason, "tolerance");
  ASSERT_EQ(r.mode.size(), kFeatures + 1u);
  const double scale = ex.mean.cwiseAbs().maxCoeff();
  double worst = 0;
  for (Eigen::Index j = 0; j < ex.mean.size(); ++j) {
    const auto u = static_cast<size_t>(j);
    worst = std::max(worst, std::abs(r.mode[u] - ex.mean(j)) / scale);
    EXPECT_NEAR(r.mode[u], ex.mean(j), 1e-6 * scale) << "coordinate " << j;
    EXPECT_NEAR(1 / (r.sd[u] * r.sd[u]), ex.precision_diag(j), 1e-9 * ex.precision_diag(j)) << "coordinate " << j;
  }
  std::cout << "largest |mode - exact mean| / max |exact mean|: " << worst << std::endl;
  // The observer saw every snapshot; the gradient norm fell to the tolerance.
  ASSERT_EQ(keep.epochs.size(), r.epochs.size());
  EXPECT_EQ(keep.epochs.front().rel_grad_norm, 1.0);
  EXPECT_LE(r.epochs.back().rel_grad_norm, o.tol);
}

INSTANTIATE_TEST_SUITE_P(Preconditioners, OptimizeLinear, ::testing::Values("diag", "none"));

// ---- Logistic: heart_scale against Newton's method. ----

TEST(Optimize, HeartScaleModeMatchesNewton) {
  TempDir dir;
  ConvertOptions co;
  co.inputs = {heart_scale_svm()};
  co.output = dir.file("heart.agld");
  ConvertReport rep;
  ASSERT_TRUE(convert(co, &rep).is_ok());
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(co.output, &store).is_ok());
  // The rows as stored (float values, labels +-1).
  const uint64_t n = store->meta().rows, d = store->meta().features;
  ReaderOptions ro;
  ro.batch_size = static_cast<size_t>(n);
  std::unique_ptr<Reader> reader;
  ASSERT_TRUE(Reader::open(*store, ro, &reader).is_ok());
  Batch b;
  ASSERT_TRUE(reader->next(&b).is_ok());
  SparseRows rows;
  for (size_t i = 0; i < b.size(); ++i) rows.add_row(b.labels[i], b.row_indices(i), b.row_values(i));
  const Eigen::MatrixXd x = dense(rows, d, false);
  const Eigen::VectorXd y = Eigen::Map<const Eigen::VectorXd>(rows.labels.data(), static_cast<Eigen::Index>(n));
  // Newton on U(theta) = |theta|^2 / 2 + sum_i log(1 + exp(-y_i x_i . theta)).
  Eigen::VectorXd theta = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(d));
  Eigen::MatrixXd h;
  for (int it = 0; it < 50; ++it) {
    const Eigen::VectorXd m = x * theta;
    Eigen::VectorXd s(m.size()), w(m.size());
    for (Eigen::Index i = 0; i < m.size(); ++i) {
      const double p = 1 / (1 + std::exp(y(i) * m(i)));  // sigmoid(-y m)
      s(i) = -y(i) * p;
      w(i) = p * (1 - p);
    }
    const Eigen::VectorXd g = theta + x.transpose() * s;
    h = x.transpose() * w.asDiagonal() * x + Eigen::MatrixXd::Identity(theta.size(), theta.size());
    theta -= h.ldlt().solve(g);
    if (g.norm() < 1e-13) break;
  }
  for (const char* pre : {"diag", "none"}) {
    OptimizeOptions o;
    o.model = "logistic";
    o.precondition = pre;
    o.tol = 1e-10;
    o.epochs = 400;
    o.memory = uint64_t{512} << 20;
    KeepEpochs keep;
    OptimizeResult r;
    Status st = optimize(*store, nullptr, o, keep, &r);
    ASSERT_TRUE(st.is_ok()) << st.message();
    std::cout << "heart_scale, precondition " << pre << ": " << r.stop_reason << " after " << r.epochs.size() - 1
              << " epochs, " << r.epochs.back().passes << " passes" << std::endl;
    EXPECT_EQ(r.stop_reason, "tolerance");
    const double scale = theta.cwiseAbs().maxCoeff();
    for (Eigen::Index j = 0; j < theta.size(); ++j) {
      const auto u = static_cast<size_t>(j);
      EXPECT_NEAR(r.mode[u], theta(j), 1e-6 * scale) << pre << " coordinate " << j;
      // H at the mode (Newton's last H is at the point before its last, tiny, step).
      EXPECT_NEAR(1 / (r.sd[u] * r.sd[u]), h(j, j), 1e-6 * h(j, j)) << pre << " coordinate " << j;
    }
  }
}

// ---- Lazy against dense: the same iterates. ----

constexpr uint32_t kSmallDim = 30;
constexpr uint64_t kSmallBatch = 10;

// Rows with 2 of 30 features: most coordinates sit untouched for many iterations.
SparseRows small_rows(uint64_t seed, bool binary) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> feature(0, kSmallDim - 1);
  SparseRows rows;
  for (int r = 0; r < 305; ++r) {  // not a multiple of the batch: batches wrap around the end
    uint32_t a = feature(rng), c = feature(rng);
    while (c == a) c = feature(rng);
    if (a > c) std::swap(a, c);
    const double u = n01(rng);
    const double m = 0.8 * u - 0.5 + (a % 3 == 0 ? 1.0 : 0.0);
    const double y = binary ? (n01(rng) < m ? 1.0 : -1.0) : m + n01(rng);
    rows.add_row(y, std::vector<uint32_t>{a, c}, std::vector<float>{static_cast<float>(u), 1.0f});
  }
  return rows;
}

// Plain SVRG, every coordinate every step, with the intercept appended: epochs of a full
// gradient at x~ = x and ceil(N / n) steps on the rows in ca's order (the store's).
std::vector<double> dense_svrg(const Store& store, const SparseRows& rows, const model::Model& model,
                               const std::vector<double>& m_diag, double eta, double s2p, uint64_t epochs) {
  const size_t n = rows.rows(), d = kSmallDim + 1;
  const uint64_t per_epoch = (n + kSmallBatch - 1) / kSmallBatch;
  const double scale = static_cast<double>(n) / static_cast<double>(kSmallBatch);
  std::vector<double> x(d, 0.0), point(d), a(d), g(d);
  auto margin = [&](size_t i, const std::vector<double>& at) {
    double m = at[d - 1];
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) m += at[idx[e]] * val[e];
    return m;
  };
  auto add_row = [&](std::vector<double>& v, size_t i, double c) {
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) v[idx[e]] += c * val[e];
    v[d - 1] += c;
  };
  uint64_t pos = 0;
  for (uint64_t ep = 0; ep < epochs; ++ep) {
    point = x;
    std::fill(a.begin(), a.end(), 0.0);
    for (size_t i = 0; i < n; ++i) add_row(a, i, model.dloss(rows.labels[i], margin(i, point)));
    for (uint64_t t = 0; t < per_epoch; ++t) {
      for (size_t j = 0; j < d; ++j) g[j] = x[j] / s2p + a[j];
      for (uint64_t q = 0; q < kSmallBatch; ++q, ++pos) {
        const size_t i = reader::ca_row_at(store, pos);
        add_row(g, i, scale * (model.dloss(rows.labels[i], margin(i, x)) - model.dloss(rows.labels[i], margin(i, point))));
      }
      for (size_t j = 0; j < d; ++j) x[j] -= eta * m_diag[j] * g[j];
    }
  }
  return x;
}

TEST(Optimize, LazyStepsAreTheDenseIterates) {
  const uint64_t seed = test_seed(9);
  for (const model::ModelInfo& mi : model::registered_models()) {
    SampleOptions so;
    const auto model = mi.make(so);
    const SparseRows rows = small_rows(seed, model->binary());
    TempDir dir;
    auto store = make_store(dir.file("small.agld"), rows, kSmallDim, model->binary());
    for (const char* pre : {"diag", "none"}) {
      OptimizeOptions o;
      o.model = std::string(mi.name);
      o.precondition = pre;
      o.intercept = true;
      o.prior_var = 3;
      o.batch = kSmallBatch;
      o.epochs = 4;
      o.tol = 0;  // every epoch
      o.seed = seed;
      o.memory = uint64_t{512} << 20;
      if (std::string(pre) == "none") o.step = 2e-3;
      KeepEpochs keep;
      OptimizeResult r;
      Status st = optimize(*store, nullptr, o, keep, &r);
      ASSERT_TRUE(st.is_ok()) << st.message();
      EXPECT_EQ(r.stop_reason, "epochs");
      // The M the run stepped with, from the same preparation.
      ResolvedOptimize ro;
      sampler::Preconditioner p;
      sampler::OptimizePlan plan;
      ASSERT_TRUE(sampler::prepare_optimize(*store, nullptr, o, &ro, &p, &plan).is_ok());
      ASSERT_EQ(ro.step, r.run.step);
      std::vector<double> m_diag(kSmallDim + 1);
      for (uint64_t j = 0; j <= kSmallDim; ++j) m_diag[j] = sampler::preconditioner_m(p, j);
      const std::vector<double> x = dense_svrg(*store, rows, *model, m_diag, ro.step, o.prior_var, o.epochs);
      double scale = 0, worst = 0;
      for (double v : x) scale = std::max(scale, std::abs(v));
      for (size_t j = 0; j < x.size(); ++j) {
        worst = std::max(worst, std::abs(r.mode[j] - x[j]) / scale);
        EXPECT_NEAR(r.mode[j], x[j], 1e-9 * scale) << mi.name << " " << pre << " coordinate " << j;
      }
      std::cout << mi.name << ", " << pre << " (step " << ro.step << "): largest |lazy - dense| / max |x| " << worst
                << std::endl;
    }
  }
}

// ---- Stopping, counting, diverging. ----

TEST(Optimize, CountsEveryRowItReadsAndStopsAtTheEpochLimit) {
  const SparseRows rows = small_rows(3, false);
  TempDir dir;
  auto store = make_store(dir.file("small.agld"), rows, kSmallDim, false);
  OptimizeOptions o;
  o.model = "linear";
  o.batch = kSmallBatch;
  o.epochs = 3;
  o.tol = 0;
  o.memory = uint64_t{512} << 20;
  KeepEpochs keep;
  OptimizeResult r;
  ASSERT_TRUE(optimize(*store, nullptr, o, keep, &r).is_ok());
  EXPECT_EQ(r.stop_reason, "epochs");
  ASSERT_EQ(r.epochs.size(), 4u);  // the start and three epochs
  const uint64_t n = rows.rows(), per_epoch = (n + kSmallBatch - 1) / kSmallBatch;
  // The preconditioner's setup (a sample, and a statistics pass: this store has none), four
  // full-gradient passes and three passes of minibatches.
  EXPECT_EQ(r.run.setup_rows, std::min<uint64_t>(n, 65536) + n);
  EXPECT_EQ(r.rows_read, r.run.setup_rows + 4 * n + 3 * per_epoch * kSmallBatch);
  EXPECT_DOUBLE_EQ(r.epochs.back().passes, static_cast<double>(r.rows_read) / static_cast<double>(n));
  EXPECT_EQ(r.grad_evals, 4 * n + 2 * 3 * per_epoch * kSmallBatch);
  for (size_t e = 1; e < r.epochs.size(); ++e) {
    EXPECT_EQ(r.epochs[e].epoch, e);
    EXPECT_LT(r.epochs[e].objective, r.epochs[0].objective);
  }
  EXPECT_FALSE(r.run.warnings.empty());  // the statistics pass is named
}

TEST(Optimize, ATooLargeStepIsAnErrorNamingTheEpoch) {
  const SparseRows rows = small_rows(3, false);
  TempDir dir;
  auto store = make_store(dir.file("small.agld"), rows, kSmallDim, false);
  OptimizeOptions o;
  o.model = "linear";
  o.precondition = "none";
  o.prior_var = 10;
  o.batch = 1;
  o.step = 0.5;
  o.memory = uint64_t{512} << 20;
  KeepEpochs keep;
  OptimizeResult r;
  Status st = optimize(*store, nullptr, o, keep, &r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("diverged in epoch 1"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("smaller --step"), std::string::npos) << st.message();
}

TEST(Optimize, BadOptionsAreErrorsBeforeAnyRead) {
  const SparseRows rows = small_rows(3, false);
  TempDir dir;
  auto store = make_store(dir.file("small.agld"), rows, kSmallDim, false);
  struct Case {
    OptimizeOptions o;
    std::string needle;
  };
  std::vector<Case> cases(5);
  cases[0].o.precondition = "jacobi", cases[0].needle = "unknown --precondition 'jacobi' (known: diag, none)";
  cases[1].o.access = "zz", cases[1].needle = "unknown --access 'zz'";
  cases[2].o.tol = -1, cases[2].needle = "--tol";
  cases[3].o.model = "logistic", cases[3].needle = "binary labels";  // the store holds real ones
  cases[4].o.memory = 1 << 20, cases[4].needle = "too small";
  for (size_t c = 0; c < cases.size(); ++c) {
    OptimizeOptions& o = cases[c].o;
    if (c != 3) o.model = "linear";
    if (c != 4) o.memory = uint64_t{512} << 20;
    ResolvedOptimize r;
    Status st = resolve_optimize(*store, nullptr, o, &r);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << c;
    EXPECT_NE(st.message().find(cases[c].needle), std::string::npos) << st.message();
  }
}

}  // namespace optimize_test
}  // namespace
}  // namespace agld::test
