// The engine's loop (sampler/engine.hpp): the readers, the start, the refreshes, the
// iterations, the evaluations and the result.
#include "sampler/engine.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "agld/run_summary.hpp"
#include "common/proc.hpp"
#include "diagnostics/draws_diagnostics.hpp"
#include "diagnostics/rhat_by_rows.hpp"
#include "sampler/coordinate_file.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {

Status Engine::open_readers() {
  if (plan_.main) {
    ReaderOptions o = main_reader_options(run_);
    o.memory = plan_.main;
    o.start = main_start_;
    Status st = Reader::open(train_, o, &main_);
    if (!st.is_ok()) return st;
  }
  if (plan_.pass) {
    ReaderOptions o = pass_reader_options(train_, run_.given.seed);
    o.memory = plan_.pass;
    o.start = pass_start_;
    std::unique_ptr<Reader> r;
    Status st = Reader::open(train_, o, &r);
    if (!st.is_ok()) return st;
    pass_ = std::make_unique<PassStream>(std::move(r), pass_start_);
  }
  if (test_) {
    ReaderOptions o = pass_reader_options(*test_, run_.given.seed);
    o.memory = plan_.test;
    o.start = test_start_;
    std::unique_ptr<Reader> r;
    Status st = Reader::open(*test_, o, &r);
    if (!st.is_ok()) return st;
    test_stream_ = std::make_unique<PassStream>(std::move(r), test_start_);
  }
  return Status::ok();
}

// x_0 of every chain: from the prior, or around --init (checked by prepare()).
Status Engine::start() {
  if (run_.given.init.empty()) {
    return for_chains([](Chain& c) { c.start_dispersed(); return Status::ok(); }, sweeps_parallel_);
  }
  std::unique_ptr<CoordinateFile> init;
  Status st = CoordinateFile::open("--init", run_.given.init, run_.dim, 1, &init);
  if (!st.is_ok()) return st;
  st = for_chains([&init](Chain& c) { c.start_around(*init); return Status::ok(); }, sweeps_parallel_);
  init->release(run_.dim);
  return st;
}

Status Engine::sync_all(uint64_t k, bool keep) {
  return for_chains([&](Chain& c) { return c.sync(k, keep); }, sweeps_parallel_);
}

// Every chain's kept state (every coordinate current) into the moments and the diagnostics.
void Engine::keep_states() {
  const auto s = states();
  moments_.prepare(s.size());
  for_ranges(run_.dim, [&](uint64_t j0, uint64_t j1) { moments_.add(s, j0, j1); });
  moments_.next_draw(s.size());
  for_ranges(diagnostics_.covered(), [&](uint64_t i0, uint64_t i1) { diagnostics_.add(s, i0, i1); });
  diagnostics_.next_draw();
}

// After a refresh past burn-in: every chain's conditional moments at its state, from the
// aggregate the refresh built there or the rows it gathered (sampler/rao_blackwell.hpp).
void Engine::keep_conditionals() {
  if (!rb_->gaussian()) {  // by quadrature, from the rows each chain gathered in the refresh (compute_conditionals)
    rb_->prepare(chains_.size());
    for_ranges(rb_->rare_rows()->size(), [&](uint64_t r0, uint64_t r1) {
      rb_->add_moments(chains_.size(), r0, r1, [&](size_t c, uint64_t r) { return chains_[c]->conditional(r); });
    });
    rb_->next_sample(chains_.size());
    return;
  }
  const auto x = states();
  std::vector<StridedSpan<const double>> a;
  for (const auto& c : chains_) a.push_back(c->aggregate());
  rb_->prepare(x.size());
  for_ranges(run_.dim, [&](uint64_t j0, uint64_t j1) { rb_->add(x, a, j0, j1); });
  rb_->next_sample(x.size());
}

// A refresh of every chain's snapshot at its theta (every coordinate current), the start's
// included: the rows are read once, and every chain takes each piece.
Status Engine::refresh(bool gather) {
  const RefreshRows rows = chains_.front()->snapshot().refresh_rows();
  if (rows == RefreshRows::kNone) return Status::ok();
  Status st = for_chains([gather](Chain& c) { c.begin_refresh(gather); return Status::ok(); }, sweeps_parallel_);
  if (!st.is_ok()) return st;
  const size_t k = chains_.size();
  if (rows == RefreshRows::kFullPass) {
    st = pass_->take(run_.rows, [&](const Batch& piece) {
      const Batch& b = intercept_(piece);
      (void)for_chains([&](Chain& c) { c.refresh_piece(b); return Status::ok(); }, worth_threads(b));
    });
    rows_read_ += run_.rows;
    grad_evals_ += run_.rows * k;
    return st;
  }
  // ptu+: snapshot_batch rows of each chain's sequence, whole batches of the main reader.
  for (uint64_t got = 0; got < run_.snapshot_batch; got += run_.batch) {
    Batch raw;
    st = main_->next(&raw);
    if (!st.is_ok()) return st;
    const Batch& b = intercept_(raw);
    rows_read_ += b.size();
    grad_evals_ += run_.batch * k;
    st = for_chains([&](Chain& c) {
      c.refresh_piece(slice(b, index(c)));
      return Status::ok();
    }, parallel_steps_);
    if (!st.is_ok()) return st;
  }
  return Status::ok();
}

Status Engine::batch_iteration(uint64_t k, bool keep, bool do_step) {
  Batch raw;
  Status st = main_->next(&raw);
  if (!st.is_ok()) return st;
  const Batch& b = intercept_(raw);
  rows_read_ += b.size();
  grad_evals_ += run_.batch * chains_.size() * (1 + chains_.front()->snapshot().shadow_cost());
  return for_chains([&](Chain& c) { return c.step(k, slice(b, index(c)), keep, do_step); }, parallel_steps_);
}

// `full`: the batch is every row, read once for every chain. theta is current everywhere.
Status Engine::full_iteration(uint64_t k, bool keep, bool do_step) {
  Status st = pass_->take(run_.rows, [&](const Batch& piece) {
    const Batch& b = intercept_(piece);
    (void)for_chains([&](Chain& c) { c.full_piece(b); return Status::ok(); }, worth_threads(b));
  });
  if (!st.is_ok()) return st;
  rows_read_ += run_.rows;
  grad_evals_ += run_.rows * chains_.size();
  return for_chains([&](Chain& c) { return c.full_step(k, keep, do_step); }, sweeps_parallel_);
}

// The kept states of this iteration, chain by chain: the observer's draws, the tracked draws.
Status Engine::emit() {
  for (size_t c = 0; c < chains_.size(); ++c) {
    const DrawRecord& d = chains_[c]->draw();
    tracked_draws_[c][0].push_back(d.lp);
    for (size_t t = 0; t < d.tracked.size(); ++t) tracked_draws_[c][t + 1].push_back(d.tracked[t]);
    Status st = obs_->on_draw(d);
    if (!st.is_ok()) return st;
  }
  ++draws_;
  return Status::ok();
}

Status Engine::evaluate(uint64_t j, SampleObserver& obs) {
  const auto t0 = Clock::now();
  EvalRecord e;
  e.iteration = j;
  e.seconds = sample_seconds();
  e.passes = static_cast<double>(rows_read_) / static_cast<double>(run_.rows);
  e.grad_evals = grad_evals_;
  e.burn_in = j <= stage_.burn_in;
  e.test_loglik = e.test_accuracy = e.test_mse = std::numeric_limits<double>::quiet_NaN();
  if (test_stream_) {
    predictive_->begin(!e.burn_in);
    std::vector<std::span<const double>> margins(chains_.size());
    Status st = test_stream_->take(test_->meta().rows, [&](const Batch& piece) {
      const Batch& b = test_intercept_(piece);
      (void)for_chains([&](Chain& c) {
        margins[index(c)] = c.margins(b);
        return Status::ok();
      }, worth_threads(b));
      predictive_->add(b, margins);
    });
    if (!st.is_ok()) return st;
    predictive_->end(&e);
  }
  e.bytes_read = bytes_read();
  e.memory_bytes = process_rss_bytes();
  eval_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  e.eval_seconds = eval_seconds_;
  last_eval_ = e;
  evals_.push_back(e);
  return obs.on_eval(e);
}

void Engine::progress(uint64_t k, SampleObserver& obs) {
  const auto now = Clock::now();
  if (now - last_progress_ < std::chrono::milliseconds(500)) return;
  last_progress_ = now;
  Progress p;
  p.iteration = k + 1;
  p.iterations = stage_.iterations;
  p.passes = static_cast<double>(rows_read_) / static_cast<double>(run_.rows);
  p.seconds = std::chrono::duration<double>(now - start_).count();
  p.rows = rows_read_;
  p.bytes_read = bytes_read();
  p.memory_bytes = process_rss_bytes();
  p.memory_budget = run_.given.memory;
  if (last_eval_ && !std::isnan(last_eval_->test_loglik)) p.test_loglik = last_eval_->test_loglik;
  obs.on_progress(p);
}

Status Engine::run(SampleObserver& obs, SampleResult* result, StateReader* resume) {
  start_ = last_progress_ = Clock::now();
  obs_ = &obs;
  const SnapshotInfo* info = find_snapshot(run_.snapshot);
  ChainConfig cfg;
  cfg.rows = run_.rows;
  cfg.dim = run_.dim;
  cfg.dynamics = run_.dynamics;
  cfg.step = run_.step;
  cfg.friction = run_.friction;
  cfg.level_m = pre_.level_m;
  cfg.level = pre_.level.empty() ? nullptr : pre_.level.data();
  cfg.head = pre_.head;
  cfg.in_rows = pre_.in_rows;
  cfg.stamps_in_record = run_.stamps_in_record;
  cfg.prior_var = run_.given.prior_var;
  cfg.divergence_radius = run_.divergence_radius;
  cfg.dense = run_.given.dense;
  cfg.model = model_.get();
  cfg.track = run_.track;
  if (rb_) cfg.rare = rb_->rare_rows();
  cfg.gibbs = run_.gibbs && cfg.rare;
  cfg.noise.on = run_.noise_correction;
  cfg.noise.per_pass = (run_.rows + run_.batch - 1) / run_.batch;
  cfg.noise.zero_sum = run_.access != "ra";
  for (uint64_t c = 0; c < run_.given.chains; ++c) {
    auto snap = info->make({run_.rows, run_.dim, run_.refresh, run_.snapshot_batch, model_.get()});
    chains_.push_back(std::make_unique<Chain>(run_.given.chain_id + c, run_.given.seed, cfg, std::move(snap)));
  }
  std::vector<uint8_t>().swap(pre_.level);
  if (run_.unseen_directions) {
    unseen_ = UnseenMove::make(train_.meta().fields, run_.given.intercept, run_.dim, run_.given.prior_var);
  }
  moves_ = run_.gibbs && rb_ && !rb_->gaussian();
  rows_read_ = run_.setup_rows;  // the preconditioner's reads count in the passes
  const StoreMeta& m = train_.meta();
  const uint64_t batch_nnz = run_.batch * ((m.nnz + m.rows - 1) / m.rows + 1);
  parallel_steps_ = batch_nnz * chains_.size() >= kParallelNnz && !chains_.front()->snapshot().full_batch();
  sweeps_parallel_ = run_.dim >= kRangeGrain;
  tracked_draws_.assign(chains_.size(), std::vector<std::vector<double>>(run_.track.size() + 1));
  if (test_) predictive_ = std::make_unique<Predictive>(test_->meta().rows, chains_.size(), *model_);
  max_passes_ = run_.max_passes;
  uint64_t k0 = 0;
  Status st;
  if (resume) {
    st = load_state(*resume, &k0);
    if (!st.is_ok()) return st;
  }
  st = open_readers();
  if (!st.is_ok()) return st;
  st = obs.on_start(staged(run_, stage_));
  if (!st.is_ok()) return st;
  if (resume) {
    st = replay(obs);
  } else {
    st = start();
    if (st.is_ok()) st = refresh();
  }
  if (!st.is_ok()) return st;

  uint64_t K = stage_.iterations;
  const bool full = chains_.front()->snapshot().full_batch();
  bool stopped = false;
  bool current = true;  // every chain current at k, nothing stepped since (a checkpoint may go here)
  uint64_t k = k0;
  for (; k <= K; ++k) {
    const bool last = k == K;
    // A run until mixed steps past a stage's end: it may go on from there.
    const bool may_go_on = last && run_.until_mixed;
    const bool keep = is_draw(k), eval = is_eval(k);
    if (keep || eval || full || chains_.front()->sync_due(k)) {
      st = sync_all(k, keep);
      if (!st.is_ok()) return st;
      current = true;
    }
    // A checkpoint only where the chains are current anyway: bringing them current for it
    // would draw noise the uninterrupted run does not, and the draws would differ.
    if (current && k > k0 && !last) {
      st = maybe_checkpoint(k, obs);
      if (!st.is_ok()) return st;
    }
    current = false;
    // At a kept state, the component along the directions no row sees drawn anew too (after
    // the checkpoint: a resumed run draws it again here): each kept state's is independent of
    // the last, where the refresh's alone gave a run a few dozen of them.
    if (keep && unseen_) {
      (void)for_chains([&](Chain& c) { c.redraw_unseen_kept(*unseen_); return Status::ok(); }, sweeps_parallel_);
    }
    if (keep) keep_states();
    if (eval) {
      st = evaluate(k, obs);
      if (!st.is_ok()) return st;
    }
    if (last && !keep && !may_go_on) break;
    st = full ? full_iteration(k, keep, !last || may_go_on) : batch_iteration(k, keep, !last || may_go_on);
    if (!st.is_ok()) return st;
    if (keep) {
      st = emit();
      if (!st.is_ok()) return st;
    }
    if (last) {
      bool go_on = false;
      if (may_go_on) {
        st = end_stage(obs, &go_on);
        if (!st.is_ok()) return st;
      }
      if (!go_on) break;
      K = stage_.iterations;
    }
    // The exact move along the directions no row sees, every chain current first: at each
    // refresh point (every --refresh iterations, a pass by default), before the refresh.
    if (unseen_ && (k + 1) % run_.refresh == 0) {
      st = sync_all(k + 1, false);
      if (!st.is_ok()) return st;
      (void)for_chains([&](Chain& c) { c.redraw_unseen(*unseen_); return Status::ok(); }, sweeps_parallel_);
      current = true;
    }
    if (chains_.front()->snapshot().refresh_due(k)) {
      const bool conditionals = rb_ && k >= stage_.burn_in;
      // The rare coordinates' rows, for their conditional moments past burn-in and for the
      // Gibbs sweep at every refresh.
      const bool quadrature = rb_ && !rb_->gaussian() && (conditionals || moves_);
      st = for_chains([&](Chain& c) { return c.catch_up_rows(k + 1); }, sweeps_parallel_);
      if (st.is_ok()) st = refresh(quadrature || conditionals);
      if (!st.is_ok()) return st;
      if (quadrature) {
        // A chain's quadratures are worth a thread of their own, whatever d.
        (void)for_chains([&](Chain& c) { c.compute_conditionals(moves_); return Status::ok(); }, true);
        for (const auto& c : chains_) {
          sweep_proposed_ += c->sweep_proposed();
          sweep_accepted_ += c->sweep_accepted();
        }
        // The snapshot again at the moved state: left at the sweep's start, its variance-reduced
        // estimates carried the rare coordinates' jumps through every row that has one (the
        // frequent coordinates' sds came out up to 34 % wide on dummy-coded logistic data).
        if (moves_) {
          st = refresh(false);
          if (!st.is_ok()) return st;
        }
      }
      if (conditionals) keep_conditionals();
      current = true;
    }
    if ((k & 63) == 63) {
      progress(k, obs);
      if (obs.stop_requested() || (run_.given.time_limit && sample_seconds() > *run_.given.time_limit)) {
        stopped = true;
        break;
      }
    }
  }
  if (stopped && stage_.eval_every && (!last_eval_ || last_eval_->iteration != k + 1)) {  // evaluate where it stopped
    st = sync_all(k + 1, false);
    if (st.is_ok()) st = evaluate(k + 1, obs);
    if (!st.is_ok()) return st;
  }
  return finish(stopped, result);
}

// Every coordinate's R-hat and ESS as diagnostics.npy would have them now (the conditional
// moments' where posterior.npy would take those), and every tracked column's exact ones.
StageVerdict Engine::stage_verdict() const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  StageVerdict v;
  const double tr = run_.target_rhat, te = run_.target_ess;
  uint64_t i = 0;
  for (uint64_t j = 0; j < run_.dim; ++j) {
    CoordinateEstimate e{0, moments_.sd(j), kNaN, kNaN, kNaN};
    if (i < diagnostics_.covered() && diagnostics_.coordinate(i) == j) {
      const auto d = diagnostics_.at(i++);
      e.rhat = d.rhat;
      e.ess = d.ess;
      e.mcse = d.mcse;
    }
    if (prior_exact(j)) continue;  // known exactly: nothing to mix
    if (rb_) take_conditional(*rb_, j, &e);
    v.add(e.rhat, e.ess, tr, te, j);
  }
  const size_t k = chains_.size();
  std::vector<double> draws;
  for (size_t t = 0; t < tracked_draws_.front().size(); ++t) {
    draws.clear();
    for (const auto& chain : tracked_draws_) draws.insert(draws.end(), chain[t].begin(), chain[t].end());
    v.add(diagnostics::rhat(draws, k), diagnostics::ess_bulk(draws, k), tr, te, run_.dim + t);
  }
  auto name = [this](uint64_t id) {
    if (id < run_.dim) return coordinate_name(id, run_.dim, run_.given.intercept);
    return id == run_.dim ? std::string("lp__") : coordinate_name(run_.track[id - run_.dim - 1], run_.dim, run_.given.intercept);
  };
  if (v.finite) v.max_rhat_at = name(v.max_rhat_id);
  if (std::isfinite(v.min_ess)) v.min_ess_at = name(v.min_ess_id);
  return v;
}

Status Engine::end_stage(SampleObserver& obs, bool* go_on) {
  const double n = static_cast<double>(run_.rows);
  StageCost c;
  c.passes = static_cast<double>(rows_read_) / n;
  c.setup_passes = static_cast<double>(run_.setup_rows) / n;
  c.seconds = sample_seconds();
  c.time_limit = run_.given.time_limit;
  if (stage_.index == 0 && !(run_.max_passes > 0)) max_passes_ = kMaxPassesFactor * c.passes;
  c.max_passes = max_passes_;
  const StageDecision d = decide_stage(run_, stage_, stage_verdict(), c);
  stage_verdicts_.push_back(d.reason);
  stop_reason_ = d.reason;
  *go_on = d.go_on;
  if (!d.go_on) return Status::ok();
  // The next stage keeps the states after this one's end: everything kept so far is burn-in.
  stage_ = stage_of(run_, stage_.index + 1);
  moments_.reset();
  if (rb_) rb_->reset();
  diagnostics_.restart(stage_.draws);
  for (auto& chain : tracked_draws_) {
    for (auto& column : chain) column.clear();
  }
  draws_ = 0;
  if (predictive_) predictive_->reset();
  burn_in_offered_ = false;
  return obs.on_stage(staged(run_, stage_));
}

Status Engine::finish(bool stopped, SampleResult* out) {
  SampleResult r;
  r.run = staged(run_, stage_);
  if (rb_ && stage_.index > 0) {
    const Snapshot& snap = chains_.front()->snapshot();
    r.run.rao_blackwell_refreshes = snap.refreshes_in(stage_.iterations) - snap.refreshes_in(stage_.burn_in);
  }
  for (const auto& c : chains_) {
    r.run.least_noise_share = std::min(r.run.least_noise_share, c->least_noise_share());
    if (c->block_step() > 0) r.run.block_step = r.run.block_step > 0 ? std::min(r.run.block_step, c->block_step()) : c->block_step();
  }
  if (stopped) {
    stop_reason_ = fmt::format("stopped early (a signal, or --time-limit) in stage {}", stage_.index);
  } else if (!run_.until_mixed) {
    stop_reason_ = "the run's one length (" + run_.until_mixed_rule + ")";
  }
  r.stop_reason = stop_reason_;
  r.stage_verdicts = stage_verdicts_;
  // The chains and the readers have done their work: their memory goes before the result's
  // R-hat, ESS and MCSE (24 bytes a coordinate) come, so that these fit in the budget
  // (memory_plan.cpp counts what the chains do not free).
  chains_.clear();
  predictive_.reset();
  main_.reset();
  pass_.reset();
  test_stream_.reset();
  r.draws = draws_;
  r.sweep_proposed = sweep_proposed_;
  r.sweep_accepted = sweep_accepted_;
  moments_.finish(&r.mean, &r.sd);
  r.rhat.resize(run_.dim);
  r.ess.resize(run_.dim);
  r.mcse.resize(run_.dim);
  diagnostics_.finish(r.rhat, r.ess, r.mcse);
  if (rb_) take_conditional_moments(*rb_, &r, [this](uint64_t j) { return prior_exact(j); });
  // A coordinate in no row: the prior, exactly (SampleResult::prior_exact).
  const double prior_sd = std::sqrt(run_.given.prior_var);
  for (uint64_t j = 0; j < run_.dim; ++j) {
    if (!prior_exact(j)) continue;
    r.mean[j] = 0;
    r.sd[j] = prior_sd;
    r.mcse[j] = 0;
    r.rhat[j] = r.ess[j] = std::numeric_limits<double>::quiet_NaN();
    ++r.prior_exact;
  }
  DiagnosticsSummary& s = r.diagnostics;
  s.covered = diagnostics_.covered();
  // Every coordinate with diagnostics, as `agld summary` reads them from diagnostics.npy: the
  // covered ones, and any other whose mean is Rao-Blackwellized (its own R-hat). Counted as a
  // stage's verdict counts them, against the verdict's limit.
  StageVerdict all;
  for (uint64_t j = 0; j < run_.dim; ++j) all.add(r.rhat[j], r.ess[j], kRhatLimit, 0, j);
  s.finite = all.finite;
  s.rhat_above = all.rhat_above;
  s.max_rhat = all.max_rhat;
  s.max_rhat_at = all.max_rhat_id;
  s.min_ess = all.min_ess;
  s.min_ess_at = all.min_ess_id;
  Status st = diagnostics::rhat_by_rows(train_, r.rhat, run_.given.intercept, &r.by_rows);
  if (!st.is_ok()) return st;
  // The tracked draws, a column at a time, chain-major.
  r.tracked_draws.resize(run_.track.size() + 1);
  for (size_t t = 0; t < r.tracked_draws.size(); ++t) {
    for (auto& chain : tracked_draws_) {
      r.tracked_draws[t].insert(r.tracked_draws[t].end(), chain[t].begin(), chain[t].end());
      std::vector<double>().swap(chain[t]);
    }
  }
  r.last_eval = last_eval_;
  r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  r.stopped_early = stopped;
  *out = std::move(r);
  return Status::ok();
}

}  // namespace agld::sampler
