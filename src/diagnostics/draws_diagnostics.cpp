// The definitions of the R package `posterior` 1.4.0, function by function (each helper
// names the function it mirrors; R's sources: posterior:::.ess, posterior:::.rhat, ...).
// Where `posterior` returns NA these return NaN, at the same points of the computation: the
// checks run on whatever that function sees (the split chains, their ranks, the indicators).
#include "diagnostics/draws_diagnostics.hpp"

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <complex>
#include <limits>
#include <stdexcept>
#include <vector>

#include <unsupported/Eigen/FFT>

namespace agld::diagnostics {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
using Columns = std::vector<std::vector<double>>;  // a matrix, column by column (chain by chain)

size_t draws_per_chain(std::span<const double> draws, size_t chains) {
  if (chains == 0 || draws.size() % chains != 0)
    throw std::invalid_argument("diagnostics: the draws are not `chains` chains of equal length");
  return draws.size() / chains;
}

// R's mean(): a long double sum, then one correction pass.
double mean_of(std::span<const double> x) {
  if (x.empty()) return kNaN;
  long double s = 0;
  for (double v : x) s += v;
  s /= static_cast<long double>(x.size());
  if (std::isfinite(static_cast<double>(s))) {
    long double t = 0;
    for (double v : x) t += v - s;
    s += t / static_cast<long double>(x.size());
  }
  return static_cast<double>(s);
}

// R's colMeans(): a long double sum / n, no correction.
double col_means(std::span<const double> x) {
  long double s = 0;
  for (double v : x) s += v;
  return static_cast<double>(s / static_cast<long double>(x.size()));
}

// matrixStats (0.63) colMeans2 and rowMeans2: a double sum / n. For draws far from zero
// these differ from R's mean() by a few ulps, enough to move an ESS by 1e-8.
double col_means2(std::span<const double> x) {
  double s = 0;
  for (double v : x) s += v;
  return s / static_cast<double>(x.size());
}

// R's var() of a vector (two passes, n - 1 in the denominator); NaN for fewer than 2 values.
double var_of(std::span<const double> x) {
  if (x.size() < 2) return kNaN;
  const double m = mean_of(x);
  long double s = 0;
  for (double v : x) s += (v - m) * (v - m);
  return static_cast<double>(s / static_cast<long double>(x.size() - 1));
}

// posterior:::should_return_NA: a non-finite value, or max - min below the machine epsilon
// (an absolute tolerance). Cols: a range of columns.
template <typename Cols>
bool should_return_na(const Cols& x) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& col : x)
    for (double v : col) {
      if (!std::isfinite(v)) return true;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  return std::abs(hi - lo) < DBL_EPSILON;
}

// posterior:::.split_chains: the first floor(n/2) and the last floor(n/2) draws of each chain
// (an odd n drops each chain's middle draw), first halves then second halves. Also R's drop
// quirk: for n = 2 or 3 and several chains, `x[1, ]` drops to a vector and cbind returns two
// columns of `chains` draws (every chain's first draw, every chain's last). n = 1: unchanged.
Columns split_chains(std::span<const double> x, size_t chains) {
  const size_t n = draws_per_chain(x, chains), half = n / 2;
  Columns out;
  if (n == 1) {
    for (double v : x) out.push_back({v});
  } else if (half == 1 && chains > 1) {
    out.assign(2, std::vector<double>(chains));
    for (size_t c = 0; c < chains; ++c) {
      out[0][c] = x[c * n];
      out[1][c] = x[c * n + n - 1];
    }
  } else {
    for (size_t c = 0; c < chains; ++c) out.emplace_back(x.begin() + c * n, x.begin() + c * n + half);
    for (size_t c = 0; c < chains; ++c) out.emplace_back(x.begin() + (c + 1) * n - half, x.begin() + (c + 1) * n);
  }
  return out;
}

// R's qnorm(p) for 0 < p < 1: Wichura's algorithm AS 241 (PPND16), as R's nmath/qnorm.c.
double qnorm(double p) {
  const double q = p - 0.5;
  if (std::abs(q) <= 0.425) {
    const double r = 0.180625 - q * q;
    return q *
           (((((((r * 2509.0809287301226727 + 33430.575583588128105) * r + 67265.770927008700853) * r +
                45921.953931549871457) * r + 13731.693765509461125) * r + 1971.5909503065514427) * r +
             133.14166789178437745) * r + 3.387132872796366608) /
           (((((((r * 5226.495278852545925 + 28729.085735721942674) * r + 39307.89580009271061) * r +
                21213.794301586595867) * r + 5394.1960214247511077) * r + 687.1870074920579083) * r +
             42.313330701600911252) * r + 1.0);
  }
  double r = std::sqrt(-std::log(q < 0 ? p : 1 - p)), val;
  if (r <= 5) {
    r -= 1.6;
    val = (((((((r * 7.7454501427834140764e-4 + 0.0227238449892691845833) * r + 0.24178072517745061177) * r +
               1.27045825245236838258) * r + 3.64784832476320460504) * r + 5.7694972214606914055) * r +
            4.6303378461565452959) * r + 1.42343711074968357734) /
          (((((((r * 1.05075007164441684324e-9 + 5.475938084995344946e-4) * r + 0.0151986665636164571966) * r +
               0.14810397642748007459) * r + 0.68976733498510000455) * r + 1.6763848301838038494) * r +
            2.05319162663775882187) * r + 1.0);
  } else {
    r -= 5;
    val = (((((((r * 2.01033439929228813265e-7 + 2.71155556874348757815e-5) * r + 0.0012426609473880784386) * r +
               0.026532189526576123093) * r + 0.29656057182850489123) * r + 1.7848265399172913358) * r +
            5.4637849111641143699) * r + 6.6579046435011037772) /
          (((((((r * 2.04426310338993978564e-15 + 1.4215117583164458887e-7) * r + 1.8463183175100546818e-5) * r +
               7.868691311456132591e-4) * r + 0.0148753612908506148525) * r + 0.13692988092273580531) * r +
            0.59983220655588793769) * r + 1.0);
  }
  return q < 0 ? -val : val;
}

// posterior:::z_scale: qnorm((r - 3/8) / (S - 2 * 3/8 + 1)), r the rank among all S values
// (ties get their average rank). A NaN makes every value NaN (posterior: NA, then NA).
Columns z_scale(Columns x) {
  std::vector<double*> order;
  for (auto& col : x)
    for (double& v : col) order.push_back(&v);
  if (std::any_of(order.begin(), order.end(), [](const double* v) { return std::isnan(*v); })) {
    for (double* v : order) *v = kNaN;
    return x;
  }
  std::stable_sort(order.begin(), order.end(), [](const double* a, const double* b) { return *a < *b; });
  const double c = 3.0 / 8, s = static_cast<double>(order.size());
  for (size_t i = 0; i < order.size();) {
    size_t j = i;
    while (j + 1 < order.size() && *order[j + 1] == *order[i]) ++j;
    const double rank = static_cast<double>(i + 1 + j + 1) / 2;  // average of ranks i+1 .. j+1
    const double z = qnorm((rank - c) / (s - 2 * c + 1));
    for (size_t k = i; k <= j; ++k) *order[k] = z;
    i = j + 1;
  }
  return x;
}

// R's median() of all draws (NaN if any is NaN).
double median_of(std::span<const double> x) {
  if (x.empty() || std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); })) return kNaN;
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  const size_t h = s.size() / 2;
  if (s.size() % 2 == 1) return s[h];
  return mean_of(std::array{s[h - 1], s[h]});  // R: mean() of the two middle values
}

// posterior:::fold_draws: |x - median(x)|, the median over all draws.
std::vector<double> fold_draws(std::span<const double> x) {
  const double m = median_of(x);
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) out[i] = std::abs(x[i] - m);
  return out;
}

// posterior:::.rhat: sqrt((B/W + n - 1) / n), B = n var(chain means), W = mean chain variance
// (matrixStats::colVars with the colMeans2 as centres: colMeans((x - centre)^2) n/(n-1)).
double rhat_basic(const Columns& x) {
  if (should_return_na(x)) return kNaN;
  const size_t n = x[0].size();
  if (n < 2) return kNaN;
  const double nd = static_cast<double>(n);
  std::vector<double> means, vars, sq(n);
  for (const auto& col : x) {
    const double m = col_means2(col);
    for (size_t t = 0; t < n; ++t) sq[t] = (col[t] - m) * (col[t] - m);
    means.push_back(m);
    vars.push_back(col_means(sq) * (nd / (nd - 1)));
  }
  const double between = nd * var_of(means), within = mean_of(vars);
  return std::sqrt((between / within + nd - 1) / nd);
}

// posterior:::autocovariance: the autocovariances at lags 0 .. N-1 (divisor N), by FFT of the
// centred chain padded with zeros to at least 2N (no wrap-around), all 0 for a constant chain.
std::vector<double> autocovariance(const std::vector<double>& x) {
  const size_t n = x.size();
  const double varx = var_of(x);
  std::vector<double> ac(n, 0.0);
  if (varx == 0) return ac;
  const double m = mean_of(x);
  size_t size = 2;
  while (size < 2 * n) size *= 2;
  std::vector<double> yc(size, 0.0), back;
  for (size_t i = 0; i < n; ++i) yc[i] = x[i] - m;
  Eigen::FFT<double> fft;
  std::vector<std::complex<double>> freq;
  fft.fwd(freq, yc);
  for (auto& f : freq) f = std::norm(f);
  fft.inv(back, freq);
  const double nd = static_cast<double>(n);
  for (size_t k = 0; k < n; ++k) ac[k] = back[k] / back[0] * varx * (nd - 1) / nd;
  return ac;
}

// posterior:::.ess: Geyer's initial positive sequence on the chains' mean autocorrelations,
// made monotone, tau = -1 + 2 sum rho, capped below at 1 / log10(S); ESS = S / tau.
double ess_basic(const Columns& x) {
  const size_t chains = x.size(), n = chains == 0 ? 0 : x[0].size();
  if (n < 3 || should_return_na(x)) return kNaN;
  std::vector<std::vector<double>> acovs;
  std::vector<double> means, acov(n), lag(chains);
  for (const auto& col : x) {
    acovs.push_back(autocovariance(col));
    means.push_back(col_means2(col));
  }
  for (size_t k = 0; k < n; ++k) {  // matrixStats::rowMeans2 of the lags-by-chains matrix
    for (size_t c = 0; c < chains; ++c) lag[c] = acovs[c][k];
    acov[k] = col_means2(lag);
  }
  const double nd = static_cast<double>(n);
  const double mean_var = acov[0] * nd / (nd - 1);
  double var_plus = mean_var * (nd - 1) / nd;
  if (chains > 1) var_plus += var_of(means);
  std::vector<double> rho(n, 0.0);
  size_t t = 0;
  double even = 1, odd = 1 - (mean_var - acov[1]) / var_plus;
  rho[0] = even;
  rho[1] = odd;
  while (t + 5 < n && !std::isnan(even + odd) && even + odd > 0) {
    t += 2;
    even = 1 - (mean_var - acov[t]) / var_plus;
    odd = 1 - (mean_var - acov[t + 1]) / var_plus;
    if (even + odd >= 0) {
      rho[t] = even;
      rho[t + 1] = odd;
    }
  }
  const size_t max_t = t;
  if (even > 0) rho[max_t] = even;
  for (t = 2; t + 2 <= max_t; t += 2) {  // monotone: no pair above the one before
    if (rho[t] + rho[t + 1] > rho[t - 2] + rho[t - 1]) rho[t] = rho[t + 1] = (rho[t - 2] + rho[t - 1]) / 2;
  }
  // R's sum(rho_hat_t[1:max_t]): for max_t = 0, 1:0 is c(1, 0), which selects rho[0].
  long double sum = max_t == 0 ? rho[0] : 0;
  for (size_t i = 0; i < max_t; ++i) sum += rho[i];
  const double s = static_cast<double>(chains * n);
  const double tau = std::max(-1 + 2 * static_cast<double>(sum) + rho[max_t], 1 / std::log10(s));
  return s / tau;
}

// R's quantile(x, p, type = 7) of sorted values: (1 - h) x[lo] + h x[hi] on the 1-based
// index 1 + (S - 1) p, left at x[lo] when x[hi] equals it.
double quantile_sorted(const std::vector<double>& s, double p) {
  if (s.empty()) return kNaN;
  const double index = 1 + static_cast<double>(s.size() - 1) * std::clamp(p, 0.0, 1.0);
  const double lo = std::floor(index), hi = std::ceil(index);
  const double qs = s[static_cast<size_t>(lo) - 1], xhi = s[static_cast<size_t>(hi) - 1];
  if (!(index > lo && xhi != qs)) return qs;
  const double h = index - lo;
  return (1 - h) * qs + h * xhi;
}

// posterior::quantile2: NA if any draw is NA, else quantile(type 7) of the pooled draws.
std::vector<double> sorted_or_empty(std::span<const double> x) {
  if (std::any_of(x.begin(), x.end(), [](double v) { return std::isnan(v); })) return {};
  std::vector<double> s(x.begin(), x.end());
  std::sort(s.begin(), s.end());
  return s;
}

// posterior:::.ess_quantile: ESS of the split chains of the indicator x <= quantile(x, p).
double ess_quantile(std::span<const double> x, size_t chains, double p) {
  if (should_return_na(std::array{x})) return kNaN;
  const double q = quantile_sorted(sorted_or_empty(x), p);
  std::vector<double> indicator(x.size());
  for (size_t i = 0; i < x.size(); ++i) indicator[i] = x[i] <= q ? 1.0 : 0.0;
  return ess_basic(split_chains(indicator, chains));
}

// R's max() and min() of two numbers: NA if either is.
double max_na(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::max(a, b); }
double min_na(double a, double b) { return std::isnan(a) || std::isnan(b) ? kNaN : std::min(a, b); }

}  // namespace

// posterior::rhat.default
double rhat(std::span<const double> draws, size_t chains) {
  if (draws_per_chain(draws, chains) == 0) return kNaN;
  const std::vector<double> folded = fold_draws(draws);
  return max_na(rhat_basic(z_scale(split_chains(draws, chains))),
                rhat_basic(z_scale(split_chains(folded, chains))));
}

// posterior::ess_bulk.default
double ess_bulk(std::span<const double> draws, size_t chains) {
  if (draws_per_chain(draws, chains) == 0) return kNaN;
  return ess_basic(z_scale(split_chains(draws, chains)));
}

// posterior::ess_tail.default
double ess_tail(std::span<const double> draws, size_t chains) {
  if (draws_per_chain(draws, chains) == 0) return kNaN;
  return min_na(ess_quantile(draws, chains, 0.05), ess_quantile(draws, chains, 0.95));
}

// posterior::ess_mean.default
double ess_mean(std::span<const double> draws, size_t chains) {
  if (draws_per_chain(draws, chains) == 0) return kNaN;
  return ess_basic(split_chains(draws, chains));
}

// posterior::mcse_mean.default: sd of the pooled draws / sqrt(ess_mean).
double mcse_mean(std::span<const double> draws, size_t chains) {
  return std::sqrt(var_of(draws)) / std::sqrt(ess_mean(draws, chains));
}

// posterior::quantile2.default (one probability)
double quantile(std::span<const double> draws, double p) { return quantile_sorted(sorted_or_empty(draws), p); }

DrawSummary summarize(std::span<const double> draws, size_t chains) {
  DrawSummary s;
  s.mean = mean_of(draws);
  s.sd = std::sqrt(var_of(draws));
  s.mcse = s.sd / std::sqrt(ess_mean(draws, chains));
  const std::vector<double> sorted = sorted_or_empty(draws);
  s.q5 = quantile_sorted(sorted, 0.05);
  s.q50 = quantile_sorted(sorted, 0.5);
  s.q95 = quantile_sorted(sorted, 0.95);
  s.ess_tail = ess_tail(draws, chains);
  if (draws.empty()) {
    s.ess_bulk = s.rhat = kNaN;
    return s;
  }
  const Columns z = z_scale(split_chains(draws, chains));  // the ranks, once for both
  s.ess_bulk = ess_basic(z);
  s.rhat = max_na(rhat_basic(z), rhat_basic(z_scale(split_chains(fold_draws(draws), chains))));
  return s;
}

}  // namespace agld::diagnostics
