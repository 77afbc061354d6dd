// sample(): K chains of a Langevin sampler of the AGLD family on a store (docs/samplers.md).
//
// The engine is the loop. It owns the readers and reads each batch once for every chain
// that needs it: under `ca` (or --share-batches) every chain steps on the same batch; under
// a random order one reader yields every chain's own seeded sequence (ReaderOptions::streams)
// and each chain steps on its slice. Refresh passes and test evaluations are read once too,
// and every chain takes each piece. The chains (sampler/chain.hpp) share nothing mutable, so
// they step on all cores (oneTBB) and the draws do not depend on the threads: K chains in one
// run are K one-chain runs with --chain-id. Kept states feed the pooled moments and the
// online diagnostics, coordinate by coordinate in chain order, also on all cores.
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>

#include "agld/checkpoint.hpp"
#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "common/proc.hpp"
#include "diagnostics/online_diagnostics.hpp"
#include "model/model.hpp"
#include "output/checkpoint.hpp"
#include "sampler/chain.hpp"
#include "sampler/intercept.hpp"
#include "sampler/moments.hpp"
#include "sampler/pass_stream.hpp"
#include "sampler/plan.hpp"
#include "sampler/predictive.hpp"
#include "sampler/preconditioner.hpp"
#include "sampler/rao_blackwell.hpp"
#include "sampler/snapshot.hpp"

namespace agld {
namespace {

using sampler::Chain;
using sampler::MemoryPlan;
using sampler::PassStream;
using Clock = std::chrono::steady_clock;

// Batches smaller than this (nonzeros, all chains) step the chains on the calling thread:
// handing them to other threads would cost more than the work.
constexpr uint64_t kParallelNnz = 4096;
constexpr uint64_t kRangeGrain = 1 << 14;  // coordinates a task, for O(d) sweeps

class Engine {
 public:
  Engine(const Store& train, const Store* test, const SampleOptions& given, const ResolvedSample& run, MemoryPlan plan,
         std::unique_ptr<model::Model> model, sampler::Preconditioner pre,
         std::unique_ptr<sampler::RaoBlackwell> rb)
      : train_(train),
        test_(test),
        given_(given),
        run_(run),
        plan_(std::move(plan)),
        pre_(std::move(pre)),
        model_(std::move(model)),
        arena_(run.options.threads ? static_cast<int>(run.options.threads) : tbb::task_arena::automatic),
        intercept_(run.options.intercept, static_cast<uint32_t>(run.dim - 1)),
        test_intercept_(run.options.intercept, static_cast<uint32_t>(run.dim - 1)),
        moments_(run.dim),
        rb_(std::move(rb)),
        diagnostics_(run.dim, plan_.diagnosed, run.options.chains, run.draws) {}

  // resume: a checkpoint read past its run section (resume_sample), or null.
  Status run(SampleObserver& obs, SampleResult* result, checkpoint::CheckpointIn* resume = nullptr);

 private:
  // f(chain) for every chain, on all cores if `parallel` (the work is worth it); the first
  // failure in chain order.
  template <typename F>
  Status for_chains(F&& f, bool parallel) {
    const size_t k = chains_.size();
    if (!parallel || k == 1 || arena_.max_concurrency() == 1) {
      for (auto& c : chains_) {
        Status st = f(*c);
        if (!st.is_ok()) return st;
      }
      return Status::ok();
    }
    std::vector<Status> st(k);
    arena_.execute([&] { tbb::parallel_for(size_t{0}, k, [&](size_t c) { st[c] = f(*chains_[c]); }); });
    for (const Status& s : st) {
      if (!s.is_ok()) return s;
    }
    return Status::ok();
  }
  // f(i0, i1) over [0, n) in ranges, on all cores if n is large enough to be worth it.
  template <typename F>
  void for_ranges(uint64_t n, F&& f) {
    if (n <= kRangeGrain || arena_.max_concurrency() == 1) {
      f(0, n);
      return;
    }
    arena_.execute([&] {
      tbb::parallel_for(tbb::blocked_range<uint64_t>(0, n, kRangeGrain),
                        [&](const tbb::blocked_range<uint64_t>& r) { f(r.begin(), r.end()); });
    });
  }

  Status open_readers();
  Status start();
  Status sync_all(uint64_t k, bool keep);
  void keep_states();
  void keep_conditionals();
  Status refresh();
  Status batch_iteration(uint64_t k, bool keep, bool do_step);
  Status full_iteration(uint64_t k, bool keep, bool do_step);
  Status emit();
  Status evaluate(uint64_t k, SampleObserver& obs);
  void progress(uint64_t k, SampleObserver& obs);
  void finish(bool stopped, SampleResult* result);
  // Checkpoints: at iteration k, every chain current (docs/reliability.md).
  Status maybe_checkpoint(uint64_t k, SampleObserver& obs);
  Status save(WritableFile& file, uint64_t k) const;
  Status load(checkpoint::CheckpointIn& in, uint64_t* k);
  Status replay(SampleObserver& obs);

  // Whether every chain's work on these rows is worth handing to other threads.
  bool worth_threads(const Batch& b) const { return b.nnz() * chains_.size() >= kParallelNnz; }
  size_t index(const Chain& c) const { return static_cast<size_t>(c.id() - run_.options.chain_id); }
  // A chain's slice of a batch read by the main reader.
  Batch slice(const Batch& b, size_t c) const {
    return run_.own_streams && chains_.size() > 1 ? b.slice(c * run_.batch, run_.batch) : b;
  }
  bool is_draw(uint64_t j) const { return j > run_.burn_in && (j - run_.burn_in) % run_.thin == 0; }
  bool is_eval(uint64_t j) const {
    return j > 0 && ((run_.eval_every && j % run_.eval_every == 0) || j == run_.iterations);
  }
  double sample_seconds() const {
    return std::chrono::duration<double>(Clock::now() - start_).count() - eval_seconds_;
  }
  uint64_t bytes_read() const {
    return bytes_before_ + (main_ ? main_->stats().bytes_read : 0) + (pass_ ? pass_->reader().stats().bytes_read : 0);
  }
  // Rows of each stream's sequence the main reader has delivered (its batches hold `batch`
  // rows of each).
  uint64_t main_position() const { return main_ ? main_start_ + main_->stats().batches * run_.batch : 0; }
  std::vector<StridedSpan<const double>> states() const {
    std::vector<StridedSpan<const double>> s;
    for (const auto& c : chains_) s.push_back(c->theta());
    return s;
  }

  const Store& train_;
  const Store* test_;
  SampleOptions given_;  // the options as given (a checkpoint keeps them)
  ResolvedSample run_;
  MemoryPlan plan_;
  sampler::Preconditioner pre_;  // its levels go once the chains have their own; in_rows stays
  std::unique_ptr<model::Model> model_;
  tbb::task_arena arena_;
  sampler::Intercept intercept_, test_intercept_;
  std::vector<std::unique_ptr<Chain>> chains_;
  bool parallel_steps_ = false;  // batches large enough to step the chains on all cores
  bool sweeps_parallel_ = false; // d large enough to sweep the chains' coordinates on all cores

  std::unique_ptr<Reader> main_;
  std::unique_ptr<PassStream> pass_, test_stream_;

  sampler::PooledMoments moments_;
  std::unique_ptr<sampler::RaoBlackwell> rb_;  // null: the kept draws' moments alone
  diagnostics::OnlineDiagnostics diagnostics_;
  std::unique_ptr<sampler::Predictive> predictive_;
  // Each chain's kept lp__ and tracked values ([chain][column]), grown as they come.
  std::vector<std::vector<std::vector<double>>> tracked_draws_;
  uint64_t draws_ = 0;                              // kept states of each chain
  SampleObserver* obs_ = nullptr;

  // Accounting.
  uint64_t rows_read_ = 0, grad_evals_ = 0;
  Clock::time_point start_, last_progress_;
  double eval_seconds_ = 0;
  std::optional<EvalRecord> last_eval_;

  // Checkpoints and resuming: every evaluation so far (replayed on resume), where each
  // reader's sequence starts, the bytes read before the resume, and whether the end of
  // burn-in was offered a checkpoint.
  std::vector<EvalRecord> evals_;
  uint64_t main_start_ = 0, pass_start_ = 0, test_start_ = 0, bytes_before_ = 0;
  bool burn_in_offered_ = false;
};

Status Engine::open_readers() {
  if (plan_.main) {
    ReaderOptions o = sampler::main_reader_options(run_);
    o.memory = plan_.main;
    o.start = main_start_;
    Status st = Reader::open(train_, o, &main_);
    if (!st.is_ok()) return st;
  }
  if (plan_.pass) {
    ReaderOptions o = sampler::pass_reader_options(train_, run_.options.seed);
    o.memory = plan_.pass;
    o.start = pass_start_;
    std::unique_ptr<Reader> r;
    Status st = Reader::open(train_, o, &r);
    if (!st.is_ok()) return st;
    pass_ = std::make_unique<PassStream>(std::move(r), pass_start_);
  }
  if (test_) {
    ReaderOptions o = sampler::pass_reader_options(*test_, run_.options.seed);
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
  if (run_.options.init.empty()) {
    return for_chains([](Chain& c) { c.start_dispersed(); return Status::ok(); }, sweeps_parallel_);
  }
  std::unique_ptr<sampler::CoordinateFile> init;
  Status st = sampler::CoordinateFile::open("--init", run_.options.init, run_.dim, 1, &init);
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

// After a refresh past burn-in: every chain's conditional means at its state, from the
// aggregate the refresh built there (sampler/rao_blackwell.hpp).
void Engine::keep_conditionals() {
  const auto x = states();
  std::vector<StridedSpan<const double>> a;
  for (const auto& c : chains_) a.push_back(c->aggregate());
  rb_->prepare(x.size());
  for_ranges(run_.dim, [&](uint64_t j0, uint64_t j1) { rb_->add(x, a, j0, j1); });
  rb_->next_sample(x.size());
}

// A refresh of every chain's snapshot at its theta (every coordinate current), the start's
// included: the rows are read once, and every chain takes each piece.
Status Engine::refresh() {
  const sampler::RefreshRows rows = chains_.front()->snapshot().refresh_rows();
  if (rows == sampler::RefreshRows::kNone) return Status::ok();
  Status st = for_chains([](Chain& c) { c.begin_refresh(); return Status::ok(); }, sweeps_parallel_);
  if (!st.is_ok()) return st;
  const size_t k = chains_.size();
  if (rows == sampler::RefreshRows::kFullPass) {
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
  e.burn_in = j <= run_.burn_in;
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
  p.iterations = run_.iterations;
  p.passes = static_cast<double>(rows_read_) / static_cast<double>(run_.rows);
  p.seconds = std::chrono::duration<double>(now - start_).count();
  p.rows = rows_read_;
  p.bytes_read = bytes_read();
  p.memory_bytes = process_rss_bytes();
  p.memory_budget = run_.options.memory;
  if (last_eval_ && !std::isnan(last_eval_->test_loglik)) p.test_loglik = last_eval_->test_loglik;
  obs.on_progress(p);
}

Status Engine::run(SampleObserver& obs, SampleResult* result, checkpoint::CheckpointIn* resume) {
  start_ = last_progress_ = Clock::now();
  obs_ = &obs;
  const sampler::SnapshotInfo* info = sampler::find_snapshot(run_.snapshot);
  sampler::ChainConfig cfg;
  cfg.rows = run_.rows;
  cfg.dim = run_.dim;
  cfg.dynamics = run_.dynamics;
  cfg.step = run_.step;
  cfg.friction = run_.friction;
  cfg.level_m = pre_.level_m;
  cfg.level = pre_.level.empty() ? nullptr : pre_.level.data();
  cfg.in_rows = pre_.in_rows;
  cfg.stamps_in_record = run_.stamps_in_record;
  cfg.prior_var = run_.options.prior_var;
  cfg.divergence_radius = run_.divergence_radius;
  cfg.dense = run_.options.dense;
  cfg.model = model_.get();
  cfg.track = run_.options.track;
  for (uint64_t c = 0; c < run_.options.chains; ++c) {
    auto snap = info->make({run_.rows, run_.dim, run_.refresh, run_.snapshot_batch, model_.get()});
    chains_.push_back(std::make_unique<Chain>(run_.options.chain_id + c, run_.options.seed, cfg, std::move(snap)));
  }
  std::vector<uint8_t>().swap(pre_.level);
  rows_read_ = run_.setup_rows;  // the preconditioner's reads count in the passes
  const StoreMeta& m = train_.meta();
  const uint64_t batch_nnz = run_.batch * ((m.nnz + m.rows - 1) / m.rows + 1);
  parallel_steps_ = batch_nnz * chains_.size() >= kParallelNnz && !chains_.front()->snapshot().full_batch();
  sweeps_parallel_ = run_.dim >= kRangeGrain;
  tracked_draws_.assign(chains_.size(), std::vector<std::vector<double>>(run_.options.track.size() + 1));
  if (test_) predictive_ = std::make_unique<sampler::Predictive>(test_->meta().rows, chains_.size(), *model_);
  uint64_t k0 = 0;
  Status st;
  if (resume) {
    st = load(*resume, &k0);
    if (!st.is_ok()) return st;
  }
  st = open_readers();
  if (!st.is_ok()) return st;
  st = obs.on_start(run_);
  if (!st.is_ok()) return st;
  if (resume) {
    st = replay(obs);
  } else {
    st = start();
    if (st.is_ok()) st = refresh();
  }
  if (!st.is_ok()) return st;

  const uint64_t K = run_.iterations;
  const bool full = chains_.front()->snapshot().full_batch();
  bool stopped = false;
  bool current = true;  // every chain current at k, nothing stepped since (a checkpoint may go here)
  uint64_t k = k0;
  for (; k <= K; ++k) {
    const bool last = k == K;
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
    if (keep) keep_states();
    if (eval) {
      st = evaluate(k, obs);
      if (!st.is_ok()) return st;
    }
    if (last && !keep) break;
    st = full ? full_iteration(k, keep, !last) : batch_iteration(k, keep, !last);
    if (!st.is_ok()) return st;
    if (keep) {
      st = emit();
      if (!st.is_ok()) return st;
    }
    if (last) break;
    if (chains_.front()->snapshot().refresh_due(k)) {
      st = for_chains([&](Chain& c) { return c.catch_up_rows(k + 1); }, sweeps_parallel_);
      if (st.is_ok()) st = refresh();
      if (!st.is_ok()) return st;
      if (rb_ && k >= run_.burn_in) keep_conditionals();
      current = true;
    }
    if ((k & 63) == 63) {
      progress(k, obs);
      if (obs.stop_requested() || (run_.options.time_limit && sample_seconds() > *run_.options.time_limit)) {
        stopped = true;
        break;
      }
    }
  }
  if (stopped && run_.eval_every && (!last_eval_ || last_eval_->iteration != k + 1)) {  // evaluate where it stopped
    st = sync_all(k + 1, false);
    if (st.is_ok()) st = evaluate(k + 1, obs);
    if (!st.is_ok()) return st;
  }
  finish(stopped, result);
  return Status::ok();
}

Status Engine::maybe_checkpoint(uint64_t k, SampleObserver& obs) {
  const bool burn_in_ended = !burn_in_offered_ && k >= run_.burn_in;
  if (burn_in_ended) burn_in_offered_ = true;
  if (!obs.checkpoint_due(k, burn_in_ended)) return Status::ok();
  return obs.on_checkpoint(k, [this, k](WritableFile& file) { return save(file, k); });
}

namespace {

void save_eval(checkpoint::CheckpointOut& out, const EvalRecord& e) {
  out.u64(e.iteration);
  out.f64(e.seconds);
  out.f64(e.eval_seconds);
  out.f64(e.passes);
  out.u64(e.grad_evals);
  out.u32(e.burn_in ? 1 : 0);
  out.u64(e.samples);
  out.f64(e.test_loglik);
  out.array(e.chain_test_loglik);
  out.f64(e.test_accuracy);
  out.f64(e.test_mse);
  out.u64(e.bytes_read);
  out.u64(e.memory_bytes);
}

Status load_eval(checkpoint::CheckpointIn& in, size_t chains, EvalRecord* e) {
  uint32_t burn_in = 0;
  AGLD_RETURN_IF_ERROR(in.u64(&e->iteration));
  AGLD_RETURN_IF_ERROR(in.f64(&e->seconds));
  AGLD_RETURN_IF_ERROR(in.f64(&e->eval_seconds));
  AGLD_RETURN_IF_ERROR(in.f64(&e->passes));
  AGLD_RETURN_IF_ERROR(in.u64(&e->grad_evals));
  AGLD_RETURN_IF_ERROR(in.u32(&burn_in));
  e->burn_in = burn_in != 0;
  AGLD_RETURN_IF_ERROR(in.u64(&e->samples));
  AGLD_RETURN_IF_ERROR(in.f64(&e->test_loglik));
  AGLD_RETURN_IF_ERROR(in.vec(&e->chain_test_loglik, chains, "an evaluation's chains"));
  AGLD_RETURN_IF_ERROR(in.f64(&e->test_accuracy));
  AGLD_RETURN_IF_ERROR(in.f64(&e->test_mse));
  AGLD_RETURN_IF_ERROR(in.u64(&e->bytes_read));
  return in.u64(&e->memory_bytes);
}

}  // namespace

// The whole state at iteration k (every chain current), streamed: the run's identity, the
// engine's counters and readers' positions, the evaluations and kept draws so far, every
// chain, the pooled moments, the diagnostics and the predictive.
Status Engine::save(WritableFile& file, uint64_t k) const {
  checkpoint::CheckpointOut out(file);
  checkpoint::save_run(out, given_, run_, train_, test_, k);
  out.u32(checkpoint::tag("ENGN"));
  out.u64(k);
  out.u64(draws_);
  out.u64(rows_read_);
  out.u64(grad_evals_);
  out.f64(std::chrono::duration<double>(Clock::now() - start_).count());
  out.f64(eval_seconds_);
  out.u64(bytes_read());
  out.u32(burn_in_offered_ ? 1 : 0);
  out.u64(main_position());
  out.u64(pass_ ? pass_->position() : 0);
  out.u64(test_stream_ ? test_stream_->position() : 0);
  out.u32(checkpoint::tag("EVAL"));
  out.u64(evals_.size());
  for (const EvalRecord& e : evals_) save_eval(out, e);
  out.u32(checkpoint::tag("KEPT"));
  for (const auto& chain : tracked_draws_) {
    for (const auto& column : chain) out.array(column);
  }
  for (const auto& c : chains_) c->save(out);
  moments_.save(out);
  if (rb_) rb_->save(out);
  diagnostics_.save(out);
  out.u32(predictive_ ? 1 : 0);
  if (predictive_) predictive_->save(out);
  return out.finish();
}

Status Engine::load(checkpoint::CheckpointIn& in, uint64_t* k) {
  AGLD_RETURN_IF_ERROR(in.expect(checkpoint::tag("ENGN"), "the engine"));
  AGLD_RETURN_IF_ERROR(in.u64(k));
  if (*k == 0 || *k >= run_.iterations) return in.corrupt("iteration " + std::to_string(*k) + " is not inside the run");
  double elapsed = 0;
  uint32_t offered = 0;
  AGLD_RETURN_IF_ERROR(in.u64(&draws_));
  AGLD_RETURN_IF_ERROR(in.u64(&rows_read_));
  AGLD_RETURN_IF_ERROR(in.u64(&grad_evals_));
  AGLD_RETURN_IF_ERROR(in.f64(&elapsed));
  AGLD_RETURN_IF_ERROR(in.f64(&eval_seconds_));
  AGLD_RETURN_IF_ERROR(in.u64(&bytes_before_));
  AGLD_RETURN_IF_ERROR(in.u32(&offered));
  burn_in_offered_ = offered != 0;
  AGLD_RETURN_IF_ERROR(in.u64(&main_start_));
  AGLD_RETURN_IF_ERROR(in.u64(&pass_start_));
  AGLD_RETURN_IF_ERROR(in.u64(&test_start_));
  // A checkpoint at k comes before iteration k keeps its state or evaluates: the draws and
  // evaluations before it are those of the iterations below k, so that a resumed run keeps
  // exactly the planned ones.
  const uint64_t kept_before = *k > run_.burn_in ? (*k - 1 - run_.burn_in) / run_.thin : 0;
  const uint64_t evals_before = run_.eval_every ? (*k - 1) / run_.eval_every : 0;
  if (draws_ != kept_before || !std::isfinite(elapsed) || !std::isfinite(eval_seconds_)) {
    return in.corrupt("the engine's counters are out of range (" + std::to_string(draws_) + " draws kept before iteration " +
                      std::to_string(*k) + ", which has " + std::to_string(kept_before) + ")");
  }
  start_ = Clock::now() - std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, elapsed)));
  AGLD_RETURN_IF_ERROR(in.expect(checkpoint::tag("EVAL"), "the evaluations"));
  uint64_t n = 0;
  AGLD_RETURN_IF_ERROR(in.u64(&n));
  if (n != evals_before) return in.corrupt(std::to_string(n) + " evaluations before iteration " + std::to_string(*k));
  evals_.resize(static_cast<size_t>(n));
  for (EvalRecord& e : evals_) AGLD_RETURN_IF_ERROR(load_eval(in, chains_.size(), &e));
  if (n > 0) last_eval_ = evals_.back();
  AGLD_RETURN_IF_ERROR(in.expect(checkpoint::tag("KEPT"), "the kept draws"));
  for (auto& chain : tracked_draws_) {
    for (auto& column : chain) {
      AGLD_RETURN_IF_ERROR(in.vec(&column, run_.draws, "a chain's kept draws"));
      if (column.size() != draws_) return in.corrupt("a chain's kept draws are not the run's count");
    }
  }
  for (auto& c : chains_) AGLD_RETURN_IF_ERROR(c->load(in));
  AGLD_RETURN_IF_ERROR(moments_.load(in));
  if (rb_) AGLD_RETURN_IF_ERROR(rb_->load(in));
  AGLD_RETURN_IF_ERROR(diagnostics_.load(in));
  uint32_t has_predictive = 0;
  AGLD_RETURN_IF_ERROR(in.u32(&has_predictive));
  if ((has_predictive != 0) != (predictive_ != nullptr)) return in.corrupt("a predictive where the run has none, or none where it has one");
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
      d.iteration = run_.burn_in + (i + 1) * run_.thin;
      d.lp = tracked_draws_[c][0][i];
      for (size_t t = 0; t < d.tracked.size(); ++t) d.tracked[t] = tracked_draws_[c][t + 1][i];
      AGLD_RETURN_IF_ERROR(obs.on_draw(d));
    }
  }
  return Status::ok();
}

void Engine::finish(bool stopped, SampleResult* out) {
  // The chains and the readers have done their work: their memory goes before the result's
  // R-hat, ESS and MCSE (24 bytes a coordinate) come, so that these fit in the budget
  // (memory_plan.cpp counts what the chains do not free).
  chains_.clear();
  predictive_.reset();
  main_.reset();
  pass_.reset();
  test_stream_.reset();
  SampleResult r;
  r.run = run_;
  r.draws = draws_;
  moments_.finish(&r.mean, &r.sd);
  r.rhat.resize(run_.dim);
  r.ess.resize(run_.dim);
  r.mcse.resize(run_.dim);
  diagnostics_.finish(r.rhat, r.ess, r.mcse);
  if (rb_) sampler::take_conditional_moments(*rb_, &r);
  DiagnosticsSummary& s = r.diagnostics;
  s.covered = diagnostics_.covered();
  s.max_rhat = s.min_ess = std::numeric_limits<double>::quiet_NaN();
  // Every coordinate with diagnostics, as `agld summary` reads them from diagnostics.npy: the
  // covered ones, and any other whose mean is Rao-Blackwellized (its own R-hat).
  for (uint64_t j = 0; j < run_.dim; ++j) {
    if (std::isfinite(r.rhat[j])) {
      ++s.finite;
      if (!(r.rhat[j] <= s.max_rhat)) {
        s.max_rhat = r.rhat[j];
        s.max_rhat_at = j;
      }
      s.rhat_above += r.rhat[j] > kRhatLimit;
    }
    if (std::isfinite(r.ess[j]) && !(r.ess[j] >= s.min_ess)) {
      s.min_ess = r.ess[j];
      s.min_ess_at = j;
    }
  }
  // The tracked draws, a column at a time, chain-major.
  r.tracked_draws.resize(run_.options.track.size() + 1);
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
}

// Everything sample() needs before it starts: the resolved options, the preconditioner (pre;
// null: not built, as resolve_sample() checks the options without reading the data) and the
// memory plan.
Status prepare(const Store& train, const Store* test, const SampleOptions& options, ResolvedSample* r,
               MemoryPlan* plan, sampler::Preconditioner* pre) {
  Status st = sampler::resolve_options(train, test, options, r);
  if (!st.is_ok()) return st;
  if (!options.init.empty()) {  // before any output: a bad --init is a usage error, not a failed run
    std::unique_ptr<sampler::CoordinateFile> init;
    st = sampler::CoordinateFile::open("--init", options.init, r->dim, 1, &init);
    if (st.is_ok()) st = init->check_column(0, false);
    if (st.is_ok() && init->cols() > 1) st = init->check_column(1, true);
    if (!st.is_ok()) return st;
  }
  auto model = model::find_model(r->options.model)->make(r->options);
  if (pre && r->options.precondition == "diag") {
    st = sampler::make_preconditioner(train, *model, options.step.has_value(), true, r, pre);
    if (!st.is_ok()) return st;
  }
  st = sampler::resolve_dynamics(options, r);
  if (!st.is_ok()) return st;
  const auto snap = sampler::find_snapshot(r->snapshot)->make({r->rows, r->dim, r->refresh, r->snapshot_batch, model.get()});
  st = sampler::resolve_rao_blackwell(train, *model, *snap, r);
  if (!st.is_ok()) return st;
  return sampler::plan_memory(train, test, r, *snap, plan);
}

}  // namespace

Status resolve_sample(const Store& train, const Store* test, const SampleOptions& options, ResolvedSample* out) {
  MemoryPlan plan;
  return prepare(train, test, options, out, &plan, nullptr);
}

Status sample(const Store& train, const Store* test, const SampleOptions& options, SampleObserver& observer,
              SampleResult* out) {
  ResolvedSample r;
  MemoryPlan plan;
  sampler::Preconditioner pre;
  Status st = prepare(train, test, options, &r, &plan, &pre);
  if (!st.is_ok()) return st;
  auto model = model::find_model(r.options.model)->make(r.options);
  std::unique_ptr<sampler::RaoBlackwell> rb;
  st = sampler::make_rao_blackwell(train, r, *model, &rb);
  if (!st.is_ok()) return st;
  Engine engine(train, test, options, r, std::move(plan), std::move(model), std::move(pre), std::move(rb));
  return engine.run(observer, out);
}

Status resume_sample(const Store& train, const Store* test, const SampleOptions& options, const ReadableFile& checkpoint,
                     SampleObserver& observer, SampleResult* out) {
  checkpoint::CheckpointIn in;
  Status st = checkpoint::CheckpointIn::open(checkpoint, &in);
  checkpoint::RunSection saved;
  if (st.is_ok()) st = checkpoint::load_run(in, &saved);
  if (!st.is_ok()) return st;
  ResolvedSample r;
  MemoryPlan plan;
  sampler::Preconditioner pre;
  st = prepare(train, test, options, &r, &plan, &pre);
  if (!st.is_ok()) return st;
  // What differs between the run and its checkpoint (agld's version, a store, an option) names the checkpoint.
  st = checkpoint::check_run(saved, train, test, &r);
  if (!st.is_ok()) return st.with_context(checkpoint.path());
  auto model = model::find_model(r.options.model)->make(r.options);
  std::unique_ptr<sampler::RaoBlackwell> rb;
  st = sampler::make_rao_blackwell(train, r, *model, &rb);
  if (!st.is_ok()) return st;
  Engine engine(train, test, options, r, std::move(plan), std::move(model), std::move(pre), std::move(rb));
  return engine.run(observer, out, &in);
}

Status read_checkpoint_info(const ReadableFile& checkpoint, CheckpointInfo* out) {
  checkpoint::CheckpointIn in;
  checkpoint::RunSection saved;
  Status st = checkpoint::CheckpointIn::open(checkpoint, &in);
  if (st.is_ok()) st = checkpoint::load_run(in, &saved);
  if (!st.is_ok()) return st;
  *out = std::move(saved.info);
  return Status::ok();
}

}  // namespace agld
