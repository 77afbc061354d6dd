#include "sampler/conditional_move.hpp"

#include <boost/random/uniform_01.hpp>
#include <cmath>

namespace agld::sampler {

namespace {
// The proposal's sd over the conditional's: wider than it, so that the proposal's tails cover
// the conditional's skewed one (a level in a row or two: the prior times a sigmoid).
constexpr double kWiden = 1.25;

double energy(std::span<const ConditionalRow> rows, const model::Model& model, double p0, double t) {
  double u = 0.5 * p0 * t * t;
  for (const ConditionalRow& r : rows) u += model.loss(r.y, r.offset + static_cast<double>(r.x) * t);
  return u;
}
}  // namespace

ConditionalStep conditional_move(std::span<const ConditionalRow> rows, const model::Model& model, double inv_prior_var,
                                 double current, const ConditionalMoments& m, Noise& noise) {
  const double sd = kWiden * std::sqrt(m.var);
  const double proposal = m.mean + sd * noise();
  // log of p(t') q(t) / (p(t) q(t')), q the proposal's density.
  auto log_q = [&](double t) { return -0.5 * ((t - m.mean) / sd) * ((t - m.mean) / sd); };
  const double log_ratio = energy(rows, model, inv_prior_var, current) - energy(rows, model, inv_prior_var, proposal) +
                           log_q(current) - log_q(proposal);
  const double u = boost::random::uniform_01<double>()(noise.engine());
  if (std::isfinite(proposal) && (log_ratio >= 0 || std::log(u) < log_ratio)) return {proposal, true};
  return {current, false};
}

}  // namespace agld::sampler
