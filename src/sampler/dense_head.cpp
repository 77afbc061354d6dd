#include "sampler/dense_head.hpp"

#include <algorithm>
#include <cmath>

namespace agld::sampler {
DenseHead::DenseHead(std::shared_ptr<const HeadMetric> metric, const DynamicsInfo& info, const DynamicsParams& params)
    : metric_(std::move(metric)),
      two_(info.state_dim == 2),
      temperature_(params.temperature),
      inv_s2p_(inverse_prior_var(params.prior_var)),
      a_(metric_->ld_step) {
  const Eigen::Index k = static_cast<Eigen::Index>(size());
  g_ = mg_ = z1_ = z2_ = lz1_ = lz2_ = Eigen::VectorXd::Zero(k);
  c_ = coef(a_);
}

GaussianJumps::Coef DenseHead::coef(double a) const {
  // a: ld's drift step; the underdamped transition's time.
  if (two_) return GaussianJumps::coef(critical_unit_step(a, temperature_));
  GaussianJumps::Coef c;
  c.b0 = -a;
  c.fx1 = std::sqrt(std::max(0.0, temperature_ * (2 * a - a * a)));
  return c;
}

double DenseHead::noise_fraction(double a, const GradientNoiseConfig& cfg) const {
  // In phi = L^-1 theta the Hessian is about I: the block relaxes at the unit step's rate.
  const GaussianJumps::Coef c = coef(a);
  return cfg.pass_factor(relaxation(c, two_, 1.0)) * noise_weight(c, two_, 1.0);
}

GaussianStep critical_unit_step(double h, double temperature) {
  // A = [[0, 1], [-1, -2]] = -I + N with N = [[1, 1], [-1, -1]], N^2 = 0: E = e^-h (I + h N).
  // F = int_0^h e^{A t} dt = [[I0 + I1, I1], [-I1, I0 - I1]], I0 = 1 - e^-h, I1 = 1 - e^-h (1 + h).
  // With r = G - x: s' = E s - F e2 (G - x) + w = (E + F e2 e1^T) s - F e2 G + w, whose first
  // column is (E00 + I1, E10 + I0 - I1) = (1, 0): G alone moves the position. Q = T (I - E E^T),
  // the stationary covariance T I less what E carries over.
  const double e = std::exp(-h), e2 = std::exp(-2 * h);
  const double i1 = -std::expm1(-h) - h * e;  // 1 - e^-h (1 + h)
  GaussianStep s;
  s.dim = 2;
  s.n01 = e * h;
  s.n11 = std::expm1(-h) - h * e;  // e^-h (1 - h) - 1
  s.b0 = -i1;
  s.b1 = -e * h;                   // -(I0 - I1)
  s.q00 = temperature * (-std::expm1(-2 * h) - e2 * (2 * h + 2 * h * h));
  s.q01 = temperature * (2 * h * h * e2);
  s.q11 = temperature * (-std::expm1(-2 * h) + e2 * (2 * h - 2 * h * h));
  return s;
}

void DenseHead::step(LazyState& s, Noise& noise) {
  const std::span<const uint32_t> js = coords();
  const Eigen::Index k = static_cast<Eigen::Index>(js.size());
  for (Eigen::Index i = 0; i < k; ++i) g_[i] += s.a(js[i]) + s.x(js[i]) * inv_s2p_;
  mg_.noalias() = metric_->m.selfadjointView<Eigen::Lower>() * g_;
  auto factor = [this](const Eigen::VectorXd& z, Eigen::VectorXd& out) {
    if (ls_.size() != 0) {
      out.noalias() = ls_ * z;
    } else {
      out.noalias() = metric_->l.triangularView<Eigen::Lower>() * z;
    }
  };
  for (Eigen::Index i = 0; i < k; ++i) z1_[i] = noise();
  factor(z1_, lz1_);
  const bool z2 = two_ && c_.fx2 != 0;
  if (z2) {
    for (Eigen::Index i = 0; i < k; ++i) z2_[i] = noise();
    factor(z2_, lz2_);
  }
  StridedSpan<double> x = s.x();
  if (!two_) {
    for (Eigen::Index i = 0; i < k; ++i) {
      double& xj = x[js[i]];
      xj = xj + (c_.n00 * xj + c_.b0 * mg_[i]) + c_.fx1 * lz1_[i];
    }
  } else {
    StridedSpan<double> p = s.p();
    for (Eigen::Index i = 0; i < k; ++i) {
      double& xj = x[js[i]];
      double& pj = p[js[i]];
      const double x0 = xj, p0 = pj;
      xj = x0 + (c_.n00 * x0 + c_.n01 * p0 + c_.b0 * mg_[i]) + (c_.fx1 * lz1_[i] + (z2 ? c_.fx2 * lz2_[i] : 0.0));
      pj = p0 + (c_.n10 * x0 + c_.n11 * p0 + c_.b1 * mg_[i]) + c_.fp1 * lz1_[i];
    }
  }
  g_.setZero();
}

void DenseHead::start_momenta(LazyState& s) const {
  if (!two_) return;
  const std::span<const uint32_t> js = coords();
  StridedSpan<double> p = s.p();
  Eigen::VectorXd v(static_cast<Eigen::Index>(js.size()));
  for (size_t i = 0; i < js.size(); ++i) v[static_cast<Eigen::Index>(i)] = p[js[i]];
  const Eigen::VectorXd q = metric_->l.triangularView<Eigen::Lower>() * v;
  for (size_t i = 0; i < js.size(); ++i) p[js[i]] = q[static_cast<Eigen::Index>(i)];
}

double DenseHead::retemper(const Eigen::MatrixXd& b, bool measured, const GradientNoiseConfig& cfg) {
  const Eigen::MatrixXd& l = metric_->l;
  const Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(l.transpose() * b * l);
  if (eig.info() != Eigen::Success) return 1;  // keep the noise as it is
  const double top = eig.eigenvalues().size() ? std::max(0.0, eig.eigenvalues().maxCoeff()) : 0.0;
  const double lo = metric_->ld_step, hi = std::max(lo, metric_->max_step);
  if (measured && hi > lo) {
    double a = lo;
    if (noise_fraction(hi, cfg) * top <= kBlockNoiseTarget) {
      a = hi;
    } else if (noise_fraction(lo, cfg) * top < kBlockNoiseTarget) {
      double up = hi;  // the fraction at lo is below the target, at up above it
      for (int i = 0; i < 50 && up - a > 1e-6 * hi; ++i) {
        const double mid = (a + up) / 2;
        (noise_fraction(mid, cfg) * top <= kBlockNoiseTarget ? a : up) = mid;
      }
    }
    a_ = a;
    c_ = coef(a_);
  }
  const double fw = noise_fraction(a_, cfg);
  Eigen::VectorXd share = (1.0 - fw * eig.eigenvalues().array()).max(kLeastNoiseShare).min(1.0);
  const Eigen::MatrixXd s = eig.eigenvectors() * share.cwiseSqrt().asDiagonal() * eig.eigenvectors().transpose();
  ls_ = l.triangularView<Eigen::Lower>() * s;
  return share.size() ? share.minCoeff() : 1.0;
}

void DenseHead::save(StateWriter& out) const {
  out.section("HEAD");
  out.f64("the block's step", a_);
  out.flag("the block's noise is tempered", ls_.size() != 0);
  if (ls_.size() != 0) out.array("the block's noise factor", std::span<const double>(ls_.data(), static_cast<size_t>(ls_.size())));
}

Status DenseHead::load(StateReader& in) {
  AGLD_RETURN_IF_ERROR(in.section("HEAD", "the block's noise"));
  double a = 0;
  AGLD_RETURN_IF_ERROR(in.f64("the block's step", &a));
  if (!(a >= metric_->ld_step && a <= std::max(metric_->ld_step, metric_->max_step))) {
    return in.corrupt("the block's step is not one the run can take");
  }
  a_ = a;
  c_ = coef(a_);
  bool tempered = false;
  AGLD_RETURN_IF_ERROR(in.flag("the block's noise is tempered", &tempered));
  if (!tempered) {
    ls_.resize(0, 0);
    return Status::ok();
  }
  const Eigen::Index k = static_cast<Eigen::Index>(size());
  ls_.resize(k, k);
  return in.array("the block's noise factor", std::span<double>(ls_.data(), static_cast<size_t>(ls_.size())));
}

}  // namespace agld::sampler
