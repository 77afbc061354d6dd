// Overdamped Langevin dynamics (ALGORITHMS.md sections 3 `ld` and 4), coordinate by
// coordinate:
//     x' = x - eta G + sqrt(2 eta) xi,   G = x / s2p + g + A_j
// where g is the minibatch part of the gradient estimate (zero for a coordinate that no
// row of the batch touches) and A_j the aggregate. Between two touches of a coordinate
// g = 0 and A_j is constant, so a step is x' = a x + b + s xi with a = 1 - eta / s2p,
// b = -eta A_j, s = sqrt(2 eta), and k skipped steps compose exactly:
//     x_k = a^k x + b (1 - a^k) / (1 - a) + sqrt(2 eta (1 - a^2k) / (1 - a^2)) zeta.
// At a temperature T the noise is sqrt(T) times that: T = 0 is gradient descent on U (no
// noise), and its jumps are the closed form of k deterministic steps (`agld optimize`).
// Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <vector>

namespace agld::sampler {

class Langevin {
 public:
  // eta > 0; prior_var > eta (else a <= 0), or infinite (a flat prior: a = 1). The jumps of
  // gaps below table_size come from a table. temperature >= 0 scales the noise's variance.
  static constexpr uint64_t kTableSize = 1024;
  Langevin(double eta, double prior_var, uint64_t table_size = kTableSize, double temperature = 1);

  double eta() const { return eta_; }
  double noise_sd() const { return sd1_; }  // sqrt(2 eta T)
  double inv_prior_var() const { return inv_s2p_; }

  // One full step of coordinate x with minibatch gradient part g and aggregate a_j.
  double step(double x, double g, double a_j, double xi) const {
    return x - eta_ * (x * inv_s2p_ + g + a_j) + sd1_ * xi;
  }

  // The coefficients of k >= 1 data-free steps: x_k = mul x + add_per_b b + sd zeta.
  struct Jump {
    double mul;   // a^k
    double gain;  // (1 - a^k) / (1 - a)  (k when a = 1)
    double sd;    // sqrt(2 eta T (1 - a^2k) / (1 - a^2))  (sqrt(2 eta T k) when a = 1)
  };
  // Short gaps come from a table; a long one is computed, and the last is remembered: when
  // every coordinate is brought current, most share one gap (they were not touched since
  // the last time), so the transcendental functions run once, not d times.
  Jump jump(uint64_t k) const {
    if (k < table_.size()) return table_[k];
    if (k != memo_k_) {
      memo_ = compute(k);
      memo_k_ = k;
    }
    return memo_;
  }

  // k >= 1 data-free steps of x with aggregate a_j at once.
  double advance(double x, double a_j, uint64_t k, double zeta) const {
    const Jump j = jump(k);
    return j.mul * x - eta_ * a_j * j.gain + j.sd * zeta;
  }

 private:
  Jump compute(uint64_t k) const;

  double eta_, inv_s2p_, temperature_, sd1_;
  double r_;        // eta / s2p = 1 - a
  double log_a_;    // log1p(-r)
  std::vector<Jump> table_;  // k < table_.size(); the common short gaps
  mutable uint64_t memo_k_ = 0;  // the last long gap computed (0: none)
  mutable Jump memo_{};
};

}  // namespace agld::sampler
