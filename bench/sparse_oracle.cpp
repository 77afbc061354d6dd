// sparse_oracle STORE RUN_DIR|- [--intercept] [--prior-var V] [--noise-var V]
//               [--out FILE.npy] [--test TEST_STORE] [--json]
//
// The exact posterior of the Bayesian linear model (ALGORITHMS.md section 1) at scale (issue
// #15's oracle): linear_oracle's sparse twin, with the same command line and the same
// comparison with a run's posterior.npy (and diagnostics.npy).
// RUN_DIR "-" only computes the exact posterior (with --out, to write it); --out writes the
// exact posterior as a float64 (d, 2) .npy of (mean, sd), like posterior.npy.
//
// Method. The model is y = x.theta + N(0, s2), theta ~ N(0, s2p I), and with --intercept a
// constant feature 1 appended as the last coordinate. The posterior is Gaussian with precision
// P = X'X / s2 + I / s2p and mean P^-1 X'y / s2.
//  1. Accumulation, one streamed pass: each row adds the lower triangle of x x' as triplets;
//     whenever kTripletBuffer of them are pending they are summed into a sparse matrix and
//     added to the running X'X, so memory is O(nnz(X'X) + kTripletBuffer), never the rows.
//  2. A sparse Cholesky P_perm = L L' (Eigen's SimplicialLLT: P is positive definite thanks to
//     the prior, even when one-hot blocks are collinear with the intercept) in an AMD
//     fill-reducing order. AMD sets dense nodes (degree > 10 sqrt(d): the intercept, numeric
//     columns, the commonest levels) aside and orders them last, where they cost one dense row
//     of L each and no fill elsewhere. (LLT rather than LDLT: P is positive definite, and the
//     recurrence below reads L's diagonal directly.)
//  3. The mean by triangular solves and one step of iterative refinement; the marginal sds
//     sqrt(diag(P^-1)) by the Takahashi recurrence (selected inversion): Z = P_perm^-1 is
//     computed only on the pattern of L, column by column from the last, with
//         Z_ij = -(1 / L_jj) sum_{k in S_j} L_kj Z_ki   (i in S_j, the rows below j in L's column),
//         Z_jj = 1 / L_jj^2 - (1 / L_jj) sum_{k in S_j} L_kj Z_kj,
//     which needs Z only at pairs of S_j, all within L's pattern (S_j's rows after k are in
//     S_k for k in S_j). Cost about that of the factorization (sum over columns of |S_j|^2
//     flops), memory nnz(L) doubles; d dense solves would cost d nnz(L).
//  4. The condition number, estimated by Rayleigh quotients of a few power iterations on P
//     (largest eigenvalue) and inverse-power iterations with the factor (smallest): each
//     estimate is on the inside, so their ratio is a lower bound, close after convergence.
// Cost. The fill, not d, sets it. Eliminating the levels of one one-hot block couples the
// levels of every other block that share its rows, so with several large blocks the trailing
// part of L is a nearly dense block about the size m of the second-largest block: nnz(L) about
// m^2 / 2, factor and selected inversion about m^3 / 3 flops each (Eigen's simplicial code, no
// BLAS: ~2 GFlop/s). bench/onehot_linear.py at 1M rows (11,365 coordinates, blocks up to 3,000
// and 8,000 levels): nnz(X'X) 0.9M, nnz(L) 4.6M, 81 % of it in the last 3,000 columns; 12 s
// and 0.3 GB in all (linear_oracle, dense, on the same store: 700 s and 3.4 GB, and the two
// agree to 1.7e-9 sd in means and 3e-13 in sds). Two blocks of 30k levels would make that
// 450M entries (3.6 GB) and about an hour for each step: a supernodal factorization (CHOLMOD,
// with BLAS) would then be the tool.
// Prints the coordinates, nnz(X'X) and nnz(L), the time of each step, and how far the run is
// from the exact posterior: mean error in exact sds (median, 90 %, max), the fraction within
// 0.1 and 0.5 sd, the sd ratio run / exact (5 %, median, 95 %), issue #15's target (the
// fraction of coordinates whose mean is within 0.1 exact sd AND whose sd is within 10 %:
// within_target) and the run's R-hat; --json for one JSON object. bench/oracle_check.sh checks
// it against linear_oracle's dense Cholesky; bench/onehot_linear.py makes data at scale.
// --test TEST_STORE: the exact posterior predictive on held-out rows, in the units of `agld
// sample --model linear`'s test_loglik (the mean over the rows of log p(y | x, data)):
// p(y | x, data) = N(y; x.mean, s2 + v) with v = x' P^-1 x = |L^-1 (perm x)|^2, one sparse
// forward solve a row (its cost is the reach of the row in L: the dense trailing block, which
// the intercept and the numeric columns always reach). Also the plug-in figure, log N(y;
// x.mean, s2), and the mean of v.
#include <Eigen/Dense>
#include <Eigen/OrderingMethods>
#include <Eigen/SparseCholesky>
#include <Eigen/SparseCore>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <numbers>
#include <random>
#include <string>
#include <vector>

#include "agld/run_output.hpp"
#include "agld/store.hpp"
#include "oracle_common.hpp"
#include "selected_inverse.hpp"

namespace {

// 64-bit indices: nnz(L) passes 2^31 long before memory runs out on a large machine.
using Idx = std::int64_t;
using SpMat = Eigen::SparseMatrix<double, Eigen::ColMajor, Idx>;
using Triplet = Eigen::Triplet<double, Idx>;

// Triplets pending before they are summed into X'X (24 bytes each: 96 MiB).
constexpr size_t kTripletBuffer = size_t{1} << 22;
// Power and inverse-power iterations of the condition number estimate: at most this many,
// stopping when the Rayleigh quotient moves by less than kConditionTolerance (relative).
constexpr int kConditionIterations = 50;
constexpr double kConditionTolerance = 1e-4;

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: sparse_oracle STORE RUN_DIR|- [--intercept] [--prior-var V] [--noise-var V] [--out "
      "FILE.npy] [--test TEST_STORE] [--json]\n";
  if (argc < 3) {
    std::fprintf(stderr, "%s", usage);
    return 64;
  }
  bool intercept = false, json = false;
  double s2p = 1, s2 = 1;
  std::string out_path, test_path;
  for (int i = 3; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--intercept"))
      intercept = true;
    else if (!std::strcmp(argv[i], "--json"))
      json = true;
    else if (!std::strcmp(argv[i], "--prior-var") && i + 1 < argc)
      s2p = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--noise-var") && i + 1 < argc)
      s2 = std::atof(argv[++i]);
    else if (!std::strcmp(argv[i], "--out") && i + 1 < argc)
      out_path = argv[++i];
    else if (!std::strcmp(argv[i], "--test") && i + 1 < argc)
      test_path = argv[++i];
    else {
      std::fprintf(stderr, "unknown argument %s\n%s", argv[i], usage);
      return 64;
    }
  }
  if (!(s2p > 0) || !(s2 > 0)) {
    std::fprintf(stderr, "the prior and noise variances must be positive\n");
    return 64;
  }
  std::unique_ptr<agld::Store> store;
  agld::Status st = agld::Store::open(argv[1], &store);
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 66;
  }
  const size_t d = store->meta().features + (intercept ? 1 : 0);
  const uint64_t n_rows = store->meta().rows;
  const auto di = static_cast<Idx>(d);
  // The run, read first so that a wrong one fails before the long part.
  const std::string dir = argv[2];
  const bool compare = dir != "-";
  oracle::RunPosterior run;
  if (compare && !oracle::read_run(dir, d, &run)) return 65;

  // 1. X'X (lower triangle) and X'y in one pass.
  const auto t_accumulate = std::chrono::steady_clock::now();
  SpMat xtx(di, di);
  Eigen::VectorXd xty = Eigen::VectorXd::Zero(di);
  std::vector<Triplet> triplets;
  triplets.reserve(kTripletBuffer);
  const auto flush = [&] {
    SpMat part(di, di);
    part.setFromTriplets(triplets.begin(), triplets.end());  // sums duplicates
    xtx += part;
    triplets.clear();
  };
  st = oracle::for_each_row(*store, intercept, [&](std::span<const uint32_t> idx, std::span<const double> val, double y) {
    // Every ordered pair (a, c) in the lower triangle: an index repeated within a row adds
    // what the dense sum would.
    for (size_t a = 0; a < idx.size(); ++a) {
      xty(idx[a]) += val[a] * y;
      for (size_t c = 0; c < idx.size(); ++c) {
        if (idx[a] >= idx[c]) triplets.emplace_back(Idx{idx[a]}, Idx{idx[c]}, val[a] * val[c]);
      }
    }
    if (triplets.size() >= kTripletBuffer) flush();
  });
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 65;
  }
  flush();
  const double accumulate_s = oracle::seconds_since(t_accumulate);

  // 2. P = X'X / s2 + I / s2p, ordered and factored.
  SpMat precision = xtx / s2;
  xtx = SpMat();
  {
    SpMat identity(di, di);
    identity.setIdentity();
    precision += identity / s2p;
  }
  precision.makeCompressed();
  const auto t_order = std::chrono::steady_clock::now();
  Eigen::SimplicialLLT<SpMat, Eigen::Lower, Eigen::AMDOrdering<Idx>> llt;
  llt.analyzePattern(precision);
  const double order_s = oracle::seconds_since(t_order);
  const auto t_factor = std::chrono::steady_clock::now();
  llt.factorize(precision);
  const double factor_s = oracle::seconds_since(t_factor);
  if (llt.info() != Eigen::Success) {
    std::fprintf(stderr, "the precision is not positive definite\n");
    return 70;
  }
  const SpMat& l = llt.matrixL().nestedExpression();

  // 3. The mean, and the sds from the selected inverse (in the factor's order: coordinate j
  // is the factor's P.indices()(j), since the factor is of P A P').
  const auto t_solve = std::chrono::steady_clock::now();
  // With one step of iterative refinement: the directions that only the prior bounds (one-hot
  // blocks, collinear) put the condition number near 1e6, and at 1M rows of
  // bench/onehot_linear.py the direct solution was 1.4e-8 sd from linear_oracle's at worst;
  // refined, 1.7e-9.
  Eigen::VectorXd mean = llt.solve(xty / s2);
  mean += llt.solve(xty / s2 - precision.selfadjointView<Eigen::Lower>() * mean);
  const double solve_s = oracle::seconds_since(t_solve);
  const auto t_inverse = std::chrono::steady_clock::now();
  const Eigen::VectorXd permuted_var = oracle::selected_inverse_diagonal(l);
  Eigen::VectorXd sd(di);
  for (Idx j = 0; j < di; ++j) sd(j) = std::sqrt(permuted_var(llt.permutationP().indices()(j)));
  const double inverse_s = oracle::seconds_since(t_inverse);

  // 4. The condition number estimate, from a pseudo-random start (a constant vector can be
  // orthogonal to the directions that the prior alone bounds).
  const auto t_condition = std::chrono::steady_clock::now();
  std::mt19937_64 rng(15);
  std::uniform_real_distribution<double> uniform(-1, 1);
  Eigen::VectorXd start(di);
  for (Idx j = 0; j < di; ++j) start(j) = uniform(rng);
  start.normalize();
  int power_iterations = 0, inverse_iterations = 0;
  double lambda_max = 0, lambda_min = 0;
  {
    Eigen::VectorXd v = start;
    for (double previous = 0; power_iterations < kConditionIterations; previous = lambda_max) {
      const Eigen::VectorXd w = precision.selfadjointView<Eigen::Lower>() * v;
      lambda_max = v.dot(w);
      v = w.normalized();
      ++power_iterations;
      if (std::abs(lambda_max - previous) <= kConditionTolerance * lambda_max) break;
    }
  }
  {
    Eigen::VectorXd v = start;
    double inverse_max = 0;  // the largest eigenvalue of P^-1
    for (double previous = 0; inverse_iterations < kConditionIterations; previous = inverse_max) {
      const Eigen::VectorXd w = llt.solve(v);
      inverse_max = v.dot(w);
      v = w.normalized();
      ++inverse_iterations;
      if (std::abs(inverse_max - previous) <= kConditionTolerance * inverse_max) break;
    }
    lambda_min = 1 / inverse_max;
  }
  const double kappa = lambda_max / lambda_min;
  const double condition_s = oracle::seconds_since(t_condition);

  if (!out_path.empty() && !oracle::write_posterior(out_path, mean, sd)) return 73;

  nlohmann::json out = {{"coordinates", d},
                        {"rows", n_rows},
                        {"nnz_precision_lower", precision.nonZeros()},
                        {"nnz_L", l.nonZeros()},
                        {"ordering", "AMD"},
                        {"condition_number", kappa},
                        {"condition_iterations",
                         {{"power", power_iterations}, {"inverse_power", inverse_iterations}}},
                        {"seconds",
                         {{"accumulate", accumulate_s},
                          {"order", order_s},
                          {"factorize", factor_s},
                          {"solve", solve_s},
                          {"selected_inversion", inverse_s},
                          {"condition", condition_s}}}};
  if (!json) {
    std::printf("%zu coordinates, %llu rows; nnz(X'X, lower) %lld, nnz(L) %lld (AMD order)\n", d,
                static_cast<unsigned long long>(n_rows),
                static_cast<long long>(precision.nonZeros()), static_cast<long long>(l.nonZeros()));
    std::printf(
        "seconds: accumulate %.2f, order %.2f, factorize %.2f, solve %.2f, selected inversion "
        "%.2f, condition %.2f\n",
        accumulate_s, order_s, factor_s, solve_s, inverse_s, condition_s);
    std::printf(
        "condition number >= %.3g (Rayleigh quotients after %d power and %d inverse-power "
        "iterations)\n",
        kappa, power_iterations, inverse_iterations);
  }

  if (!test_path.empty()) {
    std::unique_ptr<agld::Store> test;
    st = agld::Store::open(test_path, &test);
    if (!st.is_ok() || test->meta().features > store->meta().features) {
      std::fprintf(stderr, "%s: %s\n", test_path.c_str(),
                   st.is_ok() ? "more features than the training store" : st.to_string().c_str());
      return 65;
    }
    const auto t_test = std::chrono::steady_clock::now();
    const Idx* lp = l.outerIndexPtr();
    const Idx* li = l.innerIndexPtr();
    const double* lx = l.valuePtr();
    const auto& perm = llt.permutationP().indices();
    std::vector<double> b(d, 0.0);
    double ll_pred = 0, ll_plugin = 0, v_sum = 0;
    uint64_t rows = 0;
    const double log_2pi = std::log(2 * std::numbers::pi);
    st = oracle::for_each_row(*test, intercept, [&](std::span<const uint32_t> idx, std::span<const double> val, double y) {
      double m = 0;
      Idx lo = di;
      for (size_t a = 0; a < idx.size(); ++a) {
        // The intercept's index is the test store's feature count: the training store's here.
        const Idx j = intercept && a + 1 == idx.size() ? di - 1 : Idx{idx[a]};
        m += val[a] * mean(j);
        const Idx k = perm(j);
        b[static_cast<size_t>(k)] += val[a];
        lo = std::min(lo, k);
      }
      double v = 0;  // |L^-1 b|^2, b zeroed again on the way
      for (Idx k = lo; k < di; ++k) {
        double& bk = b[static_cast<size_t>(k)];
        if (bk == 0) continue;
        bk /= lx[lp[k]];
        for (Idx p = lp[k] + 1; p < lp[k + 1]; ++p) b[static_cast<size_t>(li[p])] -= lx[p] * bk;
        v += bk * bk;
        bk = 0;
      }
      const double r2 = (y - m) * (y - m);
      ll_pred += -0.5 * (log_2pi + std::log(s2 + v)) - r2 / (2 * (s2 + v));
      ll_plugin += -0.5 * (log_2pi + std::log(s2)) - r2 / (2 * s2);
      v_sum += v;
      ++rows;
    });
    if (!st.is_ok()) {
      std::fprintf(stderr, "%s\n", st.to_string().c_str());
      return 65;
    }
    const double n = static_cast<double>(rows);
    out["test"] = {{"rows", rows},
                   {"loglik_predictive", ll_pred / n},
                   {"loglik_plugin", ll_plugin / n},
                   {"mean_predictive_variance_excess", v_sum / n},
                   {"seconds", oracle::seconds_since(t_test)}};
    if (!json) {
      std::printf(
          "test rows %llu: exact posterior predictive log-likelihood %.6f (plug-in at the mean %.6f; "
          "mean x' Sigma x %.4g; %.1f s)\n",
          static_cast<unsigned long long>(rows), ll_pred / n, ll_plugin / n, v_sum / n,
          oracle::seconds_since(t_test));
    }
  }

  if (compare) {
    oracle::compare(run, mean, sd, &out, json);
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return 0;
}
