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

  double u(double t) const {
    double s = 0.5 * p0 * t * t;
    for (const ConditionalRow& r : rows) s += model.loss(r.y, r.offset + static_cast<double>(r.x) * t);
    return s;
  }
  // U(t), U'(t) and U''(t).
  struct Point {
    double t, u, g, h;
  };
  Point at(double t) const {
    Point p{t, 0.5 * p0 * t * t, p0 * t, p0};
    for (const ConditionalRow& r : rows) {
      const double x = r.x;
      double l, l1, l2;
      model.loss_derivatives(r.y, r.offset + x * t, &l, &l1, &l2);
      p.u += l;
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
  // Newton to the mode of the strictly convex U, a step halved until U does not rise. The mode
  // is only the grid's centre and the weights' reference: a thousandth of a scale will do.
  Conditional::Point p = c.at(start);
  for (int it = 0; it < kMaxNewton; ++it) {
    const double step = -p.g / p.h;
    if (!(std::abs(step) > 1e-3 * min_scale)) break;
    Conditional::Point next = c.at(p.t + step);
    for (int halve = 0; halve < 60 && !(next.u <= p.u); ++halve) next = c.at(p.t + (next.t - p.t) / 2);
    if (!(next.u <= p.u)) break;  // no descent left at this precision: p is the mode
    p = next;
  }
  if (!std::isfinite(p.u)) return {kNaN, kNaN};
  const double t = p.t, ut = p.u;
  // The interval where U is within kDrop of its minimum: out from the mode, first where a
  // Gaussian of the mode's curvature would reach kDrop, then in steps of 1.5 (U grows at least
  // as fast as the prior's term, so this ends).
  const double w0 = std::sqrt(2 * kDrop / p.h);
  auto reach = [&](double dir) {
    double w = w0;
    while (c.u(t + dir * w) - ut < kDrop && w < 1e6 * w0) w *= 1.5;
    return t + dir * w;
  };
  const double lo = reach(-1), hi = reach(+1);
  const double width = model.analytic_half_width();
  double h_max = kSpacing * min_scale;
  if (max_x > 0 && std::isfinite(width)) h_max = std::min(h_max, 2 * std::numbers::pi * width / (kDecay * max_x));
  const int n = std::clamp(static_cast<int>(std::ceil((hi - lo) / h_max)) + 1, kMinPoints, kMaxPoints);
  const double step = (hi - lo) / (n - 1);
  // Weights e^-(U - U(mode)) (at most about 1: no overflow), the prior's factor and then each
  // row's likelihood relative to its value at the mode; moments about the mode, then shifted.
  std::vector<double>& w = scratch;
  w.resize(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const double ti = lo + step * i;
    w[static_cast<size_t>(i)] = std::exp(0.5 * inv_prior_var * (t * t - ti * ti));
  }
  for (const ConditionalRow& r : rows) {
    const double x = r.x;
    model.multiply_likelihood(r.y, r.offset + x * t, r.offset + x * lo, x * step, w);
  }
  double z = 0, m1 = 0, m2 = 0;
  for (int i = 0; i < n; ++i) {
    const double dt = lo + step * i - t, wi = w[static_cast<size_t>(i)];
    z += wi;
    m1 += wi * dt;
    m2 += wi * dt * dt;
  }
  if (!(z > 0)) return {kNaN, kNaN};
  const double mean_dt = m1 / z;
  return {t + mean_dt, std::max(0.0, m2 / z - mean_dt * mean_dt)};
}

}  // namespace agld::sampler
