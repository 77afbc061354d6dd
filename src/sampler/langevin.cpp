#include "sampler/langevin.hpp"

#include <algorithm>
#include <cmath>

namespace agld::sampler {

Langevin::Langevin(double eta, double prior_var, uint64_t table_size, double temperature)
    : eta_(eta),
      inv_s2p_(std::isinf(prior_var) ? 0.0 : 1.0 / prior_var),
      temperature_(temperature),
      sd1_(std::sqrt(2 * eta * temperature)),
      r_(eta * inv_s2p_),
      log_a_(std::log1p(-r_)) {
  table_.resize(std::max<uint64_t>(table_size, 1));
  table_[0] = {1, 0, 0};
  for (uint64_t k = 1; k < table_.size(); ++k) table_[k] = compute(k);
}

Langevin::Jump Langevin::compute(uint64_t k) const {
  const double kd = static_cast<double>(k);
  if (r_ == 0) return {1, kd, std::sqrt(2 * eta_ * temperature_ * kd)};  // flat prior: a random walk with drift
  // 1 - a^k = -expm1(k log a) keeps its precision when eta / s2p is tiny.
  const double one_minus_ak = -std::expm1(kd * log_a_);
  const double one_minus_a2k = -std::expm1(2 * kd * log_a_);
  return {std::exp(kd * log_a_), one_minus_ak / r_,
          std::sqrt(2 * eta_ * temperature_ * one_minus_a2k / (r_ * (2 - r_)))};
}

}  // namespace agld::sampler
