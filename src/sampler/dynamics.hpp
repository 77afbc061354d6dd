// Dynamics (ALGORITHMS.md section 3): what one iteration does with the gradient estimate G,
// coordinate by coordinate. Each dynamics is its single step as data: the affine Gaussian map
// of one coordinate's state (sampler/gaussian_step.hpp) with the gradient's constant term a
// as input, from which the lazy k-step jumps follow (GaussianJumps), the same code for all.
//
// A coordinate's G is x / s2p + g + a_j (prior exact, g the minibatch part, a_j the
// aggregate); the step below takes the prior into A and the rest as a = g + a_j: between two
// touches of the coordinate g = 0 and a = a_j is constant. hmc2 evaluates G at the midpoint
// z = theta + (h/2) sqrt(M) p: its triple takes z's prior term into A, and a must then be
// g(z) + a_j.
//
// Preconditioning (section 6): coordinate j's level has M_j; positions are in theta, momenta
// in phi units (theta = sqrt(M_j) phi), so the momentum's stationary variance is the mass
// (1; u for svrhmc) and the position's the prior variance, at any M_j.
//
// Adding a dynamics: a file src/sampler/dynamics_<name>.cpp with its step's factory, and one
// line in the table of src/sampler/dynamics.cpp. Internal to the sampler layer.
#pragma once

#include <span>
#include <string_view>

#include "sampler/gaussian_step.hpp"

namespace agld::sampler {

struct DynamicsParams {
  double step = 0;          // eta (ld, svrhmc), h (hmc, hmc2); > 0
  double precondition = 1;  // M_j, the coordinate's level; > 0
  double prior_var = 1;     // s2p; infinite: a flat prior
  double temperature = 1;   // T >= 0 scales the noise's covariance (0: no noise)
  double friction = 1;      // D_f (hmc, hmc2), gamma (svrhmc); > 0; ld has none
  double inverse_mass = 1;  // u (svrhmc); the others have unit mass in phi units
};

using DynamicsStepFactory = GaussianStep (*)(const DynamicsParams& params);
// Where the gradient is evaluated: theta + c p for the returned c (hmc2's midpoint z; null:
// at theta).
using DynamicsShiftFactory = double (*)(const DynamicsParams& params);

struct DynamicsInfo {
  std::string_view name;
  std::string_view summary;
  int state_dim;  // numbers a coordinate: 1 (x) or 2 (position, momentum)
  DynamicsStepFactory step;
  DynamicsShiftFactory eval_shift = nullptr;
};

// A dynamics' coordinate: its step (the lazy jumps) and where its gradient is evaluated.
struct CoordinateDynamics {
  GaussianJumps jumps;
  double eval_shift = 0;  // G at theta + eval_shift p
  bool still = false;     // never moves on its own (the dense block's level): no jump, no noise
  CoordinateDynamics(const DynamicsInfo& info, const DynamicsParams& p, uint64_t table_size)
      : jumps(info.step(p), table_size), eval_shift(info.eval_shift ? info.eval_shift(p) : 0.0) {}
  // The dense block's level: it never moves on its own (the block's step moves it), and its
  // gradient is at theta.
  static CoordinateDynamics still_level(int dim) {
    CoordinateDynamics d(GaussianStep::identity(dim));
    d.still = true;
    return d;
  }

 private:
  explicit CoordinateDynamics(const GaussianStep& step) : jumps(step, 1) {}
};

std::span<const DynamicsInfo> registered_dynamics();
const DynamicsInfo* find_dynamics(std::string_view name);
// The dynamics of a method that names none (SNAPSHOT-ACCESS): the table's first.
const DynamicsInfo& default_dynamics();

// 1 / s2p, 0 for a flat prior (as Langevin).
double inverse_prior_var(double prior_var);

}  // namespace agld::sampler
