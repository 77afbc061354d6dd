// hmc, underdamped Euler (ALGORITHMS.md section 3, Li et al. Alg. 1/2; section 6 in theta,
// momentum in phi units; friction D_f, step h):
//     p_j' = (1 - D_f h) p_j - h sqrt(M_j) G_j + sqrt(2 D_f h) xi_j
//     theta_j' = theta_j + h sqrt(M_j) p_j'          (uses the NEW p)
// With G_j = theta_j / s2p + a, r = sqrt(M_j), sigma^2 = 2 D_f h T, state (theta, p):
//     A = [ 1 - h^2 M_j / s2p    h r (1 - D_f h) ]      b = [ -h^2 M_j ]
//         [ -h r / s2p           1 - D_f h       ]          [ -h r     ]
//     Q = sigma^2 [ h^2 M_j   h r ]
//                 [ h r       1   ]
// (the position's noise is h r times the momentum's: Q has rank 1).
#include <cmath>

#include "sampler/dynamics.hpp"

namespace agld::sampler {

GaussianStep hmc_step(const DynamicsParams& p) {
  const double h = p.step, r = std::sqrt(p.precondition), lambda = inverse_prior_var(p.prior_var);
  const double dh = p.friction * h, hr = h * r, hhm = h * h * p.precondition;
  const double var = 2 * dh * p.temperature;  // sigma^2
  GaussianStep s = GaussianStep::identity(2);
  s.n00 = -(hhm * lambda);
  s.n01 = hr * (1 - dh);
  s.n10 = -(hr * lambda);
  s.n11 = -dh;
  s.b0 = -hhm;
  s.b1 = -hr;
  s.q00 = var * hhm;
  s.q01 = var * hr;
  s.q11 = var;
  return s;
}

}  // namespace agld::sampler
