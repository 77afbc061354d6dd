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

bool write_npy(const std::string& path, size_t rows, size_t cols, const std::vector<double>& data) {
  const std::string bytes = agld::encode_npy_f64(rows, cols, data);
  std::unique_ptr<agld::WritableFile> f;
  return agld::FileSystem::local().create_atomic(path, &f).is_ok() &&
         f->append(agld::ByteSpan(reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()))
             .is_ok() &&
         f->commit().is_ok();
}

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v.empty() ? NAN : v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))];
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// diag(A^-1) from the Cholesky factor of A = L L' (L lower, column-major, each column's
// diagonal first and its rows increasing, as SimplicialLLT stores it), by the Takahashi
// recurrence on L's pattern (see the top of the file).
Eigen::VectorXd selected_inverse_diagonal(const SpMat& l) {
  const Idx n = l.cols();
  const Idx* lp = l.outerIndexPtr();
  const Idx* li = l.innerIndexPtr();
  const double* lx = l.valuePtr();
  std::vector<double> zv(static_cast<size_t>(lp[n]));  // Z on L's pattern
  double* z = zv.data();
  std::vector<double> acc;
  for (Idx j = n - 1; j >= 0; --j) {
    const Idx first = lp[j] + 1, s = lp[j + 1] - first;  // S_j: rows li[first, first + s)
    acc.assign(static_cast<size_t>(s), 0.0);
    double* ac = acc.data();
    // acc = Z[S_j, S_j] * L[S_j, j], Z[S_j, S_j] read from the columns k of S_j: Z_kk and
    // Z_ik for the later i of S_j, which column k holds (S_j's rows after k are in S_k), in
    // the same increasing order: a merge that stops at S_j's last row. When column k holds
    // exactly S_j's later rows (so in the dense trailing block), the merge is a plain loop.
    for (Idx a = 0; a < s; ++a) {
      const Idx k = li[first + a];
      const double lkj = lx[first + a];
      ac[a] += z[lp[k]] * lkj;
      if (lp[k + 1] - lp[k] - 1 == s - a - 1) {
        const double* zk = z + lp[k] + 1;       // Z_ik for i = S_j[a + 1 ..]
        const double* lj = lx + first + a + 1;  // L_ij for the same i
        double sum = 0;
        for (Idx q = 0; q < s - a - 1; ++q) {
          ac[a + 1 + q] += zk[q] * lkj;
          sum += zk[q] * lj[q];
        }
        ac[a] += sum;
        continue;
      }
      Idx b = a + 1;
      for (Idx p = lp[k] + 1; p < lp[k + 1] && b < s; ++p) {
        if (li[p] != li[first + b]) continue;
        ac[b] += z[p] * lkj;
        ac[a] += z[p] * lx[first + b];
        ++b;
      }
    }
    const double ljj = lx[lp[j]];
    double dot = 0;
    for (Idx a = 0; a < s; ++a) {
      z[first + a] = -ac[a] / ljj;
      dot += lx[first + a] * z[first + a];
    }
    z[lp[j]] = (1 / ljj - dot) / ljj;
  }
  Eigen::VectorXd diag(n);
  for (Idx j = 0; j < n; ++j) diag(j) = z[lp[j]];
  return diag;
}

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
  std::vector<double> post, diag;
  bool has_diag = false;
  if (compare) {
    size_t rows = 0, cols = 0;
    if (!oracle::read_npy(dir + "/posterior.npy", &rows, &cols, &post) || rows != d || cols != 2) {
      std::fprintf(stderr, "%s/posterior.npy: not a (%zu, 2) table\n", dir.c_str(), d);
      return 65;
    }
    has_diag = oracle::read_npy(dir + "/diagnostics.npy", &rows, &cols, &diag) && rows == d && cols == 3;
  }

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
  const double accumulate_s = seconds_since(t_accumulate);

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
  const double order_s = seconds_since(t_order);
  const auto t_factor = std::chrono::steady_clock::now();
  llt.factorize(precision);
  const double factor_s = seconds_since(t_factor);
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
  const double solve_s = seconds_since(t_solve);
  const auto t_inverse = std::chrono::steady_clock::now();
  const Eigen::VectorXd permuted_var = selected_inverse_diagonal(l);
  Eigen::VectorXd sd(di);
  for (Idx j = 0; j < di; ++j) sd(j) = std::sqrt(permuted_var(llt.permutationP().indices()(j)));
  const double inverse_s = seconds_since(t_inverse);

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
  const double condition_s = seconds_since(t_condition);

  if (!out_path.empty()) {
    std::vector<double> table(2 * d);
    for (size_t j = 0; j < d; ++j) {
      table[2 * j] = mean(static_cast<Eigen::Index>(j));
      table[2 * j + 1] = sd(static_cast<Eigen::Index>(j));
    }
    if (!write_npy(out_path, d, 2, table)) {
      std::fprintf(stderr, "%s: cannot write\n", out_path.c_str());
      return 73;
    }
  }

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
                   {"seconds", seconds_since(t_test)}};
    if (!json) {
      std::printf(
          "test rows %llu: exact posterior predictive log-likelihood %.6f (plug-in at the mean %.6f; "
          "mean x' Sigma x %.4g; %.1f s)\n",
          static_cast<unsigned long long>(rows), ll_pred / n, ll_plugin / n, v_sum / n,
          seconds_since(t_test));
    }
  }

  if (compare) {
    std::vector<double> z(d), ratio(d), rhat;
    size_t within01 = 0, within05 = 0, on_target = 0, rhat_above = 0;
    for (size_t j = 0; j < d; ++j) {
      const auto e = static_cast<Eigen::Index>(j);
      z[j] = std::abs(post[2 * j] - mean(e)) / sd(e);
      ratio[j] = post[2 * j + 1] / sd(e);
      within01 += z[j] <= 0.1;
      within05 += z[j] <= 0.5;
      on_target += z[j] <= 0.1 && std::abs(ratio[j] - 1) <= 0.1;
      if (has_diag && std::isfinite(diag[3 * j])) {
        rhat.push_back(diag[3 * j]);
        rhat_above += diag[3 * j] > 1.01;
      }
    }
    const auto fraction = [d](size_t count) {
      return static_cast<double>(count) / static_cast<double>(d);
    };
    out["mean_error_sd"] = {
        {"median", quantile(z, 0.5)}, {"q90", quantile(z, 0.9)}, {"max", quantile(z, 1.0)}};
    out["within_0_1_sd"] = fraction(within01);
    out["within_0_5_sd"] = fraction(within05);
    out["within_target"] = fraction(on_target);
    out["sd_ratio"] = {{"q05", quantile(ratio, 0.05)},
                       {"median", quantile(ratio, 0.5)},
                       {"q95", quantile(ratio, 0.95)}};
    out["rhat"] = {{"max", rhat.empty() ? nlohmann::json() : nlohmann::json(quantile(rhat, 1.0))},
                   {"above_1_01", rhat_above}};
    if (!json) {
      std::printf(
          "mean error in exact sds: median %.3g, 90%% %.3g, max %.3g; within 0.1 sd %.1f%%, within "
          "0.5 sd %.1f%%\n",
          quantile(z, 0.5), quantile(z, 0.9), quantile(z, 1.0), 100 * fraction(within01),
          100 * fraction(within05));
      std::printf("sd ratio (run / exact): 5%% %.3g, median %.3g, 95%% %.3g\n",
                  quantile(ratio, 0.05), quantile(ratio, 0.5), quantile(ratio, 0.95));
      std::printf("within target (mean within 0.1 sd and sd within 10%%): %.1f%%\n",
                  100 * fraction(on_target));
      if (has_diag) {
        std::printf("the run's R-hat: max %.4g, %zu of %zu above 1.01\n",
                    rhat.empty() ? NAN : quantile(rhat, 1.0), rhat_above, rhat.size());
      }
    }
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return 0;
}
