// The engine of sample(): K chains of a Langevin sampler of the AGLD family on a store
// (docs/samplers.md). Internal to the sampler layer; the services (src/services/sample.cpp)
// resolve the run, make its parts and hand them over.
//
// The engine is the loop (engine.cpp). It owns the readers and reads each batch once for every
// chain that needs it: under `ca` (or --share-batches) every chain steps on the same batch;
// under a random order one reader yields every chain's own seeded sequence
// (ReaderOptions::streams) and each chain steps on its slice. Refresh passes and test
// evaluations are read once too, and every chain takes each piece. The chains
// (sampler/chain.hpp) share nothing mutable, so they step on all cores (oneTBB) and the draws
// do not depend on the threads: K chains in one run are K one-chain runs with --chain-id.
// Kept states feed the pooled moments and the online diagnostics, coordinate by coordinate in
// chain order, also on all cores. Its state goes through an archive (common/state_archive.hpp;
// engine_state.cpp), whose bytes only the persistence layer knows.
#pragma once

#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <chrono>
#include <cmath>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "agld/file.hpp"
#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "common/state_archive.hpp"
#include "diagnostics/online_diagnostics.hpp"
#include "model/model.hpp"
#include "sampler/chain.hpp"
#include "sampler/intercept.hpp"
#include "sampler/moments.hpp"
#include "sampler/pass_stream.hpp"
#include "sampler/plan.hpp"
#include "sampler/predictive.hpp"
#include "sampler/preconditioner.hpp"
#include "sampler/rao_blackwell.hpp"
#include "sampler/run_plan.hpp"
#include "sampler/stages.hpp"
#include "sampler/unseen_move.hpp"

namespace agld::sampler {

// Writes a checkpoint of the run at `iteration` into file: the persistence layer's format,
// around the engine's state, which `state` writes through the archive it is given.
using Clock = std::chrono::steady_clock;

// Batches smaller than this (nonzeros, all chains) step the chains on the calling thread:
// handing them to other threads would cost more than the work.
constexpr uint64_t kParallelNnz = 4096;
constexpr uint64_t kRangeGrain = 1 << 14;  // coordinates a task, for O(d) sweeps

using CheckpointWriter = std::function<Status(WritableFile& file, uint64_t iteration,
                                              const std::function<void(StateWriter&)>& state)>;

class Engine {
 public:
  // plan: the run, resolved (sampler/run_plan.hpp); model and rb: its model and
  // Rao-Blackwell accumulators (or null); checkpoint: how a checkpoint file is written.
  Engine(const Store& train, const Store* test, RunPlan plan, std::unique_ptr<model::Model> model,
         std::unique_ptr<RaoBlackwell> rb, CheckpointWriter checkpoint)
      : train_(train),
        test_(test),
        run_(std::move(plan.run)),
        plan_(std::move(plan.memory)),
        pre_(std::move(plan.pre)),
        model_(std::move(model)),
        arena_(run_.given.threads ? static_cast<int>(run_.given.threads) : tbb::task_arena::automatic),
        intercept_(run_.given.intercept, static_cast<uint32_t>(run_.dim - 1)),
        test_intercept_(run_.given.intercept, static_cast<uint32_t>(run_.dim - 1)),
        moments_(run_.dim),
        rb_(std::move(rb)),
        diagnostics_(run_.dim, plan_.diagnosed, run_.given.chains, run_.draws),
        checkpoint_(std::move(checkpoint)),
        stage_(stage_of(run_, 0)) {}

  // resume: the state of a checkpoint (read past the run's identity), or null: a new run.
  Status run(SampleObserver& obs, SampleResult* result, StateReader* resume = nullptr);

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
  Status refresh(bool gather = false);
  Status batch_iteration(uint64_t k, bool keep, bool do_step);
  Status full_iteration(uint64_t k, bool keep, bool do_step);
  Status emit();
  // The end of a stage (docs/samplers.md, "Until mixed"): its verdict, and whether the run goes on
  // to the next; if so, the kept draws start again.
  StageVerdict stage_verdict() const;
  // Coordinate j is in no training row, under a finite prior: its posterior is the prior.
  bool prior_exact(uint64_t j) const {
    return !pre_.in_rows.empty() && std::isfinite(run_.given.prior_var) && !((pre_.in_rows[j / 64] >> (j % 64)) & 1);
  }
  Status end_stage(SampleObserver& obs, bool* go_on);
  Status evaluate(uint64_t k, SampleObserver& obs);
  void progress(uint64_t k, SampleObserver& obs);
  Status finish(bool stopped, SampleResult* result);
  // Checkpoints: at iteration k, every chain current (docs/reliability.md); engine_state.cpp.
  Status maybe_checkpoint(uint64_t k, SampleObserver& obs);
  void save_state(StateWriter& out, uint64_t k) const;
  Status load_state(StateReader& in, uint64_t* k);
  Status replay(SampleObserver& obs);

  // Whether every chain's work on these rows is worth handing to other threads.
  bool worth_threads(const Batch& b) const { return b.nnz() * chains_.size() >= kParallelNnz; }
  size_t index(const Chain& c) const { return static_cast<size_t>(c.id() - run_.given.chain_id); }
  // A chain's slice of a batch read by the main reader.
  Batch slice(const Batch& b, size_t c) const {
    return run_.own_streams && chains_.size() > 1 ? b.slice(c * run_.batch, run_.batch) : b;
  }
  bool is_draw(uint64_t j) const { return j > stage_.burn_in && (j - stage_.burn_in) % stage_.thin == 0; }
  bool is_eval(uint64_t j) const {
    return j > 0 && ((stage_.eval_every && j % stage_.eval_every == 0) || j == stage_.iterations);
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
  const ResolvedSample run_;  // the plan, fixed for the run
  MemoryPlan plan_;
  Preconditioner pre_;  // its levels go once the chains have their own; in_rows stays
  std::unique_ptr<model::Model> model_;
  tbb::task_arena arena_;
  Intercept intercept_, test_intercept_;
  std::vector<std::unique_ptr<Chain>> chains_;
  bool parallel_steps_ = false;  // batches large enough to step the chains on all cores
  bool sweeps_parallel_ = false; // d large enough to sweep the chains' coordinates on all cores

  std::unique_ptr<Reader> main_;
  std::unique_ptr<PassStream> pass_, test_stream_;

  PooledMoments moments_;
  std::unique_ptr<RaoBlackwell> rb_;  // null: the kept draws' moments alone
  std::optional<UnseenMove> unseen_;  // the exact move along the unseen directions, if any
  bool moves_ = false;                // the Gibbs sweep over the rare coordinates at each refresh
  diagnostics::OnlineDiagnostics diagnostics_;
  std::unique_ptr<Predictive> predictive_;
  // Each chain's kept lp__ and tracked values ([chain][column]), grown as they come.
  std::vector<std::vector<std::vector<double>>> tracked_draws_;
  uint64_t draws_ = 0;                              // kept states of each chain
  SampleObserver* obs_ = nullptr;

  // Accounting.
  uint64_t rows_read_ = 0, grad_evals_ = 0;
  uint64_t sweep_proposed_ = 0, sweep_accepted_ = 0;  // the Gibbs sweeps' steps, every chain's
  Clock::time_point start_, last_progress_;
  double eval_seconds_ = 0;
  std::optional<EvalRecord> last_eval_;

  // Checkpoints and resuming: every evaluation so far (replayed on resume), where each
  // reader's sequence starts, the bytes read before the resume, and whether the end of
  // burn-in was offered a checkpoint.
  std::vector<EvalRecord> evals_;
  uint64_t main_start_ = 0, pass_start_ = 0, test_start_ = 0, bytes_before_ = 0;
  bool burn_in_offered_ = false;
  CheckpointWriter checkpoint_;

  // The stage (stages.hpp; stage 0 unless the run goes on until mixed), the cap in passes (set
  // at the first stage's end unless given), and each ended stage's verdict.
  Stage stage_;
  double max_passes_ = 0;
  std::vector<std::string> stage_verdicts_;
  std::string stop_reason_;
};

}  // namespace agld::sampler
