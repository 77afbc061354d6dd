// Logistic regression: y in {-1, +1}, l(y, m) = log(1 + exp(-y m)).
#include <algorithm>
#include <cmath>
#include <numbers>

#include "model/model.hpp"

namespace agld::model {
namespace {

// log(1 + exp(z)) without overflow or loss of precision.
inline double softplus(double z) { return z > 0 ? z + std::log1p(std::exp(-z)) : std::log1p(std::exp(z)); }
// 1 / (1 + exp(-z)) without overflow.
inline double sigmoid(double z) {
  if (z >= 0) return 1 / (1 + std::exp(-z));
  const double e = std::exp(z);
  return e / (1 + e);
}

class Logistic final : public Model {
 public:
  double dloss(double y, double m) const override { return -y * sigmoid(-y * m); }
  // sigmoid(m) sigmoid(-m), from the smaller of the two (no cancellation in 1 - p).
  double d2loss(double, double m) const override {
    const double p = sigmoid(-std::abs(m));
    return p * (1 - p);
  }
  double loss(double y, double m) const override { return softplus(-y * m); }
  // With z = -y m and e = exp(-|z|): sigmoid(z) from e, one exp.
  void loss_slopes(double y, double m, double* l1, double* l2) const override {
    const double z = -y * m, e = std::exp(-std::abs(z));
    const double small = e / (1 + e);  // sigmoid(-|z|)
    *l1 = -y * (z >= 0 ? 1 - small : small);
    *l2 = small * (1 - small);
  }
  // exp(-l(y, m)) = 1 / (1 + e), e = exp(-y m), and on a uniform grid e is geometric: one exp
  // a row, then a product a point, walked from the grid's end where e is smallest (so that an
  // overflow to infinity, a likelihood of 0, is the limit it stands for).
  void multiply_likelihood(double y, double m_ref, double m0, double dm, std::span<double> w) const override {
    const size_t n = w.size();
    const double e_ref = std::exp(-y * m_ref);
    if (n == 0) return;
    if (!std::isfinite(e_ref)) {
      Model::multiply_likelihood(y, m_ref, m0, dm, w);
      return;
    }
    const double up = -y * dm;  // log e rises by this a point
    const bool rising = up >= 0;
    const double q = std::exp(std::abs(up));
    double e = std::exp(-y * (rising ? m0 : m0 + static_cast<double>(n - 1) * dm));
    for (size_t k = 0; k < n; ++k) {
      const size_t i = rising ? k : n - 1 - k;
      w[i] *= (1 + e_ref) / (1 + e);
      e *= q;
    }
  }
  double log_lik(double y, double m) const override { return -softplus(-y * m); }
  double predict(double m) const override { return sigmoid(m); }
  double curvature() const override { return 0.25; }  // sigmoid' <= 1/4
  double analytic_half_width() const override { return std::numbers::pi; }  // 1 + e^z = 0 at z = +-i pi
  bool binary() const override { return true; }
};

}  // namespace

std::unique_ptr<Model> make_logistic(const SampleOptions&) { return std::make_unique<Logistic>(); }

}  // namespace agld::model
