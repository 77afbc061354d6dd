#include "sampler/gradient_noise.hpp"

#include <algorithm>
#include <cmath>
#include <complex>
#include <fmt/format.h>

namespace agld::sampler {

namespace {
// The stationary position variance of s' = A s + w, w ~ N(0, Q), A the step's mean map at
// curvature h (a 2 x 2 discrete Lyapunov equation in its three unknowns; NaN if unstable).
double stationary_position(const GaussianJumps::Coef& c, bool two, double h, double q00, double q01, double q11) {
  const double a00 = 1 + c.n00 + c.b0 * h;
  if (!two) return std::abs(a00) < 1 ? q00 / (1 - a00 * a00) : std::nan("");
  const double a01 = c.n01, a10 = c.n10 + c.b1 * h, a11 = 1 + c.n11;
  Eigen::Matrix3d m;
  m << 1 - a00 * a00, -2 * a00 * a01, -a01 * a01,  //
      -a00 * a10, 1 - (a00 * a11 + a01 * a10), -a01 * a11,  //
      -a10 * a10, -2 * a10 * a11, 1 - a11 * a11;
  const Eigen::Vector3d s = m.fullPivLu().solve(Eigen::Vector3d(q00, q01, q11));
  return s(0);
}
}  // namespace

double noise_weight(const GaussianJumps::Coef& c, bool two, double h) {
  const double b = two ? c.b1 : c.b0, f = two ? c.fp1 : c.fx1;
  if (f == 0 && c.fx2 == 0) return 0;  // no noise to take from
  if (relaxation(c, two, h) < 1) {
    // Q from its factor (fx1 z1 + fx2 z2, fp1 z1), and the gradient's b b^T.
    const double from_q = stationary_position(c, two, h, c.fx1 * c.fx1 + c.fx2 * c.fx2, c.fx1 * c.fp1, c.fp1 * c.fp1);
    const double from_b = stationary_position(c, two, h, c.b0 * c.b0, c.b0 * c.b1, c.b1 * c.b1);
    if (std::isfinite(from_q) && std::isfinite(from_b) && from_q > 0) return from_b / from_q;
  }
  return f != 0 ? (b * b) / (f * f) : 0;
}

double relaxation(const GaussianJumps::Coef& one, bool two, double h) {
  const double a00 = 1 + one.n00 + one.b0 * h;
  if (!two) return std::min(1.0, std::abs(a00));
  const double a01 = one.n01, a10 = one.n10 + one.b1 * h, a11 = 1 + one.n11;
  const double half_trace = (a00 + a11) / 2, det = a00 * a11 - a01 * a10;
  const std::complex<double> root = std::sqrt(std::complex<double>(half_trace * half_trace - det));
  return std::min(1.0, std::max(std::abs(half_trace + root), std::abs(half_trace - root)));
}

double pass_factor(double rho, uint64_t per_pass) {
  if (per_pass <= 1) return 0;
  const double p = static_cast<double>(per_pass);
  rho = std::clamp(rho, 0.0, 1.0);
  if (rho >= 1) return 0;
  // The state at phase phi of a pass holds the pass's first phi noises with weights rho^(phi-1)
  // ... 1, and each earlier whole pass with weights rho^phi times the same. Noises of one pass
  // have covariance -sigma^2 / (P - 1) (zero sum); sigma^2 = (1 - 1/P) B. The variance is then
  // B / P (P / (1 - rho^2) - sum over the passes of (their weights' sum)^2), averaged over phi:
  // the powers' means g1 = mean rho^phi, g2 = mean rho^(2 phi).
  const double e = 1 - rho, lr = std::log1p(-e);
  const double one_p = -std::expm1(p * lr), one_2p = -std::expm1(2 * p * lr);  // 1 - rho^P, 1 - rho^2P
  const double g1 = one_p / (p * e), g2 = one_2p / (p * e * (1 + rho));
  const double whole = one_p / (e * e * (2 - one_p));  // a whole pass's (sum)^2, summed over the passes
  const double sums = (1 - 2 * g1 + g2) / (e * e) + g2 * whole;
  return std::clamp(1 - e * (1 + rho) * sums / p, 0.0, 1.0);
}

Status resolve_noise_correction(ResolvedSample* r) {
  const std::string& asked = r->given.noise_correction;
  r->noise_correction = false;
  if (asked != "auto" && asked != "off") {
    return Status::invalid_argument("--noise-correction must be auto or off, got '" + asked + "'");
  }
  if (asked == "off") {
    r->noise_correction_rule = "off (--noise-correction off)";
  } else if (r->snapshot == "full") {
    r->noise_correction_rule = "none: full gradients have no noise";
  } else {
    r->noise_correction = true;
    r->noise_correction_rule = fmt::format(
        "each level's and the block's share of the noise less the gradient's, at least {:g}, every {} iterations "
        "or more ({})",
        kLeastNoiseShare, kNoisePeriod, r->access == "ra" ? "independent batches" : "each row once a pass");
  }
  return Status::ok();
}

GradientNoise::GradientNoise(const GradientNoiseConfig& cfg, std::vector<uint64_t> level_coords,
                             std::vector<uint8_t> fixed, size_t block)
    : cfg_(cfg), coords_(std::move(level_coords)), fixed_(std::move(fixed)) {
  sum_b_.assign(coords_.size(), 0.0);
  sum_h_.assign(coords_.size(), 0.0);
  const Eigen::Index k = static_cast<Eigen::Index>(block);
  block_ = block_gg_ = Eigen::MatrixXd::Zero(k, k);
}

double GradientNoise::share(uint32_t l, const GaussianJumps::Coef& one, bool two) const {
  if (fixed(l) || coords_[l] == 0 || iters_ == 0) return 1;
  const double n = iters_ * static_cast<double>(coords_[l]);
  const double b = sum_b_[l] / n, h = sum_h_[l] / n;
  const double f = cfg_.pass_factor(relaxation(one, two, h));
  return std::max(kLeastNoiseShare, 1 - f * noise_weight(one, two, h) * b);
}

Eigen::MatrixXd GradientNoise::block_mean() const {
  if (!block_measured()) return Eigen::MatrixXd::Zero(block_.rows(), block_.cols());
  // The rows the sum took stand for the batches' rows; less the mean's part, g g^T / n (the
  // sample variance's n / (n - 1) with it).
  const double n = block_batch_rows_ / block_iters_;
  Eigen::MatrixXd sq = block_.selfadjointView<Eigen::Lower>();
  Eigen::MatrixXd gg = block_gg_.selfadjointView<Eigen::Lower>();
  return (sq * (block_batch_rows_ / block_rows_) - gg / n) * (n / ((n - 1) * block_iters_));
}

void GradientNoise::retempered(uint64_t k) {
  std::fill(sum_b_.begin(), sum_b_.end(), 0.0);
  std::fill(sum_h_.begin(), sum_h_.end(), 0.0);
  block_.setZero();
  block_gg_.setZero();
  iters_ = rows_ = 0;
  block_iters_ = block_batch_rows_ = block_rows_ = 0;
  last_ = k;
}

void GradientNoise::save(StateWriter& out) const {
  out.section("GNOI");
  out.array("the gradient noise's sums", std::span<const double>(sum_b_));
  out.array("the gradient noise's curvatures", std::span<const double>(sum_h_));
  out.array("the block's gradient noise", std::span<const double>(block_.data(), static_cast<size_t>(block_.size())));
  out.array("the block's gradient products", std::span<const double>(block_gg_.data(), static_cast<size_t>(block_gg_.size())));
  out.f64("the gradient noise's iterations", iters_);
  out.f64("the gradient noise's rows", rows_);
  out.f64("the gradient noise's block iterations", block_iters_);
  out.f64("the gradient noise's block batch rows", block_batch_rows_);
  out.f64("the gradient noise's block rows", block_rows_);
  out.u64("the gradient noise's last retempering", last_);
}

Status GradientNoise::load(StateReader& in) {
  AGLD_RETURN_IF_ERROR(in.section("GNOI", "the gradient noise's sums"));
  AGLD_RETURN_IF_ERROR(in.array("the gradient noise's sums", std::span<double>(sum_b_)));
  AGLD_RETURN_IF_ERROR(in.array("the gradient noise's curvatures", std::span<double>(sum_h_)));
  AGLD_RETURN_IF_ERROR(
      in.array("the block's gradient noise", std::span<double>(block_.data(), static_cast<size_t>(block_.size()))));
  AGLD_RETURN_IF_ERROR(in.array("the block's gradient products",
                                std::span<double>(block_gg_.data(), static_cast<size_t>(block_gg_.size()))));
  AGLD_RETURN_IF_ERROR(in.f64("the gradient noise's iterations", &iters_));
  AGLD_RETURN_IF_ERROR(in.f64("the gradient noise's rows", &rows_));
  AGLD_RETURN_IF_ERROR(in.f64("the gradient noise's block iterations", &block_iters_));
  AGLD_RETURN_IF_ERROR(in.f64("the gradient noise's block batch rows", &block_batch_rows_));
  AGLD_RETURN_IF_ERROR(in.f64("the gradient noise's block rows", &block_rows_));
  return in.u64("the gradient noise's last retempering", &last_);
}

}  // namespace agld::sampler
