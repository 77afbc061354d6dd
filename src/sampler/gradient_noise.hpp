// The minibatch gradient's noise taken out of the injected noise (`--noise-correction`,
// docs/samplers.md, "Gradient noise"). A step moves a coordinate by b G and adds noise of
// variance q; the estimate G carries noise of its own, of variance B_j (the variance-reduced
// estimate's: g_j = sum over the batch of c_i x_ij, c_i = (N/n)(l'_i - shadow_i)), which adds
// b^2 B_j to the step's variance: the frequent coordinates' sds came out 5-40 % wide. One
// iteration in kEvery adds (sum_i (c_i x_ij)^2 - g_j^2 / n) n / (n - 1), an unbiased estimate
// of B_j (sampling with replacement), and (N/n) sum_i l''_i x_ij^2, of j's data curvature. At
// most every kNoisePeriod iterations, where every coordinate some row has is current, the next
// stretch injects the share T = max(1/4, 1 - f w B) of the dynamics' noise (w: noise_weight):
// - per level of M, as a noise scale sqrt(T) on the level's jumps (their k-step covariance is
//   linear in T, so the lazy jumps stay exact); B and the curvature are the level's means over
//   its coordinates in rows; a level holding a coordinate in no row keeps its noise (such a
//   coordinate is not brought current at a refresh, and has no gradient noise);
// - on the dense block from its K x K B (sampler/dense_head.hpp).
// f, the pass factor: under an order that reads each row once a pass the noise sums to about
// zero over a pass, and a coordinate that keeps rho of an offset a step keeps only the share f
// of it (pass_factor); 1 under `ra`. Each stretch's shares come from the stretch before it alone:
// B scales with how far the state moves from the snapshot, a thousand times its stationary
// value while a chain comes in from its start, and sums merely halved at each retempering kept
// that for ten stretches (the rare levels' sds 13 % narrow after a default run's burn-in).
// Internal to the sampler layer.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "agld/sample.hpp"
#include "common/state_archive.hpp"
#include "sampler/gaussian_step.hpp"

namespace agld::sampler {

// The fewest iterations between two retemperings.
inline constexpr uint64_t kNoisePeriod = 1024;

// w: a gradient noise of variance B adds w B of the position's stationary variance under the
// step's own noise, for a coordinate of data curvature h (a 2 x 2 Lyapunov equation: ld's
// eta M / (2 T) at any h; exact for every dynamics, where its mean map is stable, else b^2 / q
// of the noised component). Taking the share 1 - w B of the step's noise then keeps the
// position's stationary variance.
double noise_weight(const GaussianJumps::Coef& one, bool two, double h);
// The spectral radius of one step's mean map on a coordinate of data curvature h (the
// gradient term a = h x): the share of an offset an iteration keeps, in [0, 1].
double relaxation(const GaussianJumps::Coef& one, bool two, double h);
// The share of a zero-sum noise's stationary variance (each pass of per_pass iterations sums
// to zero, each iteration's variance (1 - 1/P) of the with-replacement estimate's) that a
// filter keeping rho a step retains, against independent noise of the estimate's variance,
// averaged over the phase within the pass. 0 at P = 1 (the batch is every row: no noise);
// (P - 1) / P at rho = 0; 0 as rho -> 1.
double pass_factor(double rho, uint64_t per_pass);

struct GradientNoiseConfig {
  bool on = false;
  uint64_t per_pass = 1;   // iterations a pass
  bool zero_sum = true;    // each row once a pass (ca, rr, br); ra: independent batches
  double pass_factor(double rho) const { return zero_sum ? agld::sampler::pass_factor(rho, per_pass) : 1.0; }
};

// Whether the run takes the gradient's noise out (r->noise_correction, and why).
Status resolve_noise_correction(ResolvedSample* r);

// One chain's sums. level_coords[l]: level l's coordinates in rows; fixed[l]: the level keeps
// its noise (a coordinate in no row, or the block's level).
class GradientNoise {
 public:
  GradientNoise(const GradientNoiseConfig& cfg, std::vector<uint64_t> level_coords, std::vector<uint8_t> fixed,
                size_t block);

  const GradientNoiseConfig& config() const { return cfg_; }
  size_t levels() const { return coords_.size(); }
  bool fixed(uint32_t l) const { return fixed_[l] != 0; }
  // A coordinate of level l in this iteration's batch: its gradient noise's variance estimated
  // from the batch (the sample variance of the rows' terms c_i x_ij, times n) and its sum of
  // (N/n) l''_i x_ij^2.
  void add(uint32_t l, double b, double h) {
    sum_b_[l] += b;
    sum_h_[l] += h;
  }
  // The block's sum of (c_i x_iB)(c_i x_iB)^T over some rows, and of g_B g_B^T over the
  // iterations (g_B the batch's gradient on the block; lower triangles).
  Eigen::MatrixXd& block_sum() { return block_; }
  Eigen::MatrixXd& block_products() { return block_gg_; }
  // The sums take one iteration in kEvery (on a small batch they cost a fifth of the
  // iteration), the block's one in kBlockEvery (about the gradient's work): after such an
  // iteration, its batch's rows.
  static constexpr uint64_t kEvery = 4;
  static bool sampled(uint64_t k) { return k % kEvery == 0; }
  void end_iteration(uint64_t rows) {
    iters_ += 1;
    rows_ += static_cast<double>(rows);
  }
  // After an iteration of the block's, its batch's rows and how many of them its sum took.
  static constexpr uint64_t kBlockEvery = 8;  // a multiple of kEvery
  static bool block_iteration(uint64_t k) { return k % kBlockEvery == 0; }
  void end_block_iteration(uint64_t rows, uint64_t block_rows) {
    block_iters_ += 1;
    block_batch_rows_ += static_cast<double>(rows);
    block_rows_ += static_cast<double>(block_rows);
  }
  bool due(uint64_t k) const { return k >= last_ + kNoisePeriod; }

  // Level l's share of its noise (its one step's coefficients).
  double share(uint32_t l, const GaussianJumps::Coef& one, bool two) const;
  // The block's B an iteration (K x K, symmetric; zero before any sum), and whether the
  // stretch measured it (some row held a block coordinate).
  Eigen::MatrixXd block_mean() const;
  bool block_measured() const { return block_rows_ > 0 && block_batch_rows_ > block_iters_; }
  // After a retempering at k: the sums start again.
  void retempered(uint64_t k);

  void save(StateWriter& out) const;
  Status load(StateReader& in);

 private:
  GradientNoiseConfig cfg_;
  std::vector<uint64_t> coords_;
  std::vector<uint8_t> fixed_;
  std::vector<double> sum_b_, sum_h_;
  Eigen::MatrixXd block_, block_gg_;
  double iters_ = 0, rows_ = 0;
  double block_iters_ = 0, block_batch_rows_ = 0, block_rows_ = 0;
  uint64_t last_ = 0;
};

}  // namespace agld::sampler
