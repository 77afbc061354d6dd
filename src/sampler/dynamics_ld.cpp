// ld, overdamped Langevin (ALGORITHMS.md section 3, AGLD eq. 5; section 6 in theta):
//     x_j' = x_j - eta M_j G_j + sqrt(2 eta M_j) xi_j,   G_j = x_j / s2p + a
// so, with eta_j = eta M_j (the level's step, as Langevin takes it):
//     A = 1 - eta_j / s2p,  b = -eta_j,  Q = 2 eta_j T.
// Its k-step jumps match the closed form of ALGORITHMS.md section 4 (tests: Dynamics.LdIsTheClosedFormJump).
#include "sampler/dynamics.hpp"

namespace agld::sampler {

GaussianStep ld_step(const DynamicsParams& p) {
  const double eta = p.step * p.precondition;
  GaussianStep s = GaussianStep::identity(1);
  s.n00 = -(eta * inverse_prior_var(p.prior_var));
  s.b0 = -eta;
  s.q00 = 2 * eta * p.temperature;
  return s;
}

}  // namespace agld::sampler
