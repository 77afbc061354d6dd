// The dense block of the metric (docs/samplers.md, "A dense metric"): K coordinates (the
// intercept and the most frequent features, or all d) with a K x K metric M = L L^T, stepped
// together every iteration. In phi = L^-1 theta the block has the identity metric, and each
// phi coordinate steps by one triple (sampler/gaussian_step.hpp) whose gradient term is the
// whole G; mapped back by L, the step is
//     theta' = theta + n00 theta + n01 q + b0 M G + L (fx1 z1 + fx2 z2)
//     q'     = q + n10 theta + n11 q + b1 M G + fp1 L z1
// with q = L p the momentum in theta units and G the whole gradient: the data's estimate, the
// aggregate's entry and the prior x / s2p (M couples the prior across the block, so no triple
// takes it in). ld's block steps
//     theta' = theta - a M G + sqrt(T (2a - a^2)) L z,
// its noise's variance 2a - a^2 instead of 2a: with G = M^-1 (theta - mu) (a Gaussian whose
// Hessian M^-1 is) the step is then exact at any a <= 1, where 2a alone would inflate every
// variance by 1 / (1 - a/2). Where the Hessian differs from M^-1 by the factor lambda along a
// direction, the variance's relative error is about a (1 - lambda) / 2: the preconditioner
// chooses a from that (HeadMetric::ld_step). The underdamped dynamics step the block (in phi)
// with the exact transition over time a of the critically damped diffusion on the unit
// Gaussian, dx = p dt, dp = -(x + r) dt - 2 p dt + 2 sqrt(T) dW, r = G - x held constant over
// the step (critical_unit_step): exact, again, where M^-1 is the Hessian, and its gradient at
// theta (no midpoint). hmc, hmc2 and svrhmc differ only off the block.
// Internal to the sampler layer.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <span>

#include "sampler/dynamics.hpp"
#include "sampler/gradient_noise.hpp"
#include "sampler/lazy_state.hpp"
#include "sampler/preconditioner.hpp"

namespace agld::sampler {

// The transition above as a triple, its gradient term the whole G (sampler/gaussian_step.hpp).
GaussianStep critical_unit_step(double h, double temperature);

class DenseHead {
 public:
  // The step is metric->ld_step; params gives the temperature and the prior.
  DenseHead(std::shared_ptr<const HeadMetric> metric, const DynamicsInfo& info, const DynamicsParams& params);

  size_t size() const { return metric_->coords.size(); }
  std::span<const uint32_t> coords() const { return metric_->coords; }
  // The level the lazy state gives the block: it never moves on its own (no jump, no noise);
  // its gradient point is theta.
  CoordinateDynamics frozen_level() const { return CoordinateDynamics::still_level(two_ ? 2 : 1); }

  // The data's part of the block's gradient, data(j) for each of its coordinates j, before step().
  template <class Data>
  void gather(Data data) {
    const std::span<const uint32_t> js = coords();
    for (size_t i = 0; i < js.size(); ++i) g_[static_cast<Eigen::Index>(i)] = data(js[i]);
  }
  // One step of the block in s (its data gradient gathered, its aggregate entries the old A).
  void step(LazyState& s, Noise& noise);
  // The momenta's stationary law in theta units: q = L p for the block's p ~ N(0, T) as drawn.
  void start_momenta(LazyState& s) const;

  // The gradient's noise taken out (sampler/gradient_noise.hpp): with B the block's gradient
  // noise an iteration (K x K, theta units; `measured`: some row of the stretch had the block)
  // and f the pass factor at the block's relaxation, the noise is L S z from then on,
  // S S^T = I - f w L^T B L with each eigenvalue at least kLeastNoiseShare (w: noise_weight of
  // the block's step at unit curvature). First the step: the largest in [ld_step, max_step]
  // at which f w lambda_max(L^T B L) is at most kBlockNoiseTarget (f w grows with the step,
  // B barely: it is the rows' spread about the snapshot). Returns the least eigenvalue kept.
  double retemper(const Eigen::MatrixXd& b, bool measured, const GradientNoiseConfig& cfg);
  // The step the block takes now.
  double step_size() const { return a_; }
  // L S, or empty while the noise is the dynamics' (the checkpoint's part of the block).
  void save(StateWriter& out) const;
  Status load(StateReader& in);

 private:
  // The triple's coefficients at step a.
  GaussianJumps::Coef coef(double a) const;
  // f w at step a: the share of a unit gradient noise's variance the step keeps.
  double noise_fraction(double a, const GradientNoiseConfig& cfg) const;

  std::shared_ptr<const HeadMetric> metric_;
  GaussianJumps::Coef c_;
  bool two_;
  double temperature_, inv_s2p_;
  double a_;
  Eigen::VectorXd g_, mg_, z1_, z2_, lz1_, lz2_;
  Eigen::MatrixXd ls_;  // L S (empty: L alone)
};

}  // namespace agld::sampler
