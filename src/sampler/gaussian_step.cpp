#include "sampler/gaussian_step.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace agld::sampler {

GaussianStep then(const GaussianStep& f, const GaussianStep& s) {
  GaussianStep r;
  r.dim = std::max(f.dim, s.dim);
  // A2 A1 - I = N1 + N2 + N2 N1.
  r.n00 = (f.n00 + s.n00) + (s.n00 * f.n00 + s.n01 * f.n10);
  r.n01 = (f.n01 + s.n01) + (s.n00 * f.n01 + s.n01 * f.n11);
  r.n10 = (f.n10 + s.n10) + (s.n10 * f.n00 + s.n11 * f.n10);
  r.n11 = (f.n11 + s.n11) + (s.n10 * f.n01 + s.n11 * f.n11);
  // A2 b1 + b2 = b1 + b2 + N2 b1.
  r.b0 = (f.b0 + s.b0) + (s.n00 * f.b0 + s.n01 * f.b1);
  r.b1 = (f.b1 + s.b1) + (s.n10 * f.b0 + s.n11 * f.b1);
  // A2 Q1 A2^T + Q2 = Q1 + Q2 + (M + M^T + M N2^T), M = N2 Q1.
  const double m00 = s.n00 * f.q00 + s.n01 * f.q01, m01 = s.n00 * f.q01 + s.n01 * f.q11;
  const double m10 = s.n10 * f.q00 + s.n11 * f.q01, m11 = s.n10 * f.q01 + s.n11 * f.q11;
  r.q00 = (f.q00 + s.q00) + (2 * m00 + (m00 * s.n00 + m01 * s.n01));
  r.q01 = (f.q01 + s.q01) + ((m01 + m10) + (m00 * s.n10 + m01 * s.n11));
  r.q11 = (f.q11 + s.q11) + (2 * m11 + (m10 * s.n10 + m11 * s.n11));
  return r;
}

GaussianStep power(const GaussianStep& step, uint64_t k) {
  GaussianStep result = GaussianStep::identity(step.dim);
  GaussianStep base = step;
  // Powers of one step commute, so the order in which the bits are taken does not matter.
  while (k) {
    if (k & 1) result = then(result, base);
    k >>= 1;
    if (k) base = then(base, base);
  }
  return result;
}

NoiseFactor factor(const GaussianStep& s) {
  NoiseFactor f;
  const double q00 = std::max(s.q00, 0.0), q11 = std::max(s.q11, 0.0);
  if (s.dim == 1) {
    f.fx1 = std::sqrt(q00);
    return f;
  }
  if (q11 == 0) {
    f.fx2 = std::sqrt(q00);
    return f;
  }
  f.fp1 = std::sqrt(q11);
  f.fx1 = s.q01 / f.fp1;
  // The position's variance given the momentum's noise: q00 - q01^2 / q11. Below rounding of
  // the diagonal it is zero (a rank-1 Q: hmc's one step).
  const double rest = q00 - f.fx1 * f.fx1;
  const double floor = 64 * std::numeric_limits<double>::epsilon() * q00;
  f.fx2 = rest > floor ? std::sqrt(rest) : 0.0;
  return f;
}

GaussianJumps::Coef GaussianJumps::coef(const GaussianStep& s) {
  const NoiseFactor f = factor(s);
  Coef c;
  c.n00 = s.n00, c.n01 = s.n01, c.n10 = s.n10, c.n11 = s.n11;
  c.b0 = s.b0, c.b1 = s.b1;
  c.fx1 = f.fx1, c.fx2 = f.fx2, c.fp1 = f.fp1;
  return c;
}

namespace {
// base^q for q < n: out[q] = out[q/2] twice (and one more base when q is odd), O(log q)
// compositions deep, as binary powering, not q deep.
std::vector<GaussianStep> halving_powers(const GaussianStep& base, uint64_t n) {
  std::vector<GaussianStep> out(n);
  out[0] = GaussianStep::identity(base.dim);
  for (uint64_t q = 1; q < n; ++q) {
    GaussianStep s = then(out[q / 2], out[q / 2]);
    if (q & 1) s = then(s, base);
    out[q] = s;
  }
  return out;
}
}  // namespace

GaussianJumps::GaussianJumps(const GaussianStep& one, uint64_t table_size) : one_(one) {
  const uint64_t n = std::max<uint64_t>(table_size, 1);
  // The table's steps, kept as the first digit's powers.
  std::vector<GaussianStep> steps = halving_powers(one_, n);
  for (const GaussianStep& s : steps) {
    if (one.dim == 1) {
      table1_.push_back(coef1(coef(s)));
    } else {
      table2_.push_back(coef(s));
    }
  }
  // The digits' powers: powers_[i][q] = one^(q T^i), from one^(T^i) = one^(T^(i-1) (T - T/2))
  // after one^(T^(i-1) T/2).
  radix_ = n;
  if (n < 2) return;
  powers_[0] = std::move(steps);
  for (int i = 1; i < kDigits; ++i) {
    powers_[i] = halving_powers(then(powers_[i - 1][n / 2], powers_[i - 1][n - n / 2]), n);
  }
}

void GaussianJumps::remember(uint64_t k) const {
  GaussianStep s = GaussianStep::identity(one_.dim);  // then(identity, x) is x exactly
  if (radix_ < 2) {
    s = power(one_, k);
  } else {
    uint64_t rest = k;
    bool first = true;  // the first nonzero digit's power is copied, not composed with the identity
    for (int i = 0; i < kDigits && rest > 0; ++i) {
      const uint64_t q = rest % radix_;
      rest /= radix_;
      if (!q) continue;
      s = first ? powers_[i][q] : then(s, powers_[i][q]);
      first = false;
    }
    if (rest) {  // beyond T^kDigits steps (LazyState's gaps stay below 2^24: not reached there)
      const GaussianStep top = then(powers_[kDigits - 1][radix_ - 1], powers_[kDigits - 1][1]);  // one^(T^kDigits)
      s = then(s, power(top, rest));
    }
  }
  memo_ = coef(s);
  memo1_ = coef1(memo_);
  memo_k_ = k;
}

}  // namespace agld::sampler
