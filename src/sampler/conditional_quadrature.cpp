#include "sampler/conditional_quadrature.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>
#include <vector>

namespace agld::sampler {

namespace {

constexpr double kDrop = 20;       // the grid spans U <= U(mode) + kDrop: about e^-20 of the mass left out
// The trapezoid rule's relative error is about e^-12 to e^-15 (below): at most 1.25 of the
// narrowest local scale sigma (exp(-2 pi^2 sigma^2 / h^2) for a Gaussian: e^-12.6), and at
// most 2 pi w / (kDecay max |x_ij|) for a loss analytic in a strip of half-width w about the
// real margins (the strip is w / |x_ij| wide in the coordinate).
constexpr double kSpacing = 1.25;
constexpr double kDecay = 15;
constexpr int kMinPoints = 13;
constexpr int kMaxPoints = 1024;   // a cap that the scales below never reach for a few rows
constexpr int kMaxNewton = 50;

struct Conditional {
  std::span<const ConditionalRow> rows;
  const model::Model& model;
  double p0;  // 1 / s2p

  // U'(t) and U''(t).
  struct Slope {
    double t, g, h;
  };
  Slope slope(double t) const {
    Slope p{t, p0 * t, p0};
    for (const ConditionalRow& r : rows) {
      const double x = r.x;
      double l1, l2;
      model.loss_slopes(r.y, r.offset + x * t, &l1, &l2);
      p.g += x * l1;
      p.h += x * x * l2;
    }
    return p;
  }
};

}  // namespace

ConditionalMoments conditional_moments(std::span<const ConditionalRow> rows, const model::Model& model,
                                       double inv_prior_var, double start, std::vector<double>& scratch) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  const Conditional c{rows, model, inv_prior_var};
  double sum_sq = 0, max_x = 0;
  for (const ConditionalRow& r : rows) {
    if (!std::isfinite(r.offset)) return {kNaN, kNaN};
    sum_sq += static_cast<double>(r.x) * r.x;
    max_x = std::max(max_x, std::abs(static_cast<double>(r.x)));
  }
  if (!(inv_prior_var > 0) || !std::isfinite(start)) return {kNaN, kNaN};
  // The narrowest local scale anywhere: U'' is at most 1/s2p + sup l'' sum x^2.
  const double min_scale = 1 / std::sqrt(inv_prior_var + model.curvature() * sum_sq);
  // Newton to the mode of the strictly convex U from U' and U'' alone (no loss: the fewest
  // transcendental functions), kept inside the bracket of U''s root that the steps so far give
  // (a step that leaves it goes to the bracket's midpoint). The mode is only the grid's centre
  // and the weights' reference: a thousandth of a scale will do.
  double below = -std::numeric_limits<double>::infinity(), above = std::numeric_limits<double>::infinity();
  double t = start, h = kNaN;
  for (int it = 0; it < kMaxNewton; ++it) {
    const Conditional::Slope p = c.slope(t);
    h = p.h;
    if (p.g == 0) break;
    (p.g < 0 ? below : above) = t;
    double next = t - p.g / p.h;
    if (!(next > below && next < above)) next = 0.5 * (below + above);  // both ends finite here
    if (!std::isfinite(next)) return {kNaN, kNaN};
    const bool done = !(std::abs(next - t) > 1e-3 * min_scale);
    t = next;
    if (done) break;
  }
  if (!std::isfinite(t) || !(h > 0)) return {kNaN, kNaN};
  // The grid spans the interval where U is within kDrop of its minimum: out from the mode, first
  // 1.5 times as far as a Gaussian of the mode's curvature would reach kDrop (a logistic
  // conditional's tails are heavier: this is most often as far as it goes), then an end whose
  // weight is above e^-kDrop goes 1.5 times as far, and the weights are computed again (U grows
  // at least as fast as the prior's term, so this ends).
  const double width = model.analytic_half_width();
  double h_max = kSpacing * min_scale;
  if (max_x > 0 && std::isfinite(width)) h_max = std::min(h_max, 2 * std::numbers::pi * width / (kDecay * max_x));
  const double w0 = 1.5 * std::sqrt(2 * kDrop / h), floor = std::exp(-kDrop);
  double lo = t - w0, hi = t + w0, step = 0;
  std::vector<double>& w = scratch;
  for (;;) {
    const int n = std::clamp(static_cast<int>(std::ceil((hi - lo) / h_max)) + 1, kMinPoints, kMaxPoints);
    step = (hi - lo) / (n - 1);
    // Weights e^-(U - U(mode)) (at most about 1: no overflow), the prior's factor and then each
    // row's likelihood relative to its value at the mode; moments about the mode, then shifted.
    w.resize(static_cast<size_t>(n));
    for (int i = 0; i < n; ++i) {
      const double ti = lo + step * i;
      w[static_cast<size_t>(i)] = std::exp(0.5 * inv_prior_var * (t * t - ti * ti));
    }
    for (const ConditionalRow& r : rows) {
      const double x = r.x;
      model.multiply_likelihood(r.y, r.offset + x * t, r.offset + x * lo, x * step, w);
    }
    const bool wider_lo = !(w.front() < floor) && t - lo < 1e6 * w0;
    const bool wider_hi = !(w.back() < floor) && hi - t < 1e6 * w0;
    if (!wider_lo && !wider_hi) break;
    if (wider_lo) lo = t - 1.5 * (t - lo);
    if (wider_hi) hi = t + 1.5 * (hi - t);
  }
  double z = 0, m1 = 0, m2 = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    const double dt = lo + step * static_cast<double>(i) - t, wi = w[i];
    z += wi;
    m1 += wi * dt;
    m2 += wi * dt * dt;
  }
  if (!(z > 0)) return {kNaN, kNaN};
  const double mean_dt = m1 / z;
  return {t + mean_dt, std::max(0.0, m2 / z - mean_dt * mean_dt)};
}

}  // namespace agld::sampler
