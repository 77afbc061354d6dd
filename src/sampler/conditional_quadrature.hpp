// The mean and variance of one coordinate's conditional given all the others, by quadrature
// (docs/samplers.md, "Rao-Blackwellized moments"). With the others fixed, row i's margin is
// o_i + x_ij t, so coordinate j's conditional density is
//     p(t) ~ exp(-U(t)),  U(t) = t^2 / (2 s2p) + sum over j's rows of l(y_i, o_i + x_ij t):
// one-dimensional and, for the models here (l convex), log-concave. Under a model without a
// constant l'' it is not Gaussian, and for a coordinate in a few rows (a rare level of a
// categorical field) far from it: the prior times a few sigmoids. Its moments are computed
// from the rows themselves: Newton to the mode, then the trapezoid rule on a uniform grid over
// the interval where U is within 20 of its minimum (outside, about e^-20 of the mass). For a
// smooth integrand that decays to e^-20 at both ends the trapezoid rule converges geometrically:
// its relative error is about exp(-2 pi^2 sigma^2 / h^2) for a Gaussian of sd sigma at step h,
// and exp(-2 pi w / h) where the integrand is analytic in a strip of half-width w about the real
// line. The step is the smaller of 1.25 times the narrowest local scale the density can have,
// 1 / sqrt(1/s2p + sup l'' sum_i x_ij^2), and 2 pi w / (15 max_i |x_ij|), w the loss's
// (Model::analytic_half_width, pi for the logistic): an error near e^-12 either way, with no
// adaptivity (tests/sampler/conditional_quadrature_test.cpp: within 1e-4 of an sd and of the
// variance); 13 points or more, about 20 for a coordinate in a few rows. Internal to the
// sampler layer.
#pragma once

#include <span>
#include <vector>

#include "model/model.hpp"

namespace agld::sampler {

// One row of coordinate j's conditional: its margin without j (o_i), its value x_ij, its label.
struct ConditionalRow {
  float offset, x, y;
};

struct ConditionalMoments {
  double mean, var;
};

// The conditional's mean and variance, from its rows, the prior's precision 1/s2p (positive:
// under a flat prior the conditional of a coordinate in a few rows may be improper) and a
// starting point for Newton (the chain's own value of the coordinate). scratch: the grid's
// weights (reused from call to call).
ConditionalMoments conditional_moments(std::span<const ConditionalRow> rows, const model::Model& model,
                                       double inv_prior_var, double start, std::vector<double>& scratch);
inline ConditionalMoments conditional_moments(std::span<const ConditionalRow> rows, const model::Model& model,
                                              double inv_prior_var, double start) {
  std::vector<double> scratch;
  return conditional_moments(rows, model, inv_prior_var, start, scratch);
}

}  // namespace agld::sampler
