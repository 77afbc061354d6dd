#include "sampler/predictive.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace agld::sampler {
namespace {

// log(exp(a) + exp(b)), with a = -inf allowed.
double log_add(double a, double b) {
  const double hi = std::max(a, b);
  if (hi == -std::numeric_limits<double>::infinity()) return hi;
  return hi + std::log(std::exp(a - hi) + std::exp(b - hi));
}

}  // namespace

Predictive::Predictive(uint64_t test_rows, size_t chains, const model::Model& model)
    : model_(model),
      k_(chains),
      lse_(test_rows, -std::numeric_limits<double>::infinity()),
      pred_(test_rows, 0.0),
      chain_lse_(test_rows * chains, -std::numeric_limits<double>::infinity()),
      chain_ll_(chains) {}

void Predictive::reset() {
  std::fill(lse_.begin(), lse_.end(), -std::numeric_limits<double>::infinity());
  std::fill(pred_.begin(), pred_.end(), 0.0);
  std::fill(chain_lse_.begin(), chain_lse_.end(), -std::numeric_limits<double>::infinity());
  samples_ = 0;
}

void Predictive::begin(bool pool) {
  pool_ = pool;
  if (pool) ++samples_;
  ll_ = sq_ = 0;
  right_ = rows_ = 0;
  std::fill(chain_ll_.begin(), chain_ll_.end(), 0.0);
}

void Predictive::add(const Batch& b, std::span<const std::span<const double>> margins) {
  const double kd = static_cast<double>(k_);
  const double per_chain = pool_ ? static_cast<double>(samples_) : 1.0;
  const double log_chain = std::log(per_chain), log_all = std::log(per_chain * kd);
  for (size_t i = 0; i < b.size(); ++i) {
    const double y = b.labels[i];
    const uint64_t t = b.row_ids[i];
    double mix = -std::numeric_limits<double>::infinity(), pred = 0;  // burn-in: this evaluation's states
    for (size_t c = 0; c < k_; ++c) {
      const double m = margins[c][i];
      const double lp = model_.log_lik(y, m);
      const double p = model_.predict(m);
      if (pool_) {
        double& cl = chain_lse_[t * k_ + c];
        cl = log_add(cl, lp);
        chain_ll_[c] += cl - log_chain;
        lse_[t] = log_add(lse_[t], lp);
        pred_[t] += p;
      } else {
        chain_ll_[c] += lp;
        mix = log_add(mix, lp);
        pred += p;
      }
    }
    // Pooled: the mixture over every chain's states averaged so far (this evaluation's
    // states alone during burn-in).
    const double lp = (pool_ ? lse_[t] : mix) - log_all;
    const double p = (pool_ ? pred_[t] : pred) / (per_chain * kd);
    ll_ += lp;
    if (model_.binary()) {
      right_ += (p > 0.5) == (y > 0);
    } else {
      sq_ += (y - p) * (y - p);
    }
    ++rows_;
  }
}

void Predictive::save(StateWriter& out) const {
  out.section("PRED");
  out.u64("the predictive's states", samples_);
  out.array("the predictive's log-sum-exps", lse_);
  out.array("the predictive's predictions", pred_);
  out.array("the chains' log-sum-exps", chain_lse_);
}

Status Predictive::load(StateReader& in) {
  AGLD_RETURN_IF_ERROR(in.section("PRED", "the predictive"));
  AGLD_RETURN_IF_ERROR(in.u64("the predictive's states", &samples_));
  AGLD_RETURN_IF_ERROR(in.array("the predictive's log-sum-exps", lse_));
  AGLD_RETURN_IF_ERROR(in.array("the predictive's predictions", pred_));
  return in.array("the chains' log-sum-exps", chain_lse_);
}

void Predictive::end(EvalRecord* e) {
  const double n = static_cast<double>(rows_);
  e->samples = pool_ ? samples_ : 1;
  e->test_loglik = ll_ / n;
  e->test_accuracy = e->test_mse = std::numeric_limits<double>::quiet_NaN();
  if (model_.binary()) {
    e->test_accuracy = static_cast<double>(right_) / n;
  } else {
    e->test_mse = sq_ / n;
  }
  e->chain_test_loglik.resize(k_);
  for (size_t c = 0; c < k_; ++c) e->chain_test_loglik[c] = chain_ll_[c] / n;
}

}  // namespace agld::sampler
