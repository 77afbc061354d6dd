// The per-coordinate step of every dynamics as data (ALGORITHMS.md section 4; issue #16).
// Between two touches of a coordinate its state s (1 number for ld: x; 2 for the underdamped
// kinds: position and momentum) follows an affine Gaussian recursion with constant
// coefficients:
//     s' = A s + b a + w,   w ~ N(0, Q),
// where a is the coordinate's constant gradient term (its aggregate a_j; with a minibatch
// part g it is g + a_j, so k = 1 is also the full step) and A, b, Q depend only on the step,
// friction, preconditioner level, prior variance and temperature (sampler/dynamics.hpp makes
// them). k steps compose to
//     (A^k, sum_{i<k} A^i b, sum_{i<k} A^i Q A^iT),
// by binary powering of the triple: (A2,b2,Q2) o (A1,b1,Q1) = (A2 A1, A2 b1 + b2, A2 Q1 A2^T + Q2).
//
// A is kept as N = A - I. A step is near the identity (A = 1 - eta/s2p for ld, eta/s2p as
// small as 1e-9): the deviation of A^k from I then lives in the last bits of A, and powers of
// A lose it k times over; the same products of N keep it (the composition below is written in
// N). A^k near 0 (a strongly contracting chain over a long gap) is then exact to rounding of
// 1, not relative to its own size: the mean's error stays eps |s|.
//
// A 1-number state is the 2-number one with its second row and column zero: one code path.
// Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace agld::sampler {

struct GaussianStep {
  int dim = 1;  // 1: x only (every entry with an index 1 is zero); 2: (position, momentum)
  // N = A - I.
  double n00 = 0, n01 = 0, n10 = 0, n11 = 0;
  // The gradient-offset vector: the mean moves by b a.
  double b0 = 0, b1 = 0;
  // The noise's covariance Q (symmetric, positive semidefinite).
  double q00 = 0, q01 = 0, q11 = 0;

  static GaussianStep identity(int dim) {
    GaussianStep s;
    s.dim = dim;
    return s;
  }
};

// `second` after `first`: (A2 A1, A2 b1 + b2, A2 Q1 A2^T + Q2), in the N form.
GaussianStep then(const GaussianStep& first, const GaussianStep& second);
// k >= 0 steps at once, by binary powering (O(log k) 2x2 work; k = 0 is the identity).
GaussianStep power(const GaussianStep& step, uint64_t k);

// A factor F of Q (F F^T = Q) for drawing the noise from standard normals z1, z2:
//     w_x = fx1 z1 + fx2 z2,   w_p = fp1 z1.
// The momentum is the pivot (the spec's svrhmc form: e_v = sqrt(Svv) z1, e_x = (Sxv/sqrt(Svv))
// z1 + sqrt(Sxx - Sxv^2/Svv) z2): every underdamped step puts its noise in the momentum. Q may
// be singular (hmc's one step: rank 1): a remaining pivot within rounding of zero (64 eps of
// Q's diagonal) is zero, never a NaN. Without momentum noise (q11 = 0) the position's noise
// is sqrt(q00) z2; a 1-number state uses z1 alone.
struct NoiseFactor {
  double fx1 = 0, fx2 = 0, fp1 = 0;
};
NoiseFactor factor(const GaussianStep& step);

// The k-step jumps of one step: a table for the short gaps, a memo for the last long one (when
// every coordinate is brought current, most share one gap: the powering runs once, not d
// times). A table entry is the jump's coefficients alone: 72 bytes for a 2-number state, 24 for
// a 1-number one (ld's table is as compact as the closed form's was: a chain's levels' tables
// share the cache with its state). A long gap k = k0 + k1 T + k2 T^2 (T the table's size) is
// composed from tabulated powers one^(q T^i), at most three of them: a coordinate touched after
// a long gap (most of them at d = 54.7M) costs two compositions, not binary powering's ~2 log2 k
// (bench/sample_bench.sh measured powering at 2.3 times the old closed form's iteration).
// Not thread-safe (the memo): one per chain.
class GaussianJumps {
 public:
  static constexpr uint64_t kTableSize = 1024;

  // k steps: x' = x + (n00 x + n01 p + b0 a) + fx1 z1 + fx2 z2,
  //          p' = p + (n10 x + n11 p + b1 a) + fp1 z1.
  struct Coef {
    double n00 = 0, n01 = 0, n10 = 0, n11 = 0, b0 = 0, b1 = 0, fx1 = 0, fx2 = 0, fp1 = 0;
  };
  // What a 1-number state reads.
  struct Coef1 {
    double n00 = 0, b0 = 0, fx1 = 0;
  };
  static Coef coef(const GaussianStep& s);

  // Gaps k < table_size come from the table (at least 1 entry: k = 0, the identity).
  explicit GaussianJumps(const GaussianStep& one, uint64_t table_size = kTableSize);

  int dim() const { return one_.dim; }
  const GaussianStep& one() const { return one_; }
  // Bytes the jumps of a state of `dim` numbers keep with a table of `table_size`.
  static uint64_t bytes(int dim, uint64_t table_size) {
    return table_size * ((dim == 1 ? sizeof(Coef1) : sizeof(Coef)) + kDigits * sizeof(GaussianStep));
  }

  // k steps' coefficients (a 1-number state's with the momentum's entries zero).
  Coef jump(uint64_t k) const {
    if (one_.dim == 2) return jump2(k);
    const Coef1& c = jump1(k);
    Coef out;
    out.n00 = c.n00, out.b0 = c.b0, out.fx1 = c.fx1;
    return out;
  }

  // k >= 0 steps of the state (x, p) with constant gradient term a, at once; z1, z2 standard
  // normals (a 1-number state: p untouched, z2 unused).
  void apply(double& x, double& p, double a, uint64_t k, double z1, double z2) const {
    if (one_.dim == 1) {
      x = apply(x, a, k, z1);
      return;
    }
    step2(jump2(k), x, p, a, z1, z2);
  }
  // A 1-number state (ld).
  double apply(double x, double a, uint64_t k, double z1) const {
    const Coef1& c = jump1(k);
    return x + (c.n00 * x + c.b0 * a) + c.fx1 * z1;
  }
  // A 2-number state with its normals drawn from `normal` (a callable): z1 always, z2 only
  // when the jump's position has noise of its own (a one-step jump of hmc and hmc2 has none:
  // its Q has rank 1), so that the draws stay a function of the state's history.
  template <class Normal>
  void apply(double& x, double& p, double a, uint64_t k, Normal& normal) const {
    const Coef& c = jump2(k);
    const double z1 = normal();
    const double z2 = c.fx2 != 0 ? normal() : 0.0;
    step2(c, x, p, a, z1, z2);
  }

 private:
  static void step2(const Coef& c, double& x, double& p, double a, double z1, double z2) {
    const double x0 = x, p0 = p;
    x = x0 + (c.n00 * x0 + c.n01 * p0 + c.b0 * a) + (c.fx1 * z1 + c.fx2 * z2);
    p = p0 + (c.n10 * x0 + c.n11 * p0 + c.b1 * a) + c.fp1 * z1;
  }
  static Coef1 coef1(const Coef& c) { return {c.n00, c.b0, c.fx1}; }
  const Coef1& jump1(uint64_t k) const {
    if (k < table1_.size()) return table1_[k];
    if (k != memo_k_) remember(k);
    return memo1_;
  }
  const Coef& jump2(uint64_t k) const {
    if (k < table2_.size()) return table2_[k];
    if (k != memo_k_) remember(k);
    return memo_;
  }
  // The memo of gap k (at least the table's size).
  void remember(uint64_t k) const;

  static constexpr int kDigits = 3;  // powers one^(q T^i), i < kDigits, q < T
  GaussianStep one_;
  uint64_t radix_ = 1;                             // T
  std::vector<GaussianStep> powers_[kDigits];     // powers_[i][q] = one^(q T^i)
  std::vector<Coef1> table1_;  // a 1-number state's (else empty)
  std::vector<Coef> table2_;   // a 2-number state's (else empty)
  mutable uint64_t memo_k_ = 0;  // the last long gap computed (0: none)
  mutable Coef memo_{};
  mutable Coef1 memo1_{};
};

}  // namespace agld::sampler
