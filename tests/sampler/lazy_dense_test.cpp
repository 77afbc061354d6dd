// Lazy sparse updates against the dense path (every coordinate stepped every iteration)
// on a sparse problem: the two simulate the same chain, so the draws' law agrees within
// Monte Carlo error. With the diagonal preconditioner the coordinates step at several
// levels, each with its own jumps.
//
// Two regimes. At a small step the draws are close to Gaussian and the means and sds are
// compared, with the sd's error from the effective sample size (sd / sqrt(2 ESS), which
// assumes a kurtosis of 3). At a large step that holds no more: near the edge of the
// variance-reduced estimates' stability single rows kick the state far out now and then
// (kurtoses of 10^2 to 10^4 were seen), the sample sd is ruled by a few excursions, and two
// runs of the same path differ by dozens of those "standard errors". There the test
// compares the distribution functions at the dense draws' 10/50/90 % quantiles instead:
// means of bounded indicators, whose batch-means error is honest whatever the tails. A
// naive reference (a plain loop over every coordinate, the specification's update, its own
// random numbers) checks the dense path itself.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>
#include <random>
#include <string>

#include "literal_dynamics.hpp"
#include "sampler/dynamics.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace lazy_dense_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 30;
constexpr uint64_t kBatch = 10;

// Rows with 2 of 30 features each: most coordinates sit untouched for many iterations.
// scale > 0 shrinks the values: the one drawn is scale times N(0, 1) clipped to +-bound, the
// other is scale (the labels as for scale 1): the large step's rows, below.
SparseRows sparse_rows(uint64_t seed, double scale = 1, double bound = 1e300) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> feature(0, kDim - 1);
  SparseRows rows;
  for (int r = 0; r < 300; ++r) {
    uint32_t a = feature(rng), b = feature(rng);
    while (b == a) b = feature(rng);
    if (a > b) std::swap(a, b);
    const double u = std::clamp(n01(rng), -bound, bound);
    const float va = static_cast<float>(scale * u), vb = static_cast<float>(scale);
    const double y = 0.8 * static_cast<float>(u) - 0.5 + (a % 3 == 0 ? 1.0 : 0.0) + n01(rng);
    rows.add_row(y, std::vector<uint32_t>{a, b}, std::vector<float>{va, vb});
  }
  return rows;
}

using Draws = std::vector<std::vector<double>>;

// The draws of every coordinate (4 chains, kept in turn) of one run.
Draws run_engine(const Store& store, const std::string& method, const std::string& precondition, double step,
                 uint64_t iterations, uint64_t seed, bool dense, double friction = 0, uint32_t tracked = kDim,
                 const std::string& noise_correction = "auto") {
  SampleOptions o;
  o.model = "linear";
  o.method = method;
  o.precondition = precondition;
  o.seed = seed;
  o.batch = kBatch;
  if (step > 0) o.step = step;  // else diag's default step
  if (friction > 0) o.friction = friction;
  o.chains = 4;
  o.iterations = iterations;
  o.burn_in = iterations / 10;
  o.thin = 4;
  o.evaluations = 0;
  o.memory = uint64_t{512} << 20;
  o.dense = dense;
  o.noise_correction = noise_correction;
  o.track_default = false;
  for (uint32_t j = 0; j < tracked; ++j) o.track.push_back(j);
  KeepDraws keep;
  SampleResult r;
  Status st = sample(store, nullptr, o, keep, &r);
  EXPECT_TRUE(st.is_ok()) << method << ": " << st.message();
  return std::move(keep.draws);
}

// The specification's update (ALGORITHMS.md sections 2 and 3: the dynamics' step written out
// literally, literal_dynamics.hpp), every coordinate every iteration, for the linear model
// (noise and prior variance 1): snapshot none, ptu, ppu or tmu; access ca, rr or ra; D one
// pass; a start from the prior (momenta from N(0, 1)) and a refresh there. The gradient and
// the snapshots are taken where the dynamics says (hmc2: the midpoint z). The table holds
// float32 values like the engine's (the estimate is unbiased either way). One chain; the
// draws as the engine keeps them (after j steps, j > burn_in, every thin-th).
Draws run_naive(const SparseRows& rows, const std::string& snap, const std::string& access, double step,
                uint64_t iterations, uint64_t burn_in, uint64_t thin, uint64_t seed,
                const std::string& dynamics = "ld", double friction = 1) {
  const size_t n_rows = rows.rows();
  const uint64_t refresh = (n_rows + kBatch - 1) / kBatch;
  const double scale = static_cast<double>(n_rows) / static_cast<double>(kBatch);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<size_t> pick(0, n_rows - 1);
  sampler::DynamicsParams q;
  q.step = step;
  q.friction = friction;
  const bool momentum = sampler::find_dynamics(dynamics)->state_dim == 2;
  const double shift = sampler::literal_eval_shift(dynamics, q);
  std::vector<double> theta(kDim), mom(kDim, 0.0), at(kDim), a(kDim, 0.0), point(kDim), g(kDim), s(kBatch),
      sh(kBatch);
  std::vector<float> table(n_rows, 0.0f);
  std::vector<size_t> perm(n_rows), batch(kBatch);
  for (size_t i = 0; i < n_rows; ++i) perm[i] = i;
  for (double& v : theta) v = n01(rng);
  if (momentum) {
    for (double& v : mom) v = n01(rng);
  }
  auto eval_point = [&] {  // theta + shift p: where the gradient is taken
    for (uint32_t j = 0; j < kDim; ++j) at[j] = theta[j] + shift * mom[j];
  };
  auto residual = [&](size_t i, const std::vector<double>& where) {  // s_i = l'(y_i, where . x_i)
    double m = 0;
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) m += where[idx[e]] * val[e];
    return m - rows.labels[i];
  };
  auto add_row = [&](std::vector<double>& v, size_t i, double c) {
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) v[idx[e]] += c * val[e];
  };
  auto do_refresh = [&] {
    std::fill(a.begin(), a.end(), 0.0);
    eval_point();
    point = at;
    for (size_t i = 0; i < n_rows; ++i) {
      const double r = residual(i, at);
      table[i] = static_cast<float>(r);
      add_row(a, i, snap == "ptu" ? r : double{table[i]});
    }
  };
  if (snap != "none") do_refresh();
  Draws draws;
  for (uint64_t k = 0;; ++k) {
    if (k > burn_in && (k - burn_in) % thin == 0) draws.push_back(theta);
    if (k == iterations) break;
    for (uint64_t t = 0; t < kBatch; ++t) {
      const uint64_t pos = (k * kBatch + t) % n_rows;
      if (access == "ca") {
        batch[t] = pos;
      } else if (access == "ra") {
        batch[t] = pick(rng);
      } else {
        if (pos == 0) std::shuffle(perm.begin(), perm.end(), rng);
        batch[t] = perm[pos];
      }
    }
    eval_point();
    for (uint64_t t = 0; t < kBatch; ++t) {
      const size_t i = batch[t];
      s[t] = residual(i, at);
      sh[t] = snap == "none" ? 0.0 : snap == "ptu" ? residual(i, point) : double{table[i]};
    }
    for (uint32_t j = 0; j < kDim; ++j) g[j] = a[j];  // the prior's term is the literal step's
    for (uint64_t t = 0; t < kBatch; ++t) add_row(g, batch[t], scale * (s[t] - sh[t]));
    for (uint32_t j = 0; j < kDim; ++j) {
      sampler::State st{theta[j], mom[j]};
      const double z1 = n01(rng), z2 = momentum ? n01(rng) : 0.0;
      sampler::literal_step(dynamics, q, st, g[j], z1, z2);
      theta[j] = st.x;
      mom[j] = st.p;
    }
    if (snap == "ppu" || snap == "tmu") {  // a row twice in the batch: the second adds zero
      for (uint64_t t = 0; t < kBatch; ++t) {
        const size_t i = batch[t];
        const float now = static_cast<float>(s[t]);
        add_row(a, i, double{now} - double{table[i]});
        table[i] = now;
      }
    }
    if ((snap == "ptu" || snap == "tmu") && (k + 1) % refresh == 0) do_refresh();
  }
  return draws;
}

// The mean of x over the draws and its batch-means standard error (40 batches).
template <typename F>
std::pair<double, double> mean_and_error(const Draws& draws, F&& x) {
  constexpr size_t kBatches = 40;
  const size_t per = draws.size() / kBatches;
  double sum = 0, sq = 0;
  std::vector<double> m(kBatches, 0.0);
  for (size_t b = 0; b < kBatches; ++b) {
    for (size_t i = b * per; i < (b + 1) * per; ++i) m[b] += x(draws[i]);
    m[b] /= static_cast<double>(per);
    sum += m[b];
  }
  const double mean = sum / kBatches;
  for (double v : m) sq += (v - mean) * (v - mean);
  return {mean, std::sqrt(sq / (kBatches - 1) / kBatches)};
}

// Per coordinate and p in {0.1, 0.5, 0.9}: the share of `other`'s draws below the
// reference's p-quantile, against the reference's own share (p), in standard errors.
// Returns the largest |z|; reports every |z| above `limit`.
double compare_distributions(const Draws& other, const Draws& reference, const std::string& what, double limit) {
  double worst = 0;
  for (size_t j = 0; j < reference.front().size(); ++j) {
    std::vector<double> col(reference.size());
    for (size_t i = 0; i < reference.size(); ++i) col[i] = reference[i][j];
    std::sort(col.begin(), col.end());
    for (double p : {0.1, 0.5, 0.9}) {
      const double t = col[static_cast<size_t>(p * static_cast<double>(col.size()))];
      auto below = [&](const std::vector<double>& d) { return d[j] < t ? 1.0 : 0.0; };
      const auto [fo, so] = mean_and_error(other, below);
      const auto [fr, sr] = mean_and_error(reference, below);
      const double z = (fo - fr) / std::hypot(so, sr);
      worst = std::max(worst, std::abs(z));
      EXPECT_LT(std::abs(z), limit) << what << ", coordinate " << j << ": " << fo << " of the draws below the "
                                    << p << "-quantile " << t << " against " << fr;
    }
  }
  return worst;
}

// ---- The small step: means and sds. ----

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
    // (N / n) max |x_i|^2 eta stays well below 1: stable for the VR estimates, and the draws
    // close to Gaussian.
    const Draws draws = run_engine(*store, GetParam().method, GetParam().precondition, 1e-3, 120000,
                                   seed + (is_dense ? 1 : 0), is_dense);
    ASSERT_FALSE(draws.empty());
    for (uint32_t j = 0; j < kDim; ++j) (is_dense ? dense : lazy)[j] = summarize(draws, j);
  }
  for (uint32_t j = 0; j < kDim; ++j) {
    const Summary& l = lazy[j];
    const Summary& d = dense[j];
    // The sd's standard error from the effective sample size (sd / mcse)^2: sd / sqrt(2 ESS).
    const double se_mean = std::hypot(l.mcse, d.mcse);
    const double se_sd = std::hypot(l.mcse / std::sqrt(2.0), d.mcse / std::sqrt(2.0));
    EXPECT_NEAR(l.mean, d.mean, 4 * se_mean) << "coordinate " << j;
    EXPECT_NEAR(l.sd, d.sd, 4 * se_sd) << "coordinate " << j;
    EXPECT_LT(se_mean, 0.1 * d.sd) << "the runs are too short for the comparison to mean anything";
  }
}

INSTANTIATE_TEST_SUITE_P(Methods, LazyDense,
                         ::testing::Values(Case{"none-ra", "none"}, Case{"tmu-rr", "none"}, Case{"ptu-ca", "none"}),
                         [](const ::testing::TestParamInfo<Case>& param_info) {
                           std::string s = std::string(param_info.param.method) + "_" + param_info.param.precondition;
                           for (char& ch : s) ch = ch == '-' || ch == '+' ? '_' : ch;
                           return s;
                         });

// ---- The large step: distribution functions, every method of the registry. ----
//
// At eta = 1e-2 the small step's rows are past the variance-reduced estimates' stability:
// (N / n) max_i |x_i|^2 eta is about 3.3. With seed 52's rows ppu (every order), tmu-ca,
// tmu-ra and ptu-ra diverge to a non-finite state, in both paths; with seed 1's tmu-rr and
// the naive reference too; tmu-rr, where it stays finite, draws with kurtoses of 10^2 to 10^4
// and sds 2 to 14 times the posterior's. (With the values clipped to 0.8 or 1.2 but not
// scaled, ptu+, ptu-ca, tmu-ca and ppu-ca still wandered off for some seeds.) So the large
// step runs on the rows with their values halved and the drawn one clipped: (N / n)
// max_i |x_i|^2 eta = 0.27, every method stable at that step on seeds 1 to 5 and 52.
// The diag cases use diag's default step, on these rows and on the small step's, where the
// draws are far from Gaussian too (sds about 1.7 where the posterior's are about 0.2; for
// tmu-rr kurtoses up to ~700), so they are compared here, not by their sds.

constexpr double kLargeStep = 1e-2;
constexpr double kScale = 0.5, kBound = 1.6;  // (N / n) max_i |x_i|^2 eta = 30 * 0.89 * 0.01 = 0.27
constexpr uint64_t kLargeIterations = 20000;
// About 2,400 comparisons over the cases, each with a 40-batch error (a t with 39 degrees
// of freedom): their largest |z| was 3.1 to 4.3 over seeds 1 to 5 and 52.
constexpr double kLimit = 5;

struct LargeCase {
  std::string method;
  std::string precondition;
  bool small_step_rows = false;  // the small step's rows instead of the scaled ones
  std::string dynamics = "ld";
};
// The underdamped dynamics at h = sqrt(kLargeStep) (ld's bounds) with D_f h = 0.6: a momentum
// kept for a few steps, whose jumps over skipped steps are far from the identity. (At D_f h
// = 0.3 the estimates' row kicks, which the momentum gathers, took ptu-ca, ppu-ca, tmu-ca and
// ptu+ to divergence with hmc and hmc2 on these rows, and svrhmc's Euler step, stable only
// for gamma eta above eta^2 lambda_max, with ptu-ca.)
constexpr double kMomentumKept = 0.6;
double large_step(const std::string& dynamics) {
  return sampler::find_dynamics(dynamics)->state_dim == 2 ? std::sqrt(kLargeStep) : kLargeStep;
}
double large_friction(const std::string& dynamics) {
  return sampler::find_dynamics(dynamics)->state_dim == 2 ? kMomentumKept / large_step(dynamics) : 0.0;
}
void PrintTo(const LargeCase& c, std::ostream* os) {
  *os << c.method << ", precondition " << c.precondition << (c.small_step_rows ? ", the small step's rows" : "");
}

// Every pair of a snapshot, an access order and a dynamics (method_pairs), and diag's cases;
// the long suite (LazyDenseLargeStepLong), the rest of the cross product.
std::vector<LargeCase> large_cases(const std::vector<MethodParts>& methods) {
  std::vector<LargeCase> out;
  for (const MethodParts& m : methods) out.push_back({m.method(), "none", false, m.dynamics});
  return out;
}
std::vector<LargeCase> large_cases() {
  std::vector<LargeCase> out = large_cases(method_pairs());
  out.push_back({"tmu-rr", "diag"});
  out.push_back({"tmu-rr", "diag", true});
  out.push_back({"none-ra", "diag", true});
  return out;
}

void expect_lazy_is_dense_at_large_step(const LargeCase& c) {
  const uint64_t seed = test_seed(52);
  const SparseRows rows = c.small_step_rows ? sparse_rows(seed) : sparse_rows(seed, kScale, kBound);
  TempDir dir;
  auto store = make_store(dir.file("sparse.agld"), rows, kDim, false);
  // full: a pass a step, fewer of them; diag: slower mixing (its draws' tails), longer
  // batches for honest batch-means errors.
  const bool full = c.method.rfind("full-", 0) == 0;
  const uint64_t iterations =
      full ? kLargeIterations / 5 : c.precondition == "diag" ? 2 * kLargeIterations : kLargeIterations;
  // diag's default step comes from a power iteration with a seeded start, so it differs from
  // seed to seed (0.940 against 0.967 for seeds 6 and 7), and it cannot be handed to the
  // other run as --step when it is at least the prior's variance (resolve refuses such a
  // step even under diag, where what the prior needs below its variance is eta M_j, and
  // M_j < prior_var). So under diag
  // both runs take the same seed: the same step, and under rr the same batches (the paths'
  // noise still differs: they draw it in a different order). Their errors are then not
  // independent, and the comparison, which assumes they are, is on the lenient side.
  const double step = c.precondition == "none" ? large_step(c.dynamics) : 0;
  const double friction = large_friction(c.dynamics);
  const uint64_t dense_seed = c.precondition == "diag" ? seed : seed + 1;
  const Draws lazy = run_engine(*store, c.method, c.precondition, step, iterations, seed, false, friction);
  const Draws dense = run_engine(*store, c.method, c.precondition, step, iterations, dense_seed, true, friction);
  ASSERT_FALSE(lazy.empty());
  ASSERT_FALSE(dense.empty());
  const double worst = compare_distributions(lazy, dense, c.method + " lazy against dense", kLimit);
  std::cout << c.method << "/" << c.precondition << (c.small_step_rows ? " (the small step's rows)" : "")
            << ": largest |z| lazy against dense " << worst << std::endl;
}

class LazyDenseLargeStep : public ::testing::TestWithParam<LargeCase> {};
class LazyDenseLargeStepLong : public ::testing::TestWithParam<LargeCase> {};
TEST_P(LazyDenseLargeStep, SameDistributionWithinMonteCarloError) { expect_lazy_is_dense_at_large_step(GetParam()); }
TEST_P(LazyDenseLargeStepLong, SameDistributionWithinMonteCarloError) {
  expect_lazy_is_dense_at_large_step(GetParam());
}
std::string large_case_name(const ::testing::TestParamInfo<LargeCase>& param_info) {
  std::string s = param_info.param.method + "_" + param_info.param.precondition +
                  (param_info.param.small_step_rows ? "_small_step_rows" : "");
  for (char& ch : s) ch = ch == '-' ? '_' : ch == '+' ? 'p' : ch;
  return s;
}
INSTANTIATE_TEST_SUITE_P(Methods, LazyDenseLargeStep, ::testing::ValuesIn(large_cases()), large_case_name);
INSTANTIATE_TEST_SUITE_P(Methods, LazyDenseLargeStepLong, ::testing::ValuesIn(large_cases(method_rest())),
                         large_case_name);

// Coordinates in no row of the store (features kDim .. kDim + kAbsent - 1): a refresh brings
// only the coordinates some row has (LazyState::catch_up_rows), the others jump over it in
// one piece when next brought current. Their law is the prior's, N(0, 1), and the others'
// is unchanged: lazy against dense at diag's default step (the bits come from diag's
// statistics), for full-pass refreshes (ptu, tmu), a subsample's (ptu+) and a momentum.
constexpr uint32_t kAbsent = 10;

class LazyDenseInNoRow : public ::testing::TestWithParam<std::string> {};

TEST_P(LazyDenseInNoRow, SameDistributionWithinMonteCarloError) {
  const std::string method = GetParam();
  const uint64_t seed = test_seed(54);
  const SparseRows rows = sparse_rows(seed, kScale, kBound);
  TempDir dir;
  auto store = make_store(dir.file("sparse.agld"), rows, kDim + kAbsent, false);
  const Draws lazy = run_engine(*store, method, "diag", 0, 2 * kLargeIterations, seed, false, 0, kDim + kAbsent);
  const Draws dense = run_engine(*store, method, "diag", 0, 2 * kLargeIterations, seed, true, 0, kDim + kAbsent);
  ASSERT_FALSE(lazy.empty());
  ASSERT_FALSE(dense.empty());
  ASSERT_EQ(lazy.front().size(), kDim + kAbsent + 0u);
  const double worst = compare_distributions(lazy, dense, method + " lazy against dense", kLimit);
  std::cout << method << ": largest |z| lazy against dense, " << kAbsent << " coordinates in no row: " << worst
            << std::endl;
  // The coordinates in no row against their exact law, the prior N(0, 1): the mean and the
  // share below 0, each within 5 batch-means errors.
  for (uint32_t j = kDim; j < kDim + kAbsent; ++j) {
    const auto [mean, se] = mean_and_error(lazy, [j](const std::vector<double>& x) { return x[j]; });
    EXPECT_NEAR(mean, 0.0, 5 * se) << "coordinate " << j << " (in no row)";
    const auto [below, se_below] = mean_and_error(lazy, [j](const std::vector<double>& x) { return x[j] < 0 ? 1.0 : 0.0; });
    EXPECT_NEAR(below, 0.5, 5 * se_below) << "coordinate " << j << " (in no row)";
  }
}

INSTANTIATE_TEST_SUITE_P(Refreshes, LazyDenseInNoRow, ::testing::Values("ptu-ca", "tmu-rr", "ptu+-rr", "ptu-ca-hmc2"),
                         [](const ::testing::TestParamInfo<std::string>& p) {
                           std::string s = p.param;
                           for (char& ch : s) ch = ch == '-' ? '_' : ch == '+' ? 'p' : ch;
                           return s;
                         });

// The dense path against the naive reference at the large step, for every dynamics: the dense
// path is the chain the specification defines, not merely the lazy path's twin (with the
// specification's noise: --noise-correction off).
class DensePath : public ::testing::TestWithParam<std::string> {};

TEST_P(DensePath, IsTheSpecificationsChain) {
  const std::string dynamics = GetParam();
  const uint64_t seed = test_seed(53);
  const SparseRows rows = sparse_rows(seed, kScale, kBound);
  TempDir dir;
  auto store = make_store(dir.file("sparse.agld"), rows, kDim, false);
  const double step = large_step(dynamics), friction = large_friction(dynamics);
  for (const std::string sa : {"tmu-rr", "ppu-ra", "ptu-ca", "none-ra"}) {
    const std::string snap = sa.substr(0, sa.find('-')), access = sa.substr(sa.find('-') + 1);
    const std::string m = sa + (dynamics == "ld" ? "" : "-" + dynamics);
    const Draws dense = run_engine(*store, m, "none", step, kLargeIterations, seed, true, friction, kDim, "off");
    Draws naive;
    for (uint64_t chain = 0; chain < 4; ++chain) {  // kept in turn, as the engine's
      const Draws one = run_naive(rows, snap, access, step, kLargeIterations, kLargeIterations / 10, 4,
                                  seed * 31 + chain, dynamics, friction > 0 ? friction : 1);
      naive.resize(one.size() * 4);
      for (size_t i = 0; i < one.size(); ++i) naive[i * 4 + chain] = one[i];
    }
    ASSERT_FALSE(dense.empty());
    const double worst = compare_distributions(naive, dense, m + " naive against dense", kLimit);
    std::cout << m << ": largest |z| naive against dense " << worst << std::endl;
  }
}


INSTANTIATE_TEST_SUITE_P(EveryDynamics, DensePath, ::testing::ValuesIn(sampler::dynamics_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace lazy_dense_test
}  // namespace
}  // namespace agld::test
