// logistic_oracle STORE RUN_DIR|- [--intercept] [--prior-var V] [--draws N] [--warmup N]
//                 [--chains K] [--seed S] [--out FILE.npy] [--json]
//
// The posterior of Bayesian logistic regression (ALGORITHMS.md section 1: y in {-1, +1},
// theta ~ N(0, s2p I), with --intercept a constant feature appended as the last coordinate),
// computed exactly enough to check a run to 0.1 posterior sd on a million rows (issue #31,
// point 6), and the same comparison with a run's posterior.npy (and diagnostics.npy) as
// bench/sparse_oracle. RUN_DIR "-" only computes the posterior (--out writes it as a float64
// (d, 2) .npy of (mean, sd), like posterior.npy).
//
// Method. The rows are held in memory (CSR: 12 bytes a nonzero and 8 a row).
//  1. Newton to the mode: H = X' W X + I / s2p with W = diag(p_i (1 - p_i)) (Eigen's sparse
//     product), a sparse Cholesky in an AMD order (Eigen's SimplicialLLT; the pattern is
//     analysed once), the step -H^-1 g halved until the negative log posterior U falls by a
//     quarter of the linear prediction; until the Newton decrement g' H^-1 g < 1e-12 (the mode
//     within 1e-6 sd in H's norm).
//  2. Hamiltonian Monte Carlo with full gradients, its mass matrix H at the mode (p ~ N(0, H),
//     velocity H^-1 p: one pair of triangular solves with the factor a step): where the
//     posterior is the Laplace Gaussian N(mode, H^-1) the dynamics are a harmonic oscillator of
//     period 2 pi in every direction, so a trajectory of time pi/2 (jittered by +-25 %, so
//     that no direction stays periodic) gives a nearly independent draw; the Metropolis test on
//     the total energy makes it exact for the real posterior, whatever the Laplace error. The
//     leapfrog step is adapted during warm-up to an acceptance of 0.8 and then frozen. Chains
//     start at Laplace draws (so past warm-up at once when the posterior is near Gaussian) and
//     run on threads of their own.
//  3. Its own precision, so that a comparison can trust it: the pooled mean and sd of every
//     coordinate; each mean's Monte Carlo standard error from batch means (16 batches a chain,
//     the spread between chains included), reported in posterior sds (median, max); the split
//     R-hat of every coordinate (classic, from half-chain moments). It warns when the largest
//     MCSE exceeds 0.03 sd, too coarse for a 0.1 sd check (raise --draws).
//  4. The Laplace approximation's distance from it (the mode against the mean and sqrt of
//     diag(H^-1), by selected inversion, against the sd): how far from Gaussian the posterior
//     is, and so what a Gaussian oracle would have missed.
// Cost. A draw costs about pi/(2 eps) gradient passes over the rows and as many pairs of
// solves with the factor (eps near d^-1/4 at acceptance 0.8); the factor's fill is
// sparse_oracle's. The defaults (4 chains x 1,000 draws after 200 of warm-up) give about
// 4,000 nearly independent draws: MCSE about 0.016 sd.
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
#include <thread>
#include <vector>

#include "agld/store.hpp"
#include "oracle_common.hpp"
#include "selected_inverse.hpp"

namespace {

using Idx = std::int64_t;
using SpMat = Eigen::SparseMatrix<double, Eigen::ColMajor, Idx>;
using SpMatR = Eigen::SparseMatrix<double, Eigen::RowMajor, Idx>;
using Llt = Eigen::SimplicialLLT<SpMat, Eigen::Lower, Eigen::AMDOrdering<Idx>>;
using Eigen::VectorXd;

constexpr int kBatches = 16;             // batch means a chain, for the MCSE
constexpr double kTargetAccept = 0.8;    // the warm-up's target acceptance
constexpr double kMcseWarn = 0.03;       // in posterior sds
constexpr int kNewtonIterations = 100;
constexpr double kNewtonDecrement = 1e-12;

struct Problem {
  SpMatR x;               // n x d
  std::vector<double> y;  // +1 / -1
  double s2p = 1;
  Idx d() const { return x.cols(); }

  // U(theta) = sum_i log(1 + exp(-y_i x_i.theta)) + |theta|^2 / (2 s2p) (only with `value`:
  // a leapfrog step needs the gradient alone), and its gradient into *g; with w, each row's
  // p_i (1 - p_i) too. One exp a row, without overflow: e = exp(-|y m|).
  double value_and_gradient(const VectorXd& theta, VectorXd* g, VectorXd* w = nullptr, bool value = true) const {
    *g = theta / s2p;
    double u = theta.squaredNorm() / (2 * s2p);
    const Idx* ptr = x.outerIndexPtr();
    const Idx* idx = x.innerIndexPtr();
    const double* val = x.valuePtr();
    for (Idx i = 0; i < x.rows(); ++i) {
      double m = 0;
      for (Idx k = ptr[i]; k < ptr[i + 1]; ++k) m += val[k] * theta(idx[k]);
      const double yi = y[static_cast<size_t>(i)], ym = yi * m;
      const double e = std::exp(-std::abs(ym));
      if (value) u += std::max(-ym, 0.0) + std::log1p(e);  // log(1 + exp(-ym))
      const double r = -yi * (ym < 0 ? 1.0 : e) / (1 + e);  // -y sigmoid(-ym)
      for (Idx k = ptr[i]; k < ptr[i + 1]; ++k) (*g)(idx[k]) += r * val[k];
      if (w) (*w)(i) = e / ((1 + e) * (1 + e));  // sigmoid(m) sigmoid(-m)
    }
    return u;
  }

  // H = X' W X + I / s2p.
  SpMat hessian(const VectorXd& w) const {
    const SpMatR wx = w.asDiagonal() * x;
    SpMat h = SpMat(x.transpose()) * SpMat(wx);
    SpMat prior(d(), d());
    prior.setIdentity();
    h += prior / s2p;
    h.makeCompressed();
    return h;
  }
};

// The mass matrix H = L L' (in the factor's order P): draws of p ~ N(0, H) and velocities H^-1 p.
struct Mass {
  const Llt* llt;
  const SpMat* l;  // lower, column-major: the factor of P H P'
  // p = P^-1 L z.
  void draw(std::mt19937_64& rng, VectorXd* z, VectorXd* lz, VectorXd* p) const {
    std::normal_distribution<double> normal;
    for (Idx j = 0; j < z->size(); ++j) (*z)(j) = normal(rng);
    lz->setZero();
    const Idx* lp = l->outerIndexPtr();
    const Idx* li = l->innerIndexPtr();
    const double* lx = l->valuePtr();
    for (Idx k = 0; k < l->cols(); ++k) {
      for (Idx q = lp[k]; q < lp[k + 1]; ++q) (*lz)(li[q]) += lx[q] * (*z)(k);
    }
    *p = llt->permutationPinv() * *lz;
  }
  VectorXd velocity(const VectorXd& p) const { return llt->solve(p); }
};

// One chain's moments: sums of theta - mode a batch (kBatches of them, the kept draws split
// as evenly as they go) and of its squares a half (for the split R-hat).
struct ChainMoments {
  std::vector<VectorXd> batch_sum;   // kBatches x d
  std::vector<long> batch_draws;     // kBatches
  VectorXd half_sum[2], half_sq[2];  // the two halves
  long half_draws[2] = {0, 0};
  double accepted = 0;
  double step = 0;
  long gradient_passes = 0;
};

struct ChainSpec {
  int warmup = 200, draws = 1000;
  uint64_t seed = 1;
};

void run_chain(const Problem& prob, const Mass& mass, const VectorXd& mode, const ChainSpec& spec, ChainMoments* out) {
  const Idx d = prob.d();
  std::mt19937_64 rng(spec.seed);
  std::uniform_real_distribution<double> uniform(0, 1);
  VectorXd z(d), lz(d), p(d), g(d), g_new(d), theta_new(d);
  // A Laplace draw: mode + H^-1 p with p ~ N(0, H).
  mass.draw(rng, &z, &lz, &p);
  VectorXd theta = mode + mass.velocity(p);
  double u = prob.value_and_gradient(theta, &g);
  double log_step = std::log(std::min(0.5, 1.5 * std::pow(static_cast<double>(d), -0.25)));
  const long kept = spec.draws;
  out->batch_sum.assign(kBatches, VectorXd::Zero(d));
  out->batch_draws.assign(kBatches, 0);
  for (auto& h : out->half_sum) h = VectorXd::Zero(d);
  for (auto& h : out->half_sq) h = VectorXd::Zero(d);
  for (long it = 0; it < spec.warmup + kept; ++it) {
    const double eps = std::exp(log_step);
    const double time = std::numbers::pi / 2 * (0.75 + 0.5 * uniform(rng));
    const long steps = std::max<long>(1, std::lround(std::ceil(time / eps)));
    mass.draw(rng, &z, &lz, &p);
    const double k0 = 0.5 * z.squaredNorm();  // p' H^-1 p = |z|^2 for p = P^-1 L z: no solve
    theta_new = theta;
    g_new = g;
    double u_new = u;
    VectorXd q = p - 0.5 * eps * g;
    for (long s = 1; s <= steps; ++s) {
      theta_new += eps * mass.velocity(q);
      u_new = prob.value_and_gradient(theta_new, &g_new, nullptr, s == steps);
      q -= (s < steps ? eps : 0.5 * eps) * g_new;
    }
    out->gradient_passes += steps;
    const double k1 = 0.5 * q.dot(mass.velocity(q));
    const double log_accept = (u + k0) - (u_new + k1);
    const double accept = std::isfinite(log_accept) ? std::min(1.0, std::exp(log_accept)) : 0.0;
    if (uniform(rng) < accept) {
      theta.swap(theta_new);
      g.swap(g_new);
      u = u_new;
    }
    if (it < spec.warmup) {
      // Robbins-Monro on log eps, its gain decaying: frozen once the kept draws begin.
      log_step += (accept - kTargetAccept) / std::pow(static_cast<double>(it) + 10, 0.6);
      continue;
    }
    const long k = it - spec.warmup;
    out->accepted += accept;
    const VectorXd c = theta - mode;
    const auto batch = static_cast<size_t>(k * kBatches / kept);
    out->batch_sum[batch] += c;
    ++out->batch_draws[batch];
    const int half = k < kept / 2 ? 0 : 1;
    ++out->half_draws[half];
    out->half_sum[half] += c;
    out->half_sq[half] += c.cwiseProduct(c);
  }
  out->accepted /= static_cast<double>(kept);
  out->step = std::exp(log_step);
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "usage: logistic_oracle STORE RUN_DIR|- [--intercept] [--prior-var V] [--draws N] [--warmup N] [--chains K] "
      "[--seed S] [--out FILE.npy] [--json]\n";
  if (argc < 3) {
    std::fprintf(stderr, "%s", usage);
    return 64;
  }
  bool intercept = false, json = false;
  double s2p = 1;
  int chains = 4;
  ChainSpec spec;
  uint64_t seed = 1;
  std::string out_path;
  for (int i = 3; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (!std::strcmp(argv[i], "--intercept")) {
      intercept = true;
    } else if (!std::strcmp(argv[i], "--json")) {
      json = true;
    } else if (!std::strcmp(argv[i], "--prior-var") && has_value) {
      s2p = std::atof(argv[++i]);
    } else if (!std::strcmp(argv[i], "--draws") && has_value) {
      spec.draws = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--warmup") && has_value) {
      spec.warmup = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--chains") && has_value) {
      chains = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--seed") && has_value) {
      seed = std::strtoull(argv[++i], nullptr, 10);
    } else if (!std::strcmp(argv[i], "--out") && has_value) {
      out_path = argv[++i];
    } else {
      std::fprintf(stderr, "unknown argument %s\n%s", argv[i], usage);
      return 64;
    }
  }
  if (!(s2p > 0) || spec.draws < kBatches || spec.warmup < 0 || chains < 2) {
    std::fprintf(stderr, "need --prior-var > 0, --draws >= %d, --warmup >= 0 and --chains >= 2\n", kBatches);
    return 64;
  }
  std::unique_ptr<agld::Store> store;
  agld::Status st = agld::Store::open(argv[1], &store);
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 66;
  }
  if (store->meta().label_kind != agld::LabelKind::kBinary) {
    std::fprintf(stderr, "%s: the labels are not binary\n", argv[1]);
    return 65;
  }
  const size_t d = store->meta().features + (intercept ? 1 : 0);
  const auto di = static_cast<Idx>(d);
  const std::string dir = argv[2];
  const bool compare = dir != "-";
  oracle::RunPosterior run;
  if (compare && !oracle::read_run(dir, d, &run)) return 65;

  // The rows, in memory.
  const auto t_load = std::chrono::steady_clock::now();
  Problem prob;
  prob.s2p = s2p;
  std::vector<Idx> ptr{0}, idx;
  std::vector<double> val;
  st = oracle::for_each_row(*store, intercept, [&](std::span<const uint32_t> ri, std::span<const double> rv, double y) {
    idx.insert(idx.end(), ri.begin(), ri.end());
    val.insert(val.end(), rv.begin(), rv.end());
    ptr.push_back(static_cast<Idx>(idx.size()));
    prob.y.push_back(y > 0 ? 1.0 : -1.0);
  });
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.to_string().c_str());
    return 65;
  }
  const auto n = static_cast<Idx>(prob.y.size());
  prob.x = Eigen::Map<const SpMatR>(n, di, static_cast<Idx>(idx.size()), ptr.data(), idx.data(), val.data());
  std::vector<Idx>().swap(idx);
  std::vector<double>().swap(val);
  const double load_s = oracle::seconds_since(t_load);

  // 1. Newton to the mode.
  const auto t_newton = std::chrono::steady_clock::now();
  VectorXd theta = VectorXd::Zero(di), g(di), w(n), g_trial(di);
  Llt llt;
  double u = prob.value_and_gradient(theta, &g, &w);
  int newton = 0;
  double decrement = INFINITY;
  for (; newton < kNewtonIterations; ++newton) {
    const SpMat h = prob.hessian(w);
    if (newton == 0) llt.analyzePattern(h);
    llt.factorize(h);
    if (llt.info() != Eigen::Success) {
      std::fprintf(stderr, "the Hessian is not positive definite\n");
      return 70;
    }
    const VectorXd step = -llt.solve(g);
    decrement = -g.dot(step);
    if (decrement < kNewtonDecrement) break;
    double t = 1;
    VectorXd trial;
    double u_trial = INFINITY;
    for (int halvings = 0; halvings < 60; ++halvings, t /= 2) {
      trial = theta + t * step;
      u_trial = prob.value_and_gradient(trial, &g_trial, &w);
      if (u_trial <= u - 0.25 * t * decrement) break;
    }
    theta = trial;
    g = g_trial;
    u = u_trial;
  }
  if (!(decrement < kNewtonDecrement)) {
    std::fprintf(stderr, "Newton did not converge in %d iterations (decrement %.3g)\n", kNewtonIterations, decrement);
    return 70;
  }
  const VectorXd mode = theta;
  const SpMat& l = llt.matrixL().nestedExpression();
  const double newton_s = oracle::seconds_since(t_newton);
  // The Laplace sds: sqrt(diag(H^-1)), in the factor's order P.
  const VectorXd permuted_var = oracle::selected_inverse_diagonal(l);
  VectorXd laplace_sd(di);
  for (Idx j = 0; j < di; ++j) laplace_sd(j) = std::sqrt(permuted_var(llt.permutationP().indices()(j)));

  // 2. HMC, a thread a chain.
  const auto t_sample = std::chrono::steady_clock::now();
  const Mass mass{&llt, &l};
  std::vector<ChainMoments> moments(static_cast<size_t>(chains));
  {
    std::vector<std::thread> threads;
    for (int c = 0; c < chains; ++c) {
      ChainSpec cs = spec;
      cs.seed = seed * 1000003 + static_cast<uint64_t>(c);
      threads.emplace_back(run_chain, std::cref(prob), std::cref(mass), std::cref(mode), cs, &moments[static_cast<size_t>(c)]);
    }
    for (auto& t : threads) t.join();
  }
  const double sample_s = oracle::seconds_since(t_sample);

  // 3. Pooled moments, MCSE from batch means, classic split R-hat.
  const double total = static_cast<double>(spec.draws) * chains;
  VectorXd mean = VectorXd::Zero(di), sq = VectorXd::Zero(di);
  for (const auto& m : moments) {
    for (int h = 0; h < 2; ++h) {
      mean += m.half_sum[h];
      sq += m.half_sq[h];
    }
  }
  mean /= total;
  VectorXd sd = (sq / total - mean.cwiseProduct(mean)).cwiseMax(0).cwiseSqrt() * std::sqrt(total / (total - 1));
  std::vector<double> mcse_sd(d), rhat(d);
  for (Idx j = 0; j < di; ++j) {
    double between = 0;  // batch means around the pooled mean
    for (const auto& m : moments) {
      for (int b = 0; b < kBatches; ++b) {
        between += std::pow(m.batch_sum[static_cast<size_t>(b)](j) / static_cast<double>(m.batch_draws[static_cast<size_t>(b)]) - mean(j), 2);
      }
    }
    const double batches = static_cast<double>(kBatches) * chains;
    mcse_sd[static_cast<size_t>(j)] = std::sqrt(between / (batches - 1) / batches) / sd(j);
    // Split R-hat over the 2K halves (Gelman et al.): W the mean within-half variance, B/n
    // the variance of the half means.
    double w_sum = 0, hm_sum = 0, hm_sq = 0;
    for (const auto& m : moments) {
      for (int h = 0; h < 2; ++h) {
        const auto half = static_cast<double>(m.half_draws[h]);
        const double hm = m.half_sum[h](j) / half;
        w_sum += (m.half_sq[h](j) - half * hm * hm) / (half - 1);
        hm_sum += hm;
        hm_sq += hm * hm;
      }
    }
    const double halves = 2.0 * chains;
    const double w_mean = w_sum / halves;
    const double b_over_n = (hm_sq - hm_sum * hm_sum / halves) / (halves - 1);
    const double half = static_cast<double>(spec.draws / 2);  // the first half's length
    rhat[static_cast<size_t>(j)] = std::sqrt(((half - 1) / half * w_mean + b_over_n) / w_mean);
  }
  mean += mode;
  double accept = 0, step = 0;
  long passes = 0;
  for (const auto& m : moments) {
    accept += m.accepted / chains;
    step += m.step / chains;
    passes += m.gradient_passes;
  }

  // 4. The Laplace approximation against it.
  std::vector<double> laplace_mean_error(d), laplace_sd_ratio(d);
  for (Idx j = 0; j < di; ++j) {
    laplace_mean_error[static_cast<size_t>(j)] = std::abs(mode(j) - mean(j)) / sd(j);
    laplace_sd_ratio[static_cast<size_t>(j)] = laplace_sd(j) / sd(j);
  }

  if (!out_path.empty() && !oracle::write_posterior(out_path, mean, sd)) return 73;
  using oracle::quantile;
  const double mcse_max = quantile(mcse_sd, 1.0);
  nlohmann::json out = {
      {"coordinates", d},
      {"rows", n},
      {"nnz_L", l.nonZeros()},
      {"newton_iterations", newton},
      {"oracle",
       {{"chains", chains},
        {"draws_per_chain", spec.draws},
        {"warmup", spec.warmup},
        {"step", step},
        {"acceptance", accept},
        {"gradient_passes", passes},
        {"mcse_sd", {{"median", quantile(mcse_sd, 0.5)}, {"max", mcse_max}}},
        {"rhat_max", quantile(rhat, 1.0)},
        {"precise_enough", mcse_max <= kMcseWarn}}},
      {"laplace",
       {{"mean_error_sd", {{"median", quantile(laplace_mean_error, 0.5)}, {"max", quantile(laplace_mean_error, 1.0)}}},
        {"sd_ratio",
         {{"min", quantile(laplace_sd_ratio, 0.0)},
          {"median", quantile(laplace_sd_ratio, 0.5)},
          {"max", quantile(laplace_sd_ratio, 1.0)}}}}},
      {"seconds", {{"load", load_s}, {"newton", newton_s}, {"sample", sample_s}}}};
  if (!json) {
    std::printf("%zu coordinates, %lld rows; nnz(L) %lld; Newton %d iterations\n", d, static_cast<long long>(n),
                static_cast<long long>(l.nonZeros()), newton);
    std::printf("seconds: load %.2f, Newton %.2f, sampling %.2f\n", load_s, newton_s, sample_s);
    std::printf(
        "oracle: %d chains x %ld draws, step %.3g, acceptance %.3f, %ld gradient passes; MCSE of the means in sds: "
        "median %.3g, max %.3g; split R-hat max %.4f\n",
        chains, static_cast<long>(spec.draws), step, accept, passes, quantile(mcse_sd, 0.5), mcse_max,
        quantile(rhat, 1.0));
    std::printf("Laplace against it: mode error in sds median %.3g, max %.3g; sd ratio %.3g .. %.3g\n",
                quantile(laplace_mean_error, 0.5), quantile(laplace_mean_error, 1.0), quantile(laplace_sd_ratio, 0.0),
                quantile(laplace_sd_ratio, 1.0));
  }
  if (mcse_max > kMcseWarn) {
    std::fprintf(stderr, "logistic_oracle: warning: the largest MCSE is %.3g sd, above %.2g: raise --draws for a 0.1 sd check\n",
                 mcse_max, kMcseWarn);
  }
  if (compare) {
    oracle::compare(run, mean, sd, &out, json);
  }
  if (json) std::printf("%s\n", out.dump().c_str());
  return 0;
}
