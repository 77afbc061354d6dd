#include "sampler/stages.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

namespace agld::sampler {

Stage stage_of(const ResolvedSample& r, uint64_t s) {
  Stage st;
  st.index = s;
  if (s == 0) {
    st.iterations = r.iterations;
    st.burn_in = r.burn_in;
    st.thin = r.thin;
    st.eval_every = r.eval_every;
    st.draws = r.draws;
    return st;
  }
  st.iterations = r.iterations << s;
  st.burn_in = r.iterations << (s - 1);
  const uint64_t kept = st.iterations - st.burn_in;
  // At most the first stage's draws: the memory plan counts them.
  st.thin = std::max<uint64_t>(r.thin << s, (kept + std::max<uint64_t>(r.draws, 1) - 1) / std::max<uint64_t>(r.draws, 1));
  st.draws = kept / st.thin;
  st.eval_every = r.eval_every << s;
  return st;
}

ResolvedSample staged(const ResolvedSample& r, const Stage& st) {
  ResolvedSample out = r;
  out.stage = st.index;
  if (st.index == 0) return out;
  out.iterations = st.iterations;
  out.burn_in = st.burn_in;
  out.thin = st.thin;
  out.eval_every = st.eval_every;
  out.draws = st.draws;
  out.epochs = r.epochs * static_cast<double>(uint64_t{1} << st.index);
  out.length_rule = fmt::format("{}; doubled {} time{} until mixed", r.length_rule, st.index, st.index == 1 ? "" : "s");
  return out;
}

void StageVerdict::add(double rhat, double ess, double target_rhat, double target_ess, uint64_t id) {
  if (std::isfinite(rhat)) {
    ++finite;
    rhat_above += rhat > target_rhat;
    if (!(rhat <= max_rhat)) {
      max_rhat = rhat;
      max_rhat_id = id;
    }
  }
  if (std::isfinite(ess)) {
    ess_below += ess < target_ess;
    if (!(ess >= min_ess)) {
      min_ess = ess;
      min_ess_id = id;
    }
  }
}

StageDecision decide_stage(const ResolvedSample& r, const Stage& st, const StageVerdict& v, const StageCost& c) {
  StageDecision d;
  const std::string where =
      v.finite == 0 ? "no R-hat computed"
                    : fmt::format("largest R-hat {:.4g} ({}), smallest ESS {:.4g} ({}); {} R-hat{} above {:g}, {} ESS below {:g}",
                                  v.max_rhat, v.max_rhat_at, v.min_ess, v.min_ess_at, v.rhat_above,
                                  v.rhat_above == 1 ? "" : "s", r.target_rhat, v.ess_below, r.target_ess);
  d.mixed = v.finite > 0 && v.rhat_above == 0 && v.ess_below == 0;
  if (d.mixed) {
    d.reason = fmt::format("stage {} ({} iterations, {:.1f} passes): mixed, {}", st.index, st.iterations, c.passes, where);
    return d;
  }
  const double next_passes = c.setup_passes + 2 * (c.passes - c.setup_passes);
  const std::string head = fmt::format("stage {} ({} iterations, {:.1f} passes): not mixed, {}", st.index, st.iterations, c.passes, where);
  if (c.max_passes > 0 && next_passes > c.max_passes * (1 + 1e-9)) {
    d.reason = fmt::format("{}; stopped: the next stage would read about {:.1f} passes, past the cap of {:.1f} (--max-passes)",
                           head, next_passes, c.max_passes);
    return d;
  }
  if (st.index >= kMaxStage || (st.iterations << 1) >> 1 != st.iterations) {
    d.reason = fmt::format("{}; stopped: stage {} is the last a run may have", head, st.index);
    return d;
  }
  if (c.time_limit && 2 * c.seconds > *c.time_limit) {
    d.reason = fmt::format("{}; stopped: the next stage would take the sampling to about {:.0f} s, past --time-limit {:g} s",
                           head, 2 * c.seconds, *c.time_limit);
    return d;
  }
  d.go_on = true;
  d.reason = fmt::format("{}; went on to {} iterations", head, st.iterations * 2);
  return d;
}

}  // namespace agld::sampler
