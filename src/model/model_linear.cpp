// Linear regression (ridge under the Gaussian prior): y ~ N(m, s2), l(y, m) = (y - m)^2 / (2 s2).
#include <cmath>
#include <limits>
#include <numbers>

#include "model/model.hpp"

namespace agld::model {
namespace {

class Linear final : public Model {
 public:
  explicit Linear(double noise_var)
      : s2_(noise_var), log_norm_(-0.5 * std::log(2 * std::numbers::pi * noise_var)) {}
  double dloss(double y, double m) const override { return (m - y) / s2_; }
  double d2loss(double, double) const override { return 1 / s2_; }
  double analytic_half_width() const override { return std::numeric_limits<double>::infinity(); }
  double loss(double y, double m) const override { return (y - m) * (y - m) / (2 * s2_); }
  double log_lik(double y, double m) const override { return log_norm_ - loss(y, m); }
  double predict(double m) const override { return m; }
  double curvature() const override { return 1 / s2_; }
  bool constant_curvature() const override { return true; }
  bool binary() const override { return false; }

 private:
  double s2_;
  double log_norm_;
};

}  // namespace

std::unique_ptr<Model> make_linear(const SampleOptions& options) {
  return std::make_unique<Linear>(options.noise_var);
}

}  // namespace agld::model
