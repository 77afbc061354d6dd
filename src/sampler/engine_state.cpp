// The engine's state for a checkpoint (sampler/engine.hpp; docs/reliability.md,
// "Checkpoints"): saved through an archive at an iteration where every chain is current, and
// loaded into an engine made for the same run, whose observer then gets back what it had
// before (replay).
#include <algorithm>
#include <cmath>

#include "sampler/engine.hpp"

namespace agld::sampler {

Status Engine::maybe_checkpoint(uint64_t k, SampleObserver& obs) {
  const bool burn_in_ended = !burn_in_offered_ && k >= stage_.burn_in;
  if (burn_in_ended) burn_in_offered_ = true;
  if (!obs.checkpoint_due(k, burn_in_ended)) return Status::ok();
  return obs.on_checkpoint(k, [this, k](WritableFile& file) {
    return checkpoint_(file, k, [this, k](StateWriter& out) { save_state(out, k); });
  });
}

namespace {

void save_eval(StateWriter& out, const EvalRecord& e) {
  out.u64("an evaluation's iteration", e.iteration);
  out.f64("an evaluation's seconds", e.seconds);
  out.f64("an evaluation's evaluation seconds", e.eval_seconds);
  out.f64("an evaluation's passes", e.passes);
  out.u64("an evaluation's gradient evaluations", e.grad_evals);
  out.flag("an evaluation's burn-in flag", e.burn_in);
  out.u64("an evaluation's states", e.samples);
  out.f64("an evaluation's test log-likelihood", e.test_loglik);
  out.array("an evaluation's chains", e.chain_test_loglik);
  out.f64("an evaluation's test accuracy", e.test_accuracy);
  out.f64("an evaluation's test MSE", e.test_mse);
  out.u64("an evaluation's bytes read", e.bytes_read);
  out.u64("an evaluation's memory", e.memory_bytes);
}

Status load_eval(StateReader& in, size_t chains, EvalRecord* e) {
  AGLD_RETURN_IF_ERROR(in.u64("an evaluation's iteration", &e->iteration));
  AGLD_RETURN_IF_ERROR(in.f64("an evaluation's seconds", &e->seconds));
  AGLD_RETURN_IF_ERROR(in.f64("an evaluation's evaluation seconds", &e->eval_seconds));
  AGLD_RETURN_IF_ERROR(in.f64("an evaluation's passes", &e->passes));
  AGLD_RETURN_IF_ERROR(in.u64("an evaluation's gradient evaluations", &e->grad_evals));
  AGLD_RETURN_IF_ERROR(in.flag("an evaluation's burn-in flag", &e->burn_in));
  AGLD_RETURN_IF_ERROR(in.u64("an evaluation's states", &e->samples));
  AGLD_RETURN_IF_ERROR(in.f64("an evaluation's test log-likelihood", &e->test_loglik));
  AGLD_RETURN_IF_ERROR(in.vec("an evaluation's chains", &e->chain_test_loglik, chains));
  AGLD_RETURN_IF_ERROR(in.f64("an evaluation's test accuracy", &e->test_accuracy));
  AGLD_RETURN_IF_ERROR(in.f64("an evaluation's test MSE", &e->test_mse));
  AGLD_RETURN_IF_ERROR(in.u64("an evaluation's bytes read", &e->bytes_read));
  return in.u64("an evaluation's memory", &e->memory_bytes);
}

}  // namespace

// The whole state at iteration k (every chain current): the engine's counters and readers'
// positions, the evaluations and kept draws so far, every chain, the pooled moments, the
// Rao-Blackwell accumulators, the diagnostics and the predictive.
void Engine::save_state(StateWriter& out, uint64_t k) const {
  out.section("ENGN");
  out.u64("the iteration", k);
  out.u64("the kept draws' count", draws_);
  out.u64("the rows read", rows_read_);
  out.u64("the gradient evaluations", grad_evals_);
  out.u64("the sweeps' proposals", sweep_proposed_);
  out.u64("the sweeps' acceptances", sweep_accepted_);
  out.f64("the seconds elapsed", std::chrono::duration<double>(Clock::now() - start_).count());
  out.f64("the evaluations' seconds", eval_seconds_);
  out.u64("the bytes read", bytes_read());
  out.flag("the end of burn-in's offer", burn_in_offered_);
  out.u64("the main reader's position", main_position());
  out.u64("the pass reader's position", pass_ ? pass_->position() : 0);
  out.u64("the test reader's position", test_stream_ ? test_stream_->position() : 0);
  out.u64("the stage", stage_.index);
  out.f64("the cap in passes", max_passes_);
  out.u64("the stages' verdicts' count", stage_verdicts_.size());
  for (const std::string& v : stage_verdicts_) out.text("a stage's verdict", v);
  out.section("EVAL");
  out.u64("the evaluations' count", evals_.size());
  for (const EvalRecord& e : evals_) save_eval(out, e);
  out.section("KEPT");
  for (const auto& chain : tracked_draws_) {
    for (const auto& column : chain) out.array("a chain's kept draws", column);
  }
  for (const auto& c : chains_) c->save(out);
  moments_.save(out);
  if (rb_) rb_->save(out);
  diagnostics_.save(out);
  out.flag("whether the run has a predictive", predictive_ != nullptr);
  if (predictive_) predictive_->save(out);
}

Status Engine::load_state(StateReader& in, uint64_t* k) {
  AGLD_RETURN_IF_ERROR(in.section("ENGN", "the engine"));
  AGLD_RETURN_IF_ERROR(in.u64("the iteration", k));
  double elapsed = 0;
  AGLD_RETURN_IF_ERROR(in.u64("the kept draws' count", &draws_));
  AGLD_RETURN_IF_ERROR(in.u64("the rows read", &rows_read_));
  AGLD_RETURN_IF_ERROR(in.u64("the gradient evaluations", &grad_evals_));
  AGLD_RETURN_IF_ERROR(in.u64("the sweeps' proposals", &sweep_proposed_));
  AGLD_RETURN_IF_ERROR(in.u64("the sweeps' acceptances", &sweep_accepted_));
  AGLD_RETURN_IF_ERROR(in.f64("the seconds elapsed", &elapsed));
  AGLD_RETURN_IF_ERROR(in.f64("the evaluations' seconds", &eval_seconds_));
  AGLD_RETURN_IF_ERROR(in.u64("the bytes read", &bytes_before_));
  AGLD_RETURN_IF_ERROR(in.flag("the end of burn-in's offer", &burn_in_offered_));
  AGLD_RETURN_IF_ERROR(in.u64("the main reader's position", &main_start_));
  AGLD_RETURN_IF_ERROR(in.u64("the pass reader's position", &pass_start_));
  AGLD_RETURN_IF_ERROR(in.u64("the test reader's position", &test_start_));
  uint64_t stage = 0, verdicts = 0;
  double max_passes = 0;
  AGLD_RETURN_IF_ERROR(in.u64("the stage", &stage));
  AGLD_RETURN_IF_ERROR(in.f64("the cap in passes", &max_passes));
  AGLD_RETURN_IF_ERROR(in.u64("the stages' verdicts' count", &verdicts));
  if (stage > 0 && !run_.until_mixed) return in.corrupt("stage " + std::to_string(stage) + " of a run of one length");
  if (stage > kMaxStage || verdicts != stage || !std::isfinite(max_passes) || max_passes < 0) {
    return in.corrupt("the stage's counters are out of range");
  }
  stage_verdicts_.resize(static_cast<size_t>(verdicts));
  for (std::string& v : stage_verdicts_) AGLD_RETURN_IF_ERROR(in.text("a stage's verdict", &v, 1 << 12));
  stage_ = stage_of(run_, stage);
  if (!(run_.max_passes > 0)) max_passes_ = max_passes;  // a cap given anew on resume stands
  diagnostics_.restart(stage_.draws);
  // A checkpoint at k comes before iteration k keeps its state or evaluates: the draws and
  // evaluations before it are those of the iterations below k, so that a resumed run keeps
  // exactly the planned ones.
  if (*k == 0 || *k >= stage_.iterations) return in.corrupt("iteration " + std::to_string(*k) + " is not inside the run");
  const uint64_t kept_before = *k > stage_.burn_in ? (*k - 1 - stage_.burn_in) / stage_.thin : 0;
  // Evaluations at iterations 1 .. k-1, each under the stage in force there (is_eval).
  uint64_t evals_before = 0;
  for (uint64_t s = 0, from = 0; run_.eval_every && s <= stage_.index && from < *k - 1; ++s) {
    const Stage st = stage_of(run_, s);
    const uint64_t to = std::min(*k - 1, st.iterations);
    evals_before += to / st.eval_every - from / st.eval_every + (to == st.iterations && to % st.eval_every != 0);
    from = st.iterations;
  }
  if (draws_ != kept_before || !std::isfinite(elapsed) || !std::isfinite(eval_seconds_)) {
    return in.corrupt("the engine's counters are out of range (" + std::to_string(draws_) + " draws kept before iteration " +
                      std::to_string(*k) + ", which has " + std::to_string(kept_before) + ")");
  }
  start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, elapsed)));
  AGLD_RETURN_IF_ERROR(in.section("EVAL", "the evaluations"));
  uint64_t n = 0;
  AGLD_RETURN_IF_ERROR(in.u64("the evaluations' count", &n));
  if (n != evals_before) return in.corrupt(std::to_string(n) + " evaluations before iteration " + std::to_string(*k));
  evals_.resize(static_cast<size_t>(n));
  for (EvalRecord& e : evals_) AGLD_RETURN_IF_ERROR(load_eval(in, chains_.size(), &e));
  if (n > 0) last_eval_ = evals_.back();
  AGLD_RETURN_IF_ERROR(in.section("KEPT", "the kept draws"));
  for (auto& chain : tracked_draws_) {
    for (auto& column : chain) {
      AGLD_RETURN_IF_ERROR(in.vec("a chain's kept draws", &column, stage_.draws));
      if (column.size() != draws_) return in.corrupt("a chain's kept draws are not the run's count");
    }
  }
  for (auto& c : chains_) AGLD_RETURN_IF_ERROR(c->load(in));
  AGLD_RETURN_IF_ERROR(moments_.load(in));
  if (rb_) AGLD_RETURN_IF_ERROR(rb_->load(in));
  AGLD_RETURN_IF_ERROR(diagnostics_.load(in));
  bool has_predictive = false;
  AGLD_RETURN_IF_ERROR(in.flag("whether the run has a predictive", &has_predictive));
  if (has_predictive != (predictive_ != nullptr)) {
    return in.corrupt("a predictive where the run has none, or none where it has one");
  }
  if (predictive_) AGLD_RETURN_IF_ERROR(predictive_->load(in));
  return in.done();
}

// What the observer had before the checkpoint: the evaluations, then every chain's kept draws.
Status Engine::replay(SampleObserver& obs) {
  for (const EvalRecord& e : evals_) AGLD_RETURN_IF_ERROR(obs.on_eval(e));
  for (size_t c = 0; c < chains_.size(); ++c) {
    DrawRecord d;
    d.chain = chains_[c]->id();
    d.tracked.resize(tracked_draws_[c].size() - 1);
    for (uint64_t i = 0; i < draws_; ++i) {
      d.iteration = stage_.burn_in + (i + 1) * stage_.thin;
      d.lp = tracked_draws_[c][0][i];
      for (size_t t = 0; t < d.tracked.size(); ++t) d.tracked[t] = tracked_draws_[c][t + 1][i];
      AGLD_RETURN_IF_ERROR(obs.on_draw(d));
    }
  }
  return Status::ok();
}

}  // namespace agld::sampler
