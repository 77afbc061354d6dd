// svrhmc (ALGORITHMS.md section 3, Zou, Xu and Gu 2018; gamma friction, u inverse mass, step
// eta; section 6 in theta, momentum in phi units, r = sqrt(M_j)):
//     x' = x + eta v + e_x
//     v' = v - gamma eta v - eta u G(x) + e_v          (G at the OLD x)
//     Svv = u (1 - e^{-2 gamma eta})
//     Sxv = (u / gamma) (1 - e^{-gamma eta})^2
//     Sxx = (u / gamma^2) (2 gamma eta + 4 e^{-gamma eta} - e^{-2 gamma eta} - 3)
// In theta: x' = x + eta r v + r e_x, v' = v - gamma eta v - eta u r G(x) + e_v. With
// G = x / s2p + a:
//     A - I = [ 0                  eta r      ]   b = [ 0          ]   Q = T [ M_j Sxx  r Sxv ]
//             [ -eta u r / s2p     -gamma eta ]       [ -eta u r   ]         [ r Sxv    Svv   ]
// The covariances with expm1, and Sxx, whose closed form cancels to (2/3) u gamma eta^3 as
// gamma eta -> 0, by its series for y = gamma eta < 1:
//     Sxx = u eta^2 sum_{n >= 3} (-1)^n (4 - 2^n) y^(n-2) / n!
#include <cmath>

#include "sampler/dynamics.hpp"

namespace agld::sampler {

namespace {
// (2 y + 4 e^{-y} - e^{-2y} - 3) / y^2.
double sxx_over_eta2(double y) {
  if (y < 1) {
    double sum = 0, pow2 = 8, ypow = y, fact = 6, sign = -1;  // the n = 3 term's parts
    for (int n = 3; n <= 30; ++n) {
      sum += sign * (4 - pow2) * ypow / fact;
      pow2 *= 2;
      ypow *= y;
      fact *= n + 1;
      sign = -sign;
    }
    return sum;
  }
  return (2 * y + 4 * std::expm1(-y) - std::expm1(-2 * y)) / (y * y);
}
}  // namespace

GaussianStep svrhmc_step(const DynamicsParams& p) {
  const double eta = p.step, r = std::sqrt(p.precondition), lambda = inverse_prior_var(p.prior_var);
  const double gamma = p.friction, u = p.inverse_mass, t = p.temperature, y = gamma * eta;
  const double m1 = std::expm1(-y);
  const double svv = -u * std::expm1(-2 * y);
  const double sxv = u * eta * (m1 * m1 / y);  // (u / gamma) m1^2
  const double sxx = u * eta * eta * sxx_over_eta2(y);
  GaussianStep s = GaussianStep::identity(2);
  s.n01 = eta * r;
  s.n10 = -(eta * u * r * lambda);
  s.n11 = -y;
  s.b1 = -(eta * u * r);
  s.q00 = t * p.precondition * sxx;
  s.q01 = t * r * sxv;
  s.q11 = t * svv;
  return s;
}

}  // namespace agld::sampler
