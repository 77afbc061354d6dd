// ALGORITHMS.md section 3's dynamics written out literally, one coordinate and one step, for
// the tests' references (tests/sampler/dynamics_test.cpp checks the engine's steps against
// it; tests/sampler/lazy_dense_test.cpp's naive engine runs on it), and the registry's names.
#pragma once

#include <cmath>
#include <string>
#include <string_view>
#include <vector>

#include "sampler/dynamics.hpp"

namespace agld::sampler {

// ALGORITHMS.md section 3 (section 6 in theta, momentum in phi units), one step literally,
// with G = theta / s2p + a at the point the spec names; xi, z1, z2 standard normals.
struct State {
  double x = 0, p = 0;
};
inline bool literal_step(std::string_view name, const DynamicsParams& q, State& s, double a, double z1,
                  double z2) {
  const double lambda = std::isinf(q.prior_var) ? 0 : 1 / q.prior_var,
               r = std::sqrt(q.precondition);
  const double t = q.temperature;
  auto grad = [&](double theta) { return theta * lambda + a; };
  if (name == "ld") {  // x' = x - eta G(x) + sqrt(2 eta) xi
    const double eta = q.step * q.precondition;
    s.x = s.x - eta * grad(s.x) + std::sqrt(2 * eta * t) * z1;
    return true;
  }
  const double h = q.step, df = q.friction;
  if (name == "hmc") {  // p' = (1 - D h) p - h G(theta) + sqrt(2 D h) xi; theta' = theta + h p'
    const double pn = (1 - df * h) * s.p - h * r * grad(s.x) + std::sqrt(2 * df * h * t) * z1;
    s.x = s.x + h * r * pn;
    s.p = pn;
    return true;
  }
  if (name == "hmc2") {  // z = theta + (h/2) p; p' = e^{-Dh/2}(e^{-Dh/2} p - h G(z) + sqrt(2Dh) xi)
    const double z = s.x + (h / 2) * r * s.p, e = std::exp(-df * h / 2);
    const double pn = e * (e * s.p - h * r * grad(z) + std::sqrt(2 * df * h * t) * z1);
    s.x = s.x + (h / 2) * r * (s.p + pn);
    s.p = pn;
    return true;
  }
  if (name == "svrhmc") {  // the naive forms, in long double (they cancel as gamma eta -> 0)
    const long double eta = h, g = df, u = q.inverse_mass;
    const long double svv = u * (1 - std::exp(-2 * g * eta));
    const long double sxv = (u / g) * (1 - std::exp(-g * eta)) * (1 - std::exp(-g * eta));
    const long double sxx =
        (u / (g * g)) * (2 * g * eta + 4 * std::exp(-g * eta) - std::exp(-2 * g * eta) - 3);
    const double ev = static_cast<double>(std::sqrt(t * svv) * z1);
    const double ex = static_cast<double>(
        std::sqrt(t) * ((sxv / std::sqrt(svv)) * z1 + std::sqrt(sxx - sxv * sxv / svv) * z2));
    const double xn = s.x + h * r * s.p + r * ex;
    s.p = s.p - df * h * s.p - h * q.inverse_mass * r * grad(s.x) + ev;
    s.x = xn;
    return true;
  }
  return false;
}

// Where the literal step evaluates the gradient: theta + shift p (hmc2's midpoint z).
inline double literal_eval_shift(std::string_view name, const DynamicsParams& q) {
  return name == "hmc2" ? (q.step / 2) * std::sqrt(q.precondition) : 0.0;
}

// The registry's names, for tests parameterized by the dynamics (a new one cannot go untested).
inline std::vector<std::string> dynamics_names() {
  std::vector<std::string> out;
  for (const auto& d : registered_dynamics()) out.emplace_back(d.name);
  return out;
}

}  // namespace agld::sampler
