// Every registered model: l' and l'' agree with central differences of l and l', l'' stays
// within the curvature bound the default steps divide by, and l'' is finite and non-negative
// far out in the tails (where a naive sigmoid product would lose it or overflow).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model/model.hpp"

namespace agld::model {
namespace {
namespace model_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(Models, DerivativesMatchDifferencesAndTheCurvatureBound) {
  SampleOptions o;
  o.noise_var = 0.7;
  for (const ModelInfo& info : registered_models()) {
    const auto model = info.make(o);
    const double labels[] = {-1.0, 1.0, 0.3, 2.5};
    for (double y : labels) {
      if (model->binary() && std::abs(y) != 1) continue;
      for (double m = -6; m <= 6; m += 0.37) {
        const double h = 1e-5;
        const double d1 = (model->loss(y, m + h) - model->loss(y, m - h)) / (2 * h);
        const double d2 = (model->dloss(y, m + h) - model->dloss(y, m - h)) / (2 * h);
        EXPECT_NEAR(model->dloss(y, m), d1, 1e-7 * (1 + std::abs(d1))) << info.name << " y " << y << " m " << m;
        EXPECT_NEAR(model->d2loss(y, m), d2, 1e-7 * (1 + std::abs(d2))) << info.name << " y " << y << " m " << m;
        EXPECT_LE(model->d2loss(y, m), model->curvature() * (1 + 1e-12)) << info.name;
        EXPECT_GE(model->d2loss(y, m), 0) << info.name;
      }
      for (double m : {-800.0, -40.0, 40.0, 800.0}) {
        const double d2 = model->d2loss(y, m);
        EXPECT_TRUE(std::isfinite(d2) && d2 >= 0) << info.name << " m " << m << ": " << d2;
      }
    }
  }
}

// loss_slopes (one call for the two, which a model may compute together) is dloss and
// d2loss, in the tails too.
TEST(Models, LossSlopesAreTheTwoFunctions) {
  SampleOptions o;
  o.noise_var = 0.7;
  for (const ModelInfo& info : registered_models()) {
    const auto model = info.make(o);
    for (double y : {-1.0, 1.0, 0.3, 2.5}) {
      if (model->binary() && std::abs(y) != 1) continue;
      for (double m : {-800.0, -40.0, -6.0, -0.37, 0.0, 0.37, 6.0, 40.0, 800.0}) {
        double l1 = 0, l2 = 0;
        model->loss_slopes(y, m, &l1, &l2);
        EXPECT_NEAR(l1, model->dloss(y, m), 1e-14 * (1 + std::abs(l1))) << info.name << " y " << y << " m " << m;
        EXPECT_NEAR(l2, model->d2loss(y, m), 1e-14 * (1 + std::abs(l2))) << info.name << " y " << y << " m " << m;
      }
    }
  }
}

// multiply_likelihood (a row's likelihood on a grid of margins, relative to a reference) is
// exp(l(m_ref) - l(m)) point by point, on grids rising and falling, into the tails.
TEST(Models, LikelihoodOnAGridIsThePointwiseRatio) {
  SampleOptions o;
  o.noise_var = 0.7;
  for (const ModelInfo& info : registered_models()) {
    const auto model = info.make(o);
    for (double y : {-1.0, 1.0, 0.3}) {
      if (model->binary() && std::abs(y) != 1) continue;
      for (double dm : {0.37, -0.37, 2.5, -2.5}) {
        for (double m_ref : {-3.0, 0.0, 5.0}) {
          std::vector<double> w(40, 2.0);
          const double m0 = -25 * std::abs(dm) / dm + 1;
          model->multiply_likelihood(y, m_ref, m0, dm, w);
          for (size_t i = 0; i < w.size(); ++i) {
            const double m = m0 + static_cast<double>(i) * dm;
            const double want = 2 * std::exp(model->loss(y, m_ref) - model->loss(y, m));
            EXPECT_NEAR(w[i], want, 1e-12 * want + 1e-300) << info.name << " y " << y << " m " << m << " dm " << dm;
          }
        }
      }
    }
  }
}

TEST(Models, LogisticCurvatureIsThatOfTheSigmoid) {
  const auto logistic = find_model("logistic")->make(SampleOptions{});
  EXPECT_DOUBLE_EQ(logistic->d2loss(1, 0), 0.25);
  EXPECT_DOUBLE_EQ(logistic->d2loss(-1, 0), 0.25);
  // p (1 - p) with p = sigmoid(-40): about e^-40, not 0 from 1 - (1 - e^-40).
  EXPECT_NEAR(logistic->d2loss(1, 40) / std::exp(-40.0), 1.0, 1e-12);
  EXPECT_EQ(logistic->d2loss(1, 40), logistic->d2loss(-1, -40));
}

}  // namespace model_test
}  // namespace
}  // namespace agld::model
