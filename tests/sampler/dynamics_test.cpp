// Every registered dynamics' step as data (sampler/dynamics.hpp, gaussian_step.hpp): its one
// step against ALGORITHMS.md's equations written out here; its k-step jump against k single
// steps composed in extended precision; the sampled jump's mean and covariance; the
// stationary covariance (a discrete Lyapunov equation solved here) and its limit as the step
// goes to 0; ld's jumps against its closed form; temperature 0 as gradient descent. The tests
// iterate the registry: a dynamics added
// to it without a reference below fails.
#include "sampler/dynamics.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <boost/random/normal_distribution.hpp>
#include <cmath>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "sampler/gaussian_step.hpp"
#include "literal_dynamics.hpp"
#include "test_support.hpp"

namespace agld::sampler {
namespace {
namespace dynamics_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr double kInf = std::numeric_limits<double>::infinity();

// Parameter sets that keep every dynamics stable: levels M from 1e-4 to 1, a flat prior, a
// temperature below 1.
std::vector<DynamicsParams> parameter_sets() {
  std::vector<DynamicsParams> out;
  auto add = [&](double step, double m, double s2p, double friction, double t) {
    DynamicsParams p;
    p.step = step;
    p.precondition = m;
    p.prior_var = s2p;
    p.friction = friction;
    p.temperature = t;
    out.push_back(p);
  };
  add(0.01, 1, 1, 1, 1);
  add(0.05, 0.2, 10, 2, 1);
  add(1e-3, 1e-4, 1, 0.5, 1);
  add(0.2, 1, 4, 1.5, 0.25);
  add(0.02, 0.7, kInf, 1, 1);
  return out;
}

std::string describe(const DynamicsInfo& d, const DynamicsParams& p) {
  return std::string(d.name) + " step " + std::to_string(p.step) + " M " +
         std::to_string(p.precondition) + " s2p " + std::to_string(p.prior_var) + " friction " +
         std::to_string(p.friction) + " T " + std::to_string(p.temperature);
}


TEST(Dynamics, RegistryNamesAreUniqueAndFound) {
  const auto all = registered_dynamics();
  ASSERT_GE(all.size(), 4u);
  for (size_t i = 0; i < all.size(); ++i) {
    EXPECT_EQ(find_dynamics(all[i].name), &all[i]);
    for (size_t j = 0; j < i; ++j) EXPECT_NE(all[i].name, all[j].name);
    DynamicsParams q;
    q.step = 0.01;
    EXPECT_EQ(all[i].step(q).dim, all[i].state_dim) << all[i].name;
  }
  EXPECT_EQ(find_dynamics("nope"), nullptr);
}

// One jump of one step is the spec's step: the triple transcribes ALGORITHMS.md.
TEST(Dynamics, OneStepIsTheSpecsStep) {
  for (const DynamicsInfo& d : registered_dynamics()) {
    for (const DynamicsParams& q : parameter_sets()) {
      GaussianJumps jumps(d.step(q), 4);
      for (double a : {0.0, -1.3}) {
        State ref{0.8, -0.6};
        ASSERT_TRUE(literal_step(d.name, q, ref, a, 0.9, -0.4))
            << d.name << ": no literal step in this test";
        double x = 0.8, p = -0.6;
        jumps.apply(x, p, a, 1, 0.9, -0.4);
        EXPECT_NEAR(x, ref.x, 1e-13) << describe(d, q);
        if (d.state_dim == 2) {
          EXPECT_NEAR(p, ref.p, 1e-13) << describe(d, q);
        }
      }
    }
  }
}

// k single steps composed one at a time in long double: s_{t+1} = A s_t + b a + w.
struct Ref {
  long double n[2][2] = {{0, 0}, {0, 0}}, b[2] = {0, 0}, q[2][2] = {{0, 0}, {0, 0}};
};
void step_ref(Ref& r, const GaussianStep& one) {
  const long double n[2][2] = {{one.n00, one.n01}, {one.n10, one.n11}};
  const long double a[2][2] = {{1 + n[0][0], n[0][1]}, {n[1][0], 1 + n[1][1]}};
  Ref o;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      o.n[i][j] = r.n[i][j] + n[i][j] + n[i][0] * r.n[0][j] + n[i][1] * r.n[1][j];
    }
    o.b[i] = a[i][0] * r.b[0] + a[i][1] * r.b[1] + (i == 0 ? one.b0 : one.b1);
  }
  const long double q1[2][2] = {{one.q00, one.q01}, {one.q01, one.q11}};
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 2; ++j) {
      long double v = q1[i][j];
      for (int k = 0; k < 2; ++k) {
        for (int l = 0; l < 2; ++l) v += a[i][k] * r.q[k][l] * a[j][l];
      }
      o.q[i][j] = v;
    }
  }
  r = o;
}

// |x - y| <= tol * scale for every entry of a part, scale its largest reference entry; *worst
// gets the largest |x - y| / scale.
void expect_part(std::array<double, 4> got, std::array<long double, 4> ref, double tol,
                 const std::string& what, double* worst) {
  long double scale = 0;
  for (long double v : ref) scale = std::max(scale, std::abs(v));
  for (size_t i = 0; i < 4; ++i) {
    if (scale > 0) {
      *worst = std::max(
          *worst, static_cast<double>(std::abs(static_cast<long double>(got[i]) - ref[i]) / scale));
    }
    EXPECT_LE(std::abs(static_cast<long double>(got[i]) - ref[i]), tol * scale + 1e-300L)
        << what << " entry " << i << ": " << got[i] << " vs " << static_cast<double>(ref[i]);
  }
}

TEST(Dynamics, JumpMatchesComposedSteps) {
  // Past the table (1024) the jumps are composed from the digits' powers (k = k0 + k1 T + k2 T^2).
  const std::vector<uint64_t> ks = {1, 2, 3, 7, 64, 1000, 1023, 1024, 1025, 123457, 1048576, 1049601, 2000003};
  for (const DynamicsInfo& d : registered_dynamics()) {
    double worst = 0;
    for (const DynamicsParams& q : parameter_sets()) {
      const GaussianStep one = d.step(q);
      GaussianJumps jumps(one);
      Ref r;
      uint64_t t = 0;
      for (uint64_t k : ks) {
        for (; t < k; ++t) step_ref(r, one);
        const std::string what = describe(d, q) + " k " + std::to_string(k);
        const GaussianStep s = power(one, k);
        expect_part({s.n00, s.n01, s.n10, s.n11}, {r.n[0][0], r.n[0][1], r.n[1][0], r.n[1][1]},
                    1e-9, what + " A - I", &worst);
        expect_part({s.b0, s.b1, 0, 0}, {r.b[0], r.b[1], 0, 0}, 1e-9, what + " b", &worst);
        expect_part({s.q00, s.q01, s.q11, 0}, {r.q[0][0], r.q[0][1], r.q[1][1], 0}, 1e-9,
                    what + " Q", &worst);
        // The jumps' table and memo: the same coefficients, Q as its factor F F^T.
        const GaussianJumps::Coef c = jumps.jump(k);
        expect_part({c.n00, c.n01, c.n10, c.n11}, {r.n[0][0], r.n[0][1], r.n[1][0], r.n[1][1]},
                    1e-9, what + " table A - I", &worst);
        expect_part({c.b0, c.b1, 0, 0}, {r.b[0], r.b[1], 0, 0}, 1e-9, what + " table b", &worst);
        expect_part({c.fx1 * c.fx1 + c.fx2 * c.fx2, c.fx1 * c.fp1, c.fp1 * c.fp1, 0},
                    {r.q[0][0], r.q[0][1], r.q[1][1], 0}, 1e-9, what + " table Q", &worst);
      }
    }
    std::cout << d.name << ": largest error of a jump against its composed steps " << worst
              << " (of the part's largest entry)\n";
  }
}

// Jumps composed from the digits' powers, and past T^3 steps from binary powering on top, match
// binary powering of the one step: a table of 4 (T^3 = 64) at gaps to 10^7.
TEST(GaussianJumps, DigitsOfTheGapComposeToThePower) {
  for (const DynamicsInfo& d : registered_dynamics()) {
    for (const DynamicsParams& q : parameter_sets()) {
      const GaussianStep one = d.step(q);
      for (uint64_t table : {4u, 256u}) {
        GaussianJumps jumps(one, table);
        for (uint64_t k : {5u, 63u, 64u, 65u, 4097u, 65535u, 65536u, 1000003u, 9999991u}) {
          const GaussianJumps::Coef c = jumps.jump(k), r = GaussianJumps::coef(power(one, k));
          const std::string what = describe(d, q) + " table " + std::to_string(table) + " k " + std::to_string(k);
          for (auto [got, want] : {std::pair{c.n00, r.n00}, {c.n01, r.n01}, {c.n10, r.n10}, {c.n11, r.n11},
                                   {c.b0, r.b0}, {c.b1, r.b1}, {c.fx1, r.fx1}, {c.fx2, r.fx2}, {c.fp1, r.fp1}}) {
            const double scale = std::max({std::abs(r.n00) + 1, std::abs(r.b0), std::abs(r.b1), std::abs(r.fx1),
                                           std::abs(r.fp1)});
            EXPECT_NEAR(got, want, 1e-11 * scale) << what;
          }
        }
      }
    }
  }
}

// ld's k steps in closed form (ALGORITHMS.md section 4), long double: with a = 1 - eta M / s2p,
//     mean = a^k x - eta M a_j (1 - a^k) / (1 - a),  var = 2 eta M T (1 - a^2k) / (1 - a^2)
// (a flat prior: x - eta M a_j k and 2 eta M T k).
struct LdClosedForm {
  long double mean, var;
};
LdClosedForm ld_closed_form(double eta_m, double s2p, double t, double x, double a_j, uint64_t k) {
  const long double kk = static_cast<long double>(k), e = eta_m;
  if (std::isinf(s2p)) return {x - e * a_j * kk, 2 * e * t * kk};
  const long double r = e / s2p, log_a = std::log1p(-r);
  const long double one_minus_ak = -std::expm1(kk * log_a), one_minus_a2k = -std::expm1(2 * kk * log_a);
  return {(1 - one_minus_ak) * x - e * a_j * one_minus_ak / r, 2 * e * t * one_minus_a2k / (r * (2 - r))};
}

// ld's triple reproduces the closed-form jump: the mean and variance of k steps to 1e-12
// relative, at many gaps and levels.
TEST(Dynamics, LdIsTheClosedFormJump) {
  const DynamicsInfo* ld = find_dynamics("ld");
  ASSERT_NE(ld, nullptr);
  const double x = 2.0, a = -1.5;
  double worst = 0;
  for (double eta : {1e-7, 1e-4, 1e-2, 0.3}) {
    for (double m : {1.0, 0.5, 1e-3}) {
      for (double s2p : {1.0, 10.0, kInf}) {
        for (double t : {1.0, 0.25}) {
          DynamicsParams q;
          q.step = eta;
          q.precondition = m;
          q.prior_var = s2p;
          q.temperature = t;
          GaussianJumps jumps(ld->step(q));
          for (uint64_t k :
               {1u, 2u, 3u, 7u, 64u, 100u, 1000u, 1023u, 1024u, 1025u, 5000u, 100000u, 123457u}) {
            const LdClosedForm c = ld_closed_form(eta * m, s2p, t, x, a, k);
            const double mean_c = static_cast<double>(c.mean), var_c = static_cast<double>(c.var);
            const double mean = jumps.apply(x, a, k, 0.0), var = std::pow(jumps.jump(k).fx1, 2);
            EXPECT_NEAR(mean, mean_c, 1e-12 * std::abs(mean_c)) << eta << " " << m << " " << s2p << " " << k;
            EXPECT_NEAR(var, var_c, 1e-12 * var_c) << eta << " " << m << " " << s2p << " " << k;
            worst = std::max({worst, std::abs(mean / mean_c - 1), std::abs(var / var_c - 1)});
          }
        }
      }
    }
  }
  std::cout << "ld against its closed form: largest relative difference " << worst << "\n";
}

// At temperature T the noise's covariance is T times the dynamics' own; at 0 a jump is
// exactly k noise-free steps (ld: gradient descent, `agld optimize`'s lazy steps).
TEST(Dynamics, TemperatureScalesTheNoiseAndZeroIsDeterministic) {
  for (const DynamicsInfo& d : registered_dynamics()) {
    for (double s2p : {1.0, 10.0, kInf}) {
      DynamicsParams q;
      q.step = 0.01;
      q.precondition = 0.5;
      q.prior_var = s2p;
      q.friction = 1.5;
      GaussianJumps hot(d.step(q));
      q.temperature = 0.25;
      GaussianJumps warm(d.step(q));
      q.temperature = 0;
      GaussianJumps cold(d.step(q));
      for (uint64_t k : {1u, 7u, 1023u, 1024u, 5000u, 100000u}) {
        const std::string what = std::string(d.name) + " s2p " + std::to_string(s2p) + " k " + std::to_string(k);
        const auto h = hot.jump(k);
        const auto w = warm.jump(k);
        const auto c = cold.jump(k);
        EXPECT_EQ(c.fx1, 0.0) << what;
        EXPECT_EQ(c.fx2, 0.0) << what;
        EXPECT_EQ(c.fp1, 0.0) << what;
        EXPECT_NEAR(w.fx1, 0.5 * h.fx1, 1e-12 * std::abs(h.fx1)) << what;
        EXPECT_NEAR(w.fp1, 0.5 * h.fp1, 1e-12 * std::abs(h.fp1)) << what;
        EXPECT_EQ(c.n00, h.n00) << what;
        EXPECT_EQ(c.b0, h.b0) << what;
        // k noise-free single steps against the jump.
        double x = 1.7, p = -0.3, xk = 1.7, pk = -0.3;
        for (uint64_t t = 0; t < k; ++t) cold.apply(x, p, -0.4, 1, 0.0, 0.0);
        cold.apply(xk, pk, -0.4, k, 123.0, -45.0);  // the normals are multiplied by zero
        EXPECT_NEAR(xk, x, 1e-9 * (1 + std::abs(x))) << what;
        if (d.state_dim == 2) {
          EXPECT_NEAR(pk, p, 1e-9 * (1 + std::abs(p))) << what;
        }
      }
    }
  }
}

// svrhmc's covariances keep their precision as gamma eta -> 0 (the series) and across the
// switch to the closed form at gamma eta = 1: against long double, the naive forms where they
// do not cancel (y >= 0.1), the series of Sxx otherwise (Svv, Sxv by expm1 in long double).
TEST(Dynamics, SvrhmcCovariancesKeepTheirPrecision) {
  const DynamicsInfo* svr = find_dynamics("svrhmc");
  ASSERT_NE(svr, nullptr);
  for (double y : {1e-12, 1e-8, 1e-5, 1e-3, 0.05, 0.3, 0.99, 1.0, 1.01, 3.0, 30.0}) {
    DynamicsParams q;
    q.step = 1;
    q.friction = y;
    q.inverse_mass = 1.3;
    const GaussianStep s = svr->step(q);
    const long double u = 1.3L, yl = y;
    const long double svv = -u * std::expm1(-2 * yl),
                      sxv = (u / yl) * std::expm1(-yl) * std::expm1(-yl);
    long double sxx = 0;
    if (y >= 0.1) {
      sxx = (u / (yl * yl)) * (2 * yl + 4 * std::exp(-yl) - std::exp(-2 * yl) - 3);
    } else {                              // u sum_{n >= 3} (-1)^n (4 - 2^n) y^(n-2) / n!
      long double term = u * yl * 4 / 6;  // n = 3
      for (int n = 3; n < 40; ++n) {
        sxx += term;
        term *= -yl * (4 - std::pow(2.0L, n + 1)) / ((4 - std::pow(2.0L, n)) * (n + 1));
      }
    }
    EXPECT_NEAR(s.q11, static_cast<double>(svv), 1e-14 * static_cast<double>(svv)) << y;
    EXPECT_NEAR(s.q01, static_cast<double>(sxv), 1e-14 * static_cast<double>(sxv)) << y;
    EXPECT_NEAR(s.q00, static_cast<double>(sxx), 1e-13 * static_cast<double>(sxx)) << y;
  }
}

// The factor of a singular or nearly singular Q: F F^T = Q, finite, no NaN from a pivot that
// rounding made negative.
TEST(GaussianStep, FactorToleratesSingularQ) {
  for (double c : {0.0, 1e-300, 1e-20, 1e-8, 0.3}) {
    for (double scale : {1e-200, 1e-6, 1.0, 1e100}) {
      GaussianStep s = GaussianStep::identity(2);
      // v v^T * scale with v = (0.37, 1), plus c on the position.
      s.q00 = scale * (0.37 * 0.37 + c);
      s.q01 = scale * 0.37;
      s.q11 = scale;
      const NoiseFactor f = factor(s);
      ASSERT_TRUE(std::isfinite(f.fx1) && std::isfinite(f.fx2) && std::isfinite(f.fp1));
      EXPECT_NEAR(f.fx1 * f.fx1 + f.fx2 * f.fx2, s.q00, 1e-14 * s.q00);
      EXPECT_NEAR(f.fx1 * f.fp1, s.q01, 1e-14 * s.q01);
      EXPECT_NEAR(f.fp1 * f.fp1, s.q11, 1e-14 * s.q11);
    }
  }
  GaussianStep none = GaussianStep::identity(2);  // no momentum noise: the position's alone
  none.q00 = 4;
  const NoiseFactor f = factor(none);
  EXPECT_EQ(f.fp1, 0.0);
  EXPECT_EQ(f.fx2, 2.0);
  EXPECT_EQ(factor(GaussianStep::identity(2)).fx2, 0.0);  // temperature 0
}

// The sampled k-step transition has the closed-form mean and covariance: z-tests with the
// Monte Carlo error of n draws (the covariance's entries: sd sqrt((Q_ii Q_jj + Q_ij^2) / n)).
TEST(Dynamics, SampledJumpHasClosedFormMoments) {
  const uint64_t seed = test::test_seed(16);
  std::mt19937_64 rng(seed);
  boost::random::normal_distribution<double> normal;
  const int n = 100000;
  const double x0 = 1.5, p0 = -0.8, a = 0.7, z = 4.5;
  for (const DynamicsInfo& d : registered_dynamics()) {
    DynamicsParams q;
    q.step = 0.05;
    q.precondition = 0.6;
    q.prior_var = 2;
    q.friction = 1.2;
    GaussianJumps jumps(d.step(q), 64);
    for (uint64_t k : {1u, 5u, 63u, 300u, 5000u}) {
      const GaussianStep s = power(d.step(q), k);
      const double mx = x0 + s.n00 * x0 + s.n01 * p0 + s.b0 * a;
      const double mp = p0 + s.n10 * x0 + s.n11 * p0 + s.b1 * a;
      double sx = 0, sp = 0, sxx = 0, sxp = 0, spp = 0;
      for (int i = 0; i < n; ++i) {
        double x = x0, p = p0;
        const double z1 = normal(rng), z2 = d.state_dim == 2 ? normal(rng) : 0.0;
        jumps.apply(x, p, a, k, z1, z2);
        x -= mx, p -= mp;  // centred at the closed-form mean
        sx += x, sp += p, sxx += x * x, sxp += x * p, spp += p * p;
      }
      const std::string what = std::string(d.name) + " k " + std::to_string(k);
      EXPECT_NEAR(sx / n, 0, z * std::sqrt(s.q00 / n)) << what;
      EXPECT_NEAR(sxx / n, s.q00, z * std::sqrt(2 * s.q00 * s.q00 / n)) << what;
      if (d.state_dim == 1) continue;
      EXPECT_NEAR(sp / n, 0, z * std::sqrt(s.q11 / n)) << what;
      EXPECT_NEAR(spp / n, s.q11, z * std::sqrt(2 * s.q11 * s.q11 / n)) << what;
      EXPECT_NEAR(sxp / n, s.q01, z * std::sqrt((s.q00 * s.q11 + s.q01 * s.q01) / n)) << what;
    }
  }
}

// The stationary covariance P of the one-step chain with a = 0: P = A P A^T + Q, the discrete
// Lyapunov equation, solved as the 3x3 linear system in (P00, P01, P11), long double.
std::array<long double, 3> lyapunov(const GaussianStep& s) {
  const long double a00 = 1 + static_cast<long double>(s.n00), a01 = s.n01, a10 = s.n10,
                    a11 = 1 + static_cast<long double>(s.n11);
  if (s.dim == 1) return {s.q00 / (1 - a00 * a00), 0, 0};
  // (A P A^T)_00 = a00^2 P00 + 2 a00 a01 P01 + a01^2 P11, and likewise.
  long double m[3][4] = {
      {1 - a00 * a00, -2 * a00 * a01, -a01 * a01, s.q00},
      {-a00 * a10, 1 - (a00 * a11 + a01 * a10), -a01 * a11, s.q01},
      {-a10 * a10, -2 * a10 * a11, 1 - a11 * a11, s.q11},
  };
  for (int c = 0; c < 3; ++c) {  // Gauss-Jordan with partial pivoting
    int piv = c;
    for (int r = c + 1; r < 3; ++r) {
      if (std::abs(m[r][c]) > std::abs(m[piv][c])) piv = r;
    }
    for (int j = 0; j < 4; ++j) std::swap(m[c][j], m[piv][j]);
    for (int r = 0; r < 3; ++r) {
      if (r == c) continue;
      const long double f = m[r][c] / m[c][c];
      for (int j = c; j < 4; ++j) m[r][j] -= f * m[c][j];
    }
  }
  return {m[0][3] / m[0][0], m[1][3] / m[1][1], m[2][3] / m[2][2]};
}

TEST(Dynamics, LongJumpReachesTheStationaryCovariance) {
  for (const DynamicsInfo& d : registered_dynamics()) {
    for (const DynamicsParams& q : parameter_sets()) {
      if (std::isinf(q.prior_var)) continue;  // no stationary law
      const GaussianStep one = d.step(q);
      const auto p = lyapunov(one);
      const GaussianStep far = power(one, uint64_t{1} << 50);
      const std::string what = describe(d, q);
      const double scale = std::max(far.q00, far.q11);
      EXPECT_NEAR(far.q00, static_cast<double>(p[0]), 1e-9 * scale) << what;
      EXPECT_NEAR(far.q01, static_cast<double>(p[1]), 1e-9 * scale) << what;
      EXPECT_NEAR(far.q11, static_cast<double>(p[2]), 1e-9 * scale) << what;
      EXPECT_NEAR(far.n00, -1, 1e-12) << what;  // the start is forgotten
      EXPECT_NEAR(far.n11, d.state_dim == 2 ? -1 : 0, 1e-12) << what;
    }
  }
}

// As the step goes to 0 the stationary law tends to the continuous-time one: the position's
// variance to T s2p, the momentum's to T times the mass's inverse (1; u for svrhmc), and
// no covariance between them. The error shrinks with the step (first order at least).
TEST(Dynamics, SmallStepStationaryLawIsThePosterior) {
  for (const DynamicsInfo& d : registered_dynamics()) {
    for (double m : {1.0, 0.3}) {
      for (double t : {1.0, 0.5}) {
        DynamicsParams q;
        q.precondition = m;
        q.prior_var = 3;
        q.friction = 1;
        q.temperature = t;
        q.inverse_mass = d.name == "svrhmc" ? 0.8 : 1;
        double last = kInf;
        for (double h : {0.1, 0.01, 0.001}) {
          q.step = h;
          const auto p = lyapunov(d.step(q));
          const double ex = std::abs(static_cast<double>(p[0]) / (t * q.prior_var) - 1);
          const double ep =
              d.state_dim == 2 ? std::abs(static_cast<double>(p[2]) / (t * q.inverse_mass) - 1) : 0;
          const double ec =
              std::abs(static_cast<double>(p[1])) / (t * std::sqrt(q.prior_var * q.inverse_mass));
          const double err = std::max({ex, ep, ec});
          const std::string what = std::string(d.name) + " M " + std::to_string(m) + " T " +
                                   std::to_string(t) + " h " + std::to_string(h);
          EXPECT_LT(err, 2 * h) << what;
          EXPECT_LT(err, last / 5) << what;
          last = err;
          if (h == 0.001) std::cout << what << ": stationary law off by " << err << " relative\n";
        }
      }
    }
  }
}

}  // namespace dynamics_test
}  // namespace
}  // namespace agld::sampler
