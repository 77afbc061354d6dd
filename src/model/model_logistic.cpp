// Logistic regression: y in {-1, +1}, l(y, m) = log(1 + exp(-y m)).
#include <cmath>

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
  double log_lik(double y, double m) const override { return -softplus(-y * m); }
  double predict(double m) const override { return sigmoid(m); }
  double curvature() const override { return 0.25; }  // sigmoid' <= 1/4
  bool binary() const override { return true; }
};

}  // namespace

std::unique_ptr<Model> make_logistic(const SampleOptions&) { return std::make_unique<Logistic>(); }

}  // namespace agld::model
