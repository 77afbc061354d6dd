// optimize(): the mode of the posterior by preconditioned SVRG (docs/samplers.md, "The mode
// (`agld optimize`)"), on the sampler's own parts: a chain of the `ptu` strategy (SVRG-LD) at
// temperature 0 is SVRG. Each epoch:
//   1. a full-gradient pass in stored order at the snapshot x~ = x: A = sum_i l'_i(x~) x_i,
//      and with the same margins U(x~) and the Hessian's diagonal
//      H_jj = 1/s2p + sum_i l''_i(x~) x_ij^2; the stopping test on |x~/s2p + A|_M;
//   2. a pass of minibatches in the --access order, each step
//      x_j -= eta M_j (x_j/s2p + (N/n) sum_{i in S} (l'_i(x) - l'_i(x~)) x_ij + A_j)
//      on the batch's support only: between two visits a coordinate follows
//      x' = (1 - eta M_j/s2p) x - eta M_j A_j, whose k steps the chain applies at once when
//      it is next read (Langevin's lazy jump with no noise).
// The mode is the last snapshot: the point whose gradient norm was measured.
#include "sampler/optimizer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <fmt/format.h>
#include <limits>

#include "agld/feature_stats.hpp"
#include "agld/reader.hpp"
#include "common/huge_array.hpp"
#include "common/proc.hpp"
#include "model/model.hpp"
#include "reader/order.hpp"
#include "sampler/chain.hpp"
#include "sampler/intercept.hpp"
#include "sampler/pass_stream.hpp"
#include "sampler/plan.hpp"
#include "sampler/snapshot.hpp"
#include "sampler/unseen_move.hpp"

namespace agld {
namespace sampler {
namespace {

// The sampler's options for the same target: resolve_options() and make_preconditioner() then
// check them and choose the batch and the step by the sampler's rules.
SampleOptions as_sample(const OptimizeOptions& o) {
  SampleOptions s;
  s.model = o.model;
  s.noise_var = o.noise_var;
  s.prior_var = o.prior_var;
  s.intercept = o.intercept;
  s.method = "ptu-" + o.access;
  s.chains = 1;
  s.step = o.step;
  s.precondition = o.precondition;
  s.metric = "diag";  // the dense block is the sampler's (its gradient norm is in diag's M)
  s.batch = o.batch;
  s.epochs = 1;
  s.evaluations = 0;
  s.memory = o.memory;
  s.seed = o.seed;
  s.track_default = false;
  s.gibbs = "off";  // a mode moves no draws
  return s;
}

// The default batch: the sampler's (at most 100 rows), but small enough that an epoch makes at
// least kMinEpochSteps steps. SVRG's snapshot pays off only over many steps: on heart_scale
// (270 rows) the sampler's batch of 100 makes 3 steps an epoch and needs 239 epochs to the
// default tolerance, a batch of 2 needs 30 (docs/samplers.md, "The mode").
constexpr uint64_t kMaxDefaultBatch = 100;
constexpr uint64_t kMinEpochSteps = 100;

// Bytes of the optimizer's state beyond the chain: the mode's copy and H (8d each), and M's
// levels (1 a coordinate).
constexpr uint64_t kExtraPerCoordinate = 17;

}  // namespace

Status prepare_optimize(const Store& train, const Store* test, const OptimizeOptions& o, ResolvedOptimize* out,
                        Preconditioner* pre, OptimizePlan* plan) {
  const auto orders = reader_orders();
  if (std::none_of(orders.begin(), orders.end(), [&](const ReaderOrderInfo& x) { return x.name == o.access; })) {
    std::string known;
    for (const auto& x : orders) known += (known.empty() ? "" : ", ") + x.name;
    return Status::invalid_argument("unknown --access '" + o.access + "' (known: " + known + ")");
  }
  if (!(o.tol >= 0) || !std::isfinite(o.tol)) return Status::invalid_argument("--tol must be finite and at least 0");
  SampleOptions so = as_sample(o);
  if (!so.batch) so.batch = std::clamp<uint64_t>(train.meta().rows / kMinEpochSteps, 1, kMaxDefaultBatch);
  ResolvedSample rs;
  Status st = resolve_options(train, test, so, &rs);
  if (!st.is_ok()) return st;
  const auto model = model::find_model(rs.given.model)->make(rs.given);
  Preconditioner p;
  if (pre && o.precondition == "diag") {
    st = make_preconditioner(train, *model, o.step.has_value(), false, &rs, &p);
    if (!st.is_ok()) return st;
  }
  ResolvedOptimize r;
  r.given = o;
  r.noise_var = rs.noise_var;
  r.rows = rs.rows;
  r.dim = rs.dim;
  r.step = rs.step;
  r.step_rule = rs.step_rule;
  r.batch = rs.batch;
  r.iterations_per_epoch = (r.rows + r.batch - 1) / r.batch;
  r.precondition_levels = rs.precondition_levels;
  r.precondition_m_min = rs.precondition_m_min;
  r.precondition_m_max = rs.precondition_m_max;
  r.precondition_lambda = rs.precondition_lambda;
  r.precondition_kick = rs.precondition_kick;
  r.setup_rows = rs.setup_rows;
  const auto unseen = UnseenMove::make(train.meta().fields, o.intercept, r.dim, o.prior_var);
  r.unseen_directions = unseen ? unseen->directions() : 0;
  if (o.precondition == "diag" && !has_feature_stats(train)) r.warnings.push_back(feature_stats_note(train));
  if (!reader::find_order(o.access)->on_stored_order.empty() && !rows_shuffled(train.meta())) {
    r.warnings.push_back("the rows of " + train.path() + " are in their source order: passes of minibatches in --access " +
                         o.access + " follow it, which slows SVRG down on sorted or time-ordered rows (the mode it "
                         "finds is the same); --access rr, or a store converted without --keep-order, avoids it");
  }

  // Memory: the process, the chain (x, stamps, A, x~, a batch's scratch), the mode's copy, H
  // and M's levels; then the readers' least shares. The test reader keeps its store whole if
  // a quarter of what is left allows, the pass reader gets twice its least, the minibatch
  // reader the rest.
  const auto snap = find_snapshot("ptu")->make({r.rows, r.dim, r.iterations_per_epoch, 0, model.get()});
  const StoreMeta& m = train.meta();
  const uint64_t avg_nnz = (m.nnz + m.rows - 1) / std::max<uint64_t>(m.rows, 1) + 1;
  r.state_bytes = Chain::state_bytes(*snap, r.dim, 1, true) + kExtraPerCoordinate * r.dim + r.batch * 3 * 8 +
                  r.batch * avg_nnz * 12 + kPassBatch * 8;
  const uint64_t baseline = process_rss_bytes();
  const ReaderOptions main_opt = main_reader_options(rs), pass_opt = pass_reader_options(train, o.seed);
  const uint64_t main_min = reader_min_memory(train, main_opt), pass_min = reader_min_memory(train, pass_opt);
  const uint64_t test_min = test ? reader_min_memory(*test, pass_reader_options(*test, o.seed)) : 0;
  const uint64_t need = baseline + r.state_bytes + main_min + pass_min + test_min;
  if (o.memory < need) {
    return Status::invalid_argument("--memory " + mib(o.memory) + " is too small to optimize on this store: the state takes " +
                                    mib(r.state_bytes) + ", the readers at least " + mib(main_min + pass_min + test_min) +
                                    " and the process " + mib(baseline) + "; give at least " + mib(need));
  }
  OptimizePlan pl;
  const ReaderShares shares =
      split_readers(o.memory - baseline - r.state_bytes, main_min, pass_min, test_min,
                    test ? reader_whole_store_memory(*test, pass_reader_options(*test, o.seed)) : 0);
  pl.main = shares.main;
  pl.pass = shares.pass;
  pl.test = shares.test;
  r.reader_bytes = pl.main + pl.pass + pl.test;
  if (pre) *pre = std::move(p);
  if (plan) *plan = pl;
  *out = std::move(r);
  return Status::ok();
}

namespace {

using Clock = std::chrono::steady_clock;

class Optimizer {
 public:
  Optimizer(const Store& train, const Store* test, const ResolvedOptimize& r, OptimizePlan plan, Preconditioner pre)
      : train_(train),
        test_(test),
        r_(r),
        plan_(plan),
        pre_(std::move(pre)),
        model_(model::find_model(r.given.model)->make(as_sample(r.given))),
        inv_s2p_(std::isinf(r.given.prior_var) ? 0.0 : 1.0 / r.given.prior_var),
        intercept_(r.given.intercept, static_cast<uint32_t>(r.dim - 1)) {}

  Status run(OptimizeObserver& obs, OptimizeResult* out);

 private:
  Status open_readers();
  Status snapshot_pass(OptimizeEpoch* e);
  Status minibatch_epoch(OptimizeObserver& obs, bool* stopped);
  Status test_metrics(OptimizeResult* out);
  // Epochs are numbered from 1; the snapshot after epoch e belongs to it (the start to 0).
  Status diverged(uint64_t epoch, const std::string& what) const {
    return Status::invalid_argument(
        fmt::format("the optimizer diverged in epoch {} ({}): try a smaller --step than {:.6g}", epoch, what, r_.step));
  }
  double passes() const { return static_cast<double>(rows_read_) / static_cast<double>(r_.rows); }
  uint64_t bytes_read() const {
    return (main_ ? main_->stats().bytes_read : 0) + (pass_ ? pass_->reader().stats().bytes_read : 0);
  }

  const Store& train_;
  const Store* test_;
  ResolvedOptimize r_;
  OptimizePlan plan_;
  Preconditioner pre_;
  std::unique_ptr<model::Model> model_;
  double inv_s2p_;
  Intercept intercept_;
  std::unique_ptr<Chain> chain_;
  std::optional<UnseenMove> unseen_;
  std::unique_ptr<Reader> main_;
  std::unique_ptr<PassStream> pass_;
  HugeArray<double> mode_, h_;  // the last snapshot and the Hessian's diagonal there
  uint64_t k_ = 0;              // iterations made
  uint64_t epoch_ = 0;          // epochs of minibatches made
  uint64_t rows_read_ = 0, grad_evals_ = 0;
  Clock::time_point start_;
};

Status Optimizer::open_readers() {
  ResolvedSample rs;  // the minibatch reader of a one-chain ptu run in the --access order
  rs.given.seed = r_.given.seed;
  rs.given.chains = 1;
  rs.snapshot = "ptu";
  rs.access = r_.given.access;
  rs.batch = r_.batch;
  ReaderOptions o = main_reader_options(rs);
  o.memory = plan_.main;
  Status st = Reader::open(train_, o, &main_);
  if (!st.is_ok()) return st;
  o = pass_reader_options(train_, r_.given.seed);
  o.memory = plan_.pass;
  std::unique_ptr<Reader> pass;
  st = Reader::open(train_, o, &pass);
  if (!st.is_ok()) return st;
  pass_ = std::make_unique<PassStream>(std::move(pass));
  return Status::ok();
}

// The full-gradient pass at x~ = x (every coordinate current): A, U, H, and |g|_M.
Status Optimizer::snapshot_pass(OptimizeEpoch* e) {
  if (!chain_->sync(k_).is_ok()) return diverged(epoch_, "a non-finite state");
  if (unseen_) chain_->redraw_unseen(*unseen_);  // at temperature 0: the exact minimum along them
  chain_->begin_refresh();
  std::fill(h_.begin(), h_.end(), inv_s2p_);
  double loss = 0;
  const model::Model& model = *model_;
  Status st = pass_->take(r_.rows, [&](const Batch& piece) {
    const Batch& b = intercept_(piece);
    const std::span<const double> m = chain_->refresh_piece(b);
    for (size_t i = 0; i < b.size(); ++i) {
      loss += model.loss(b.labels[i], m[i]);
      const double c = model.d2loss(b.labels[i], m[i]);
      const auto idx = b.row_indices(i);
      const auto val = b.row_values(i);
      for (size_t q = 0; q < idx.size(); ++q) h_[idx[q]] += c * double{val[q]} * val[q];
    }
  });
  if (!st.is_ok()) return st;
  rows_read_ += r_.rows;
  grad_evals_ += r_.rows;
  const StridedSpan<const double> x = chain_->theta(), a = chain_->aggregate();
  double sq = 0, gm = 0;
  for (uint64_t j = 0; j < r_.dim; ++j) {
    const double g = x[j] * inv_s2p_ + a[j];
    sq += x[j] * x[j];
    gm += preconditioner_m(pre_, j) * g * g;
    mode_[j] = x[j];
  }
  e->epoch = epoch_;
  e->objective = loss + 0.5 * sq * inv_s2p_;
  e->grad_norm = std::sqrt(gm);
  e->passes = passes();
  e->seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  e->bytes_read = bytes_read();
  return Status::ok();
}

// One pass of minibatches: ceil(N / n) SVRG steps.
Status Optimizer::minibatch_epoch(OptimizeObserver& obs, bool* stopped) {
  for (uint64_t t = 0; t < r_.iterations_per_epoch; ++t) {
    Batch raw;
    Status st = main_->next(&raw);
    if (!st.is_ok()) return st;
    const Batch& b = intercept_(raw);
    rows_read_ += b.size();
    grad_evals_ += 2 * b.size();  // l'_i at x and at x~
    if (!chain_->step(k_, b, false, true).is_ok()) {
      return diverged(epoch_ + 1, fmt::format("a non-finite state at its step {} of {}", t + 1, r_.iterations_per_epoch));
    }
    ++k_;
    if (chain_->sync_due(k_) && !chain_->sync(k_).is_ok()) return diverged(epoch_ + 1, "a non-finite state");
    if ((t & 63) == 63 && obs.stop_requested()) {
      *stopped = true;
      return Status::ok();
    }
  }
  ++epoch_;
  return Status::ok();
}

// The plug-in test metrics at the mode: the mean of log p(y | x . mode), and the accuracy of
// predict(m) > 1/2 (binary) or the MSE of predict(m) (real).
Status Optimizer::test_metrics(OptimizeResult* out) {
  out->test_loglik = out->test_accuracy = out->test_mse = std::numeric_limits<double>::quiet_NaN();
  if (!test_) return Status::ok();
  ReaderOptions o = pass_reader_options(*test_, r_.given.seed);
  o.memory = plan_.test;
  std::unique_ptr<Reader> reader;
  Status st = Reader::open(*test_, o, &reader);
  if (!st.is_ok()) return st;
  PassStream stream(std::move(reader));
  Intercept icpt(r_.given.intercept, static_cast<uint32_t>(r_.dim - 1));
  double ll = 0, sq = 0;
  uint64_t right = 0;
  const uint64_t n = test_->meta().rows;
  st = stream.take(n, [&](const Batch& piece) {
    const Batch& b = icpt(piece);
    for (size_t i = 0; i < b.size(); ++i) {
      const auto idx = b.row_indices(i);
      const auto val = b.row_values(i);
      double m = 0;
      for (size_t q = 0; q < idx.size(); ++q) m += mode_[idx[q]] * val[q];
      const double y = b.labels[i], p = model_->predict(m);
      ll += model_->log_lik(y, m);
      right += (p > 0.5) == (y > 0);
      sq += (y - p) * (y - p);
    }
  });
  if (!st.is_ok()) return st;
  const double nd = static_cast<double>(n);
  out->test_loglik = ll / nd;
  if (model_->binary()) {
    out->test_accuracy = static_cast<double>(right) / nd;
  } else {
    out->test_mse = sq / nd;
  }
  return Status::ok();
}

Status Optimizer::run(OptimizeObserver& obs, OptimizeResult* out) {
  start_ = Clock::now();
  ChainConfig cfg;
  cfg.rows = r_.rows;
  cfg.dim = r_.dim;
  cfg.step = r_.step;
  cfg.level_m = pre_.level_m;
  cfg.level = pre_.level.empty() ? nullptr : pre_.level.data();
  cfg.prior_var = r_.given.prior_var;
  cfg.temperature = 0;
  cfg.model = model_.get();
  chain_ = std::make_unique<Chain>(1, r_.given.seed, cfg,
                                   find_snapshot("ptu")->make({r_.rows, r_.dim, r_.iterations_per_epoch, 0, model_.get()}));
  if (r_.unseen_directions) unseen_ = UnseenMove::make(train_.meta().fields, r_.given.intercept, r_.dim, r_.given.prior_var);
  mode_.reset(r_.dim);
  h_.reset(r_.dim);
  rows_read_ = r_.setup_rows;  // the preconditioner's reads count in the passes
  Status st = open_readers();
  if (!st.is_ok()) return st;
  st = obs.on_start(r_);
  if (!st.is_ok()) return st;

  OptimizeResult res;
  double g0 = 0, start_objective = 0, last_objective = 0;
  for (;;) {
    OptimizeEpoch e;
    st = snapshot_pass(&e);
    if (!st.is_ok()) return st;
    if (epoch_ == 0) {
      g0 = e.grad_norm;
      start_objective = e.objective;
    }
    e.rel_grad_norm = g0 > 0 ? e.grad_norm / g0 : 0.0;
    res.epochs.push_back(e);
    st = obs.on_epoch(e);
    if (!st.is_ok()) return st;
    if (!std::isfinite(e.objective) || !std::isfinite(e.grad_norm)) {
      return diverged(epoch_, "a non-finite objective or gradient at its snapshot");
    }
    // U >= 0 for every model here, and U(0) is where the search starts: an objective rising
    // past twice that is a step too large, not SVRG's noise.
    if (epoch_ > 0 && e.objective > last_objective && e.objective > 2 * start_objective + 1) {
      return diverged(epoch_, fmt::format("the objective rose from {:.6g} at the start to {:.6g}", start_objective, e.objective));
    }
    last_objective = e.objective;
    if (e.grad_norm <= r_.given.tol * g0) {
      res.stop_reason = "tolerance";
      break;
    }
    if (epoch_ >= r_.given.epochs) {
      res.stop_reason = "epochs";
      break;
    }
    bool stopped = obs.stop_requested();
    if (!stopped) {
      st = minibatch_epoch(obs, &stopped);
      if (!st.is_ok()) return st;
    }
    if (stopped) {
      res.stop_reason = "stopped";
      break;
    }
  }
  // The chain and the readers go before the result's arrays come.
  chain_.reset();
  main_.reset();
  pass_.reset();
  st = test_metrics(&res);
  if (!st.is_ok()) return st;
  res.run = r_;
  res.mode.assign(mode_.begin(), mode_.end());
  mode_.reset(0);
  res.sd.resize(r_.dim);
  for (uint64_t j = 0; j < r_.dim; ++j) res.sd[j] = 1 / std::sqrt(h_[j]);
  res.rows_read = rows_read_;
  res.grad_evals = grad_evals_;
  res.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  *out = std::move(res);
  return Status::ok();
}

}  // namespace
}  // namespace sampler

Status resolve_optimize(const Store& train, const Store* test, const OptimizeOptions& options, ResolvedOptimize* out) {
  return sampler::prepare_optimize(train, test, options, out, nullptr, nullptr);
}

Status optimize(const Store& train, const Store* test, const OptimizeOptions& options, OptimizeObserver& observer,
                OptimizeResult* out) {
  ResolvedOptimize r;
  sampler::Preconditioner pre;
  sampler::OptimizePlan plan;
  Status st = sampler::prepare_optimize(train, test, options, &r, &pre, &plan);
  if (!st.is_ok()) return st;
  sampler::Optimizer opt(train, test, r, plan, std::move(pre));
  return opt.run(observer, out);
}

}  // namespace agld
