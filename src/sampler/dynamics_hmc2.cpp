// hmc2, the symmetric splitting (ALGORITHMS.md section 3, Li et al. Alg. 3/4; section 6 in
// theta, momentum in phi units; friction D_f, step h):
//     z = theta + (h/2) p;   G at z;  snapshot points are z
//     p' = e^{-D_f h/2} ( e^{-D_f h/2} p - h G(z) + sqrt(2 D_f h) xi )
//     theta' = theta + (h/2)(p + p')
// In theta (r = sqrt(M_j)): z = theta + (h/2) r p, G(z) -> r G(z),
// theta' = theta + (h/2) r (p + p'). The lazy map: with G(z) = z / s2p + a (a constant
// between visits; with data, a = g(z) + a_j), E = e^{-D_f h/2}, kappa = E h^2 M_j / (2 s2p),
// sigma^2 = 2 D_f h T:
//     p'     = -(E h r / s2p) theta + (E^2 - kappa) p - E h r a + E sigma xi
//     theta' = (1 - kappa) theta + (h r/2)(1 + E^2 - kappa) p - (E h^2 M_j / 2) a
//              + (h r/2) E sigma xi
// so A - I = [ -kappa              (h r/2)(2 + (E^2 - 1) - kappa) ]   b = [ -E h^2 M_j / 2 ]
//            [ -E h r / s2p        (E^2 - 1) - kappa              ]       [ -E h r         ]
// with E^2 - 1 = expm1(-D_f h), and Q = E^2 sigma^2 [ h^2 M_j / 4   h r / 2 ]  (rank 1).
//                                                  [ h r / 2       1       ]
#include <cmath>

#include "sampler/dynamics.hpp"

namespace agld::sampler {

GaussianStep hmc2_step(const DynamicsParams& p) {
  const double h = p.step, r = std::sqrt(p.precondition), lambda = inverse_prior_var(p.prior_var);
  const double dh = p.friction * h, hr = h * r, hhm = h * h * p.precondition;
  const double e = std::exp(-dh / 2), e2m1 = std::expm1(-dh);
  const double kappa = e * hhm * lambda / 2;
  const double var = (e * e) * 2 * dh * p.temperature;  // E^2 sigma^2
  GaussianStep s = GaussianStep::identity(2);
  s.n00 = -kappa;
  s.n01 = (hr / 2) * ((2 + e2m1) - kappa);
  s.n10 = -(e * hr * lambda);
  s.n11 = e2m1 - kappa;
  s.b0 = -(e * hhm / 2);
  s.b1 = -(e * hr);
  s.q00 = var * hhm / 4;
  s.q01 = var * hr / 2;
  s.q11 = var;
  return s;
}

// z = theta + (h/2) sqrt(M_j) p.
double hmc2_eval_shift(const DynamicsParams& p) { return p.step * std::sqrt(p.precondition) / 2; }

}  // namespace agld::sampler
