// Models (ALGORITHMS.md section 1): a generalised linear model is its per-row loss
// l(y, m) of the margin m = theta . x. The sampler needs l' (the gradient is l' times the
// row), l itself (for lp__), the likelihood's log density (test metrics), the prediction,
// a bound on l'' (the default step), and l'' itself (the Hessian's diagonal at the mode, for
// `agld optimize`'s Laplace sd). Internal to the library.
//
// Adding a model: a file src/model/model_<name>.cpp with a Model subclass and its factory,
// and one line in the table of src/model/models.cpp.
#pragma once

#include <cmath>
#include <memory>
#include <span>
#include <string_view>

#include "agld/sample.hpp"

namespace agld::model {

class Model {
 public:
  virtual ~Model() = default;
  // s = l'(y, m): the gradient of the row's loss is s times the row.
  virtual double dloss(double y, double m) const = 0;
  // l''(y, m): the Hessian of the row's loss is l'' times x x'.
  virtual double d2loss(double y, double m) const = 0;
  // l(y, m) = -log p(y | m) up to a constant that does not depend on theta.
  virtual double loss(double y, double m) const = 0;
  // l' and l'' at once (a model may share their work: the quadrature of a conditional,
  // sampler/conditional_quadrature.hpp, calls it for every row of a coordinate at each Newton step).
  virtual void loss_slopes(double y, double m, double* l1, double* l2) const {
    *l1 = dloss(y, m);
    *l2 = d2loss(y, m);
  }
  // log p(y | m) with every constant (the test log-likelihood).
  virtual double log_lik(double y, double m) const = 0;
  // What the posterior predictive averages: P(y = +1 | m) for a binary model, E[y | m]
  // for a real one.
  virtual double predict(double m) const = 0;
  // sup over m of l''(y, m): the default step divides by it (docs/samplers.md).
  virtual double curvature() const = 0;
  // w[i] *= exp(l(y, m_ref) - l(y, m0 + i dm)) for every i: a row's likelihood on a uniform grid
  // of margins, relative to its value at m_ref (the quadrature of a conditional). A model may
  // do it with fewer transcendental functions than one loss a point.
  virtual void multiply_likelihood(double y, double m_ref, double m0, double dm, std::span<double> w) const {
    const double l_ref = loss(y, m_ref);
    for (size_t i = 0; i < w.size(); ++i) w[i] *= std::exp(l_ref - loss(y, m0 + static_cast<double>(i) * dm));
  }
  // How far off the real axis l(y, m) stays analytic in m: the half-width of that strip of the
  // complex plane (infinite for the linear model's parabola; pi for the logistic's softplus,
  // whose nearest singularities are at m = +-i pi). The trapezoid rule's error on a grid of
  // step h decays like exp(-2 pi width / h): the quadrature of a conditional
  // (sampler/conditional_quadrature.hpp) sets its grid by it.
  virtual double analytic_half_width() const = 0;
  // Whether l'' is curvature() at every margin (a Gaussian likelihood): each coordinate's
  // conditional given the others is then Gaussian with a precision the per-feature statistics
  // give, which the Rao-Blackwellized moments use (sampler/rao_blackwell.hpp).
  virtual bool constant_curvature() const { return false; }
  // Whether labels are +1 / -1 (the store must hold binary labels).
  virtual bool binary() const = 0;
};

using ModelFactory = std::unique_ptr<Model> (*)(const SampleOptions& options);

struct ModelInfo {
  std::string_view name;
  std::string_view summary;
  ModelFactory make;
};

std::span<const ModelInfo> registered_models();
const ModelInfo* find_model(std::string_view name);

}  // namespace agld::model
