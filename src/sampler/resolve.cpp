// The defaults of a run (docs/samplers.md, "Defaults"), derived from the store: the method,
// the step, the batch, the run length, burn-in and thinning (counted per chain), the refresh
// period, the tracked coordinates, and the warnings a user must see before trusting the run.
#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "agld/feature_stats.hpp"
#include "common/mix.hpp"
#include "model/model.hpp"
#include "reader/order.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/method.hpp"
#include "sampler/plan.hpp"
#include "sampler/preconditioner.hpp"
#include "sampler/rao_blackwell.hpp"
#include "sampler/rare_rows.hpp"
#include "sampler/stages.hpp"

namespace agld::sampler {
namespace {

// The default batch: kDefaultBatch rows, or more on a large store, so that a pass is at most
// kIterationsPerPass iterations (docs/samplers.md, "Defaults": measured against 100 rows on the
// onehot oracle, a low-dimensional one, the criteo-shaped predictive and the collinear case).
constexpr uint64_t kDefaultBatch = 100;
constexpr uint64_t kIterationsPerPass = 1000;
// The default run length, in passes of the data (docs/samplers.md, "Defaults": #15's budget;
// measured against 10 on the oracles).
constexpr double kDefaultPasses = 20;
// Small stores, where kDefaultPasses passes cost little: at least the iterations that read
// kFloorRows rows (and at most kFloorNnz nonzeros), up to kFloorIterations; at least
// kFloorOldIterations in any case where those read under kFloorRows (stores of long rows).
constexpr uint64_t kFloorIterations = 100000;
constexpr uint64_t kFloorOldIterations = 10000;
constexpr uint64_t kFloorRows = 10000000;
constexpr double kFloorNnz = 1.5e8;
constexpr uint64_t kMinDefaultDraws = 100;  // kept states a chain, at least (the diagnostics)
constexpr uint64_t kDefaultTracked = 10;
constexpr const char* kDefaultMethod = "ptu-ca";
constexpr const char* kDefaultMethodInSourceOrder = "ptu-rr";
// The divergence radius is this many times the bound on a posterior draw's |theta|, so that
// a discretisation's widening of the chain's spread never reaches it.
constexpr double kDivergenceMargin = 10;

// Rows a chain's run of `it` iterations reads: its start, its batches and its refreshes.
struct Reads {
  const Snapshot* snap = nullptr;
  uint64_t start = 0, per_iteration = 0, per_refresh = 0;
  uint64_t operator()(uint64_t it) const { return start + it * per_iteration + snap->refreshes_in(it) * per_refresh; }
};

// The most iterations reading at most `rows` rows (0 if not even one).
uint64_t most_iterations(const Reads& reads, uint64_t rows) {
  uint64_t lo = 0, hi = 1;
  while (reads(hi) <= rows && hi < (uint64_t{1} << 62)) hi *= 2;
  while (lo + 1 < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    (reads(mid) <= rows ? lo : hi) = mid;
  }
  return lo;
}

// Stages (docs/samplers.md, "Until mixed"): on by default unless the length or the kept
// states are given (the user then asked for that run); R-hat needs 4 kept states a chain.
Status resolve_until_mixed(const SampleOptions& o, ResolvedSample* r) {
  if (o.until_mixed != "auto" && o.until_mixed != "on" && o.until_mixed != "off") {
    return Status::invalid_argument("--until-mixed must be auto, on or off, not '" + o.until_mixed + "'");
  }
  if (!(o.target_rhat > 1) || !std::isfinite(o.target_rhat)) return Status::invalid_argument("--target-rhat must be above 1");
  if (!(o.target_ess >= 0) || !std::isfinite(o.target_ess)) return Status::invalid_argument("--target-ess must be 0 or more");
  if (o.max_passes && (!(*o.max_passes > 0) || !std::isfinite(*o.max_passes))) {
    return Status::invalid_argument("--max-passes must be positive");
  }
  r->target_rhat = o.target_rhat;
  r->target_ess = o.target_ess;
  r->max_passes = o.max_passes.value_or(0);
  const bool fixed = o.iterations || o.epochs || o.burn_in || o.thin;
  if (o.until_mixed == "off") {
    r->until_mixed_rule = "off: given";
  } else if (o.until_mixed == "auto" && fixed) {
    r->until_mixed_rule = "off: the run's length or kept states were given (--iterations, --epochs, --burn-in, --thin); "
                          "--until-mixed on doubles such a run too";
  } else if (r->draws < 4) {
    if (o.until_mixed == "on") {
      return Status::invalid_argument(fmt::format("--until-mixed on needs 4 kept states a chain for R-hat; the run keeps {}", r->draws));
    }
    r->until_mixed_rule = fmt::format("off: {} kept states a chain, and R-hat needs 4", r->draws);
  } else {
    r->until_mixed = true;
    r->until_mixed_rule = fmt::format(
        "doubles the run (keeping each stage's second half) until every R-hat is at most {:g} and every ESS at least {:g}, "
        "within {}{}",
        r->target_rhat, r->target_ess,
        o.max_passes ? fmt::format("{:g} passes (given)", *o.max_passes)
                     : fmt::format("{:g} times the first stage's passes", kMaxPassesFactor),
        o.time_limit ? fmt::format(" and --time-limit {:g} s", *o.time_limit) : std::string());
  }
  return Status::ok();
}

// kDivergenceMargin times a bound on the norm of a posterior draw (docs/samplers.md,
// "Divergence"). With U = L + |theta|^2 / (2 prior_var) and the loss L >= 0, the mode has
// |theta*|^2 <= 2 prior_var U(theta*) <= 2 prior_var L(0); a log-concave likelihood makes the
// posterior's covariance at most prior_var I (Brascamp-Lieb), so a draw lies within about
// sqrt(prior_var d) of its mean, and the mean within that of the mode. L(0) <= N times the
// largest loss at margin 0 over the labels' range (the loss is convex in y).
double divergence_radius(const StoreMeta& m, const model::Model& model, double prior_var, uint64_t dim) {
  if (std::isinf(prior_var)) return std::numeric_limits<double>::infinity();
  const double at_zero = m.label_kind == LabelKind::kBinary
                             ? std::max(model.loss(1, 0), model.loss(-1, 0))
                             : std::max(model.loss(m.label_min, 0), model.loss(m.label_max, 0));
  const double l0 = static_cast<double>(m.rows) * at_zero;
  return kDivergenceMargin * std::sqrt(prior_var) * (std::sqrt(2 * l0) + 2 * std::sqrt(static_cast<double>(dim)));
}

}  // namespace

uint64_t stream_seed(uint64_t seed, uint64_t chain_id) { return mix64(mix64(seed ^ 0xacce55u) ^ chain_id); }

ReaderOptions main_reader_options(const ResolvedSample& r) {
  ReaderOptions o;
  o.order = r.access;
  // A snapshot refreshed once a pass meets every coordinate at the same place of a fixed cycle.
  const SnapshotInfo* snap = find_snapshot(r.snapshot);
  o.ca_moving_start = snap && snap->periodic;
  const uint64_t first = r.given.chain_id;
  if (r.own_streams && r.given.chains > 1) {
    for (uint64_t c = 0; c < r.given.chains; ++c) o.streams.push_back(stream_seed(r.given.seed, first + c));
    o.batch_size = static_cast<size_t>(r.batch * r.given.chains);
  } else {
    o.seed = stream_seed(r.given.seed, first);
    o.batch_size = static_cast<size_t>(r.batch);
  }
  return o;
}

ReaderOptions pass_reader_options(const Store& store, uint64_t seed) {
  ReaderOptions o;
  o.order = "ca";
  o.batch_size = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(store.meta().rows, 1), kPassBatch));
  o.seed = seed;
  return o;
}

Status resolve_options(const Store& train, const Store* test, const SampleOptions& o, ResolvedSample* out) {
  ResolvedSample r;
  r.given = o;
  const StoreMeta& m = train.meta();
  // The default method: ptu-ca, or on a store in its source order ptu-rr, whose every
  // minibatch is drawn from all rows (cyclic access there follows the order's trends;
  // docs/readers.md). plan_memory() checks that the store then fits the reader's cache.
  if (o.method) {
    r.method = *o.method;
    r.method_rule = "given";
  } else if (rows_shuffled(m)) {
    r.method = kDefaultMethod;
    r.method_rule = "default";
  } else {
    r.method = kDefaultMethodInSourceOrder;
    r.random_for_order = true;
    r.method_rule = std::string("default for a store in its source order (converted with --keep-order): ") +
                    kDefaultMethodInSourceOrder + " reads every pass in a fresh random order, where " + kDefaultMethod +
                    "'s cyclic order would follow any trend in the stored order";
  }
  Status st = split_method(r.method, &r.snapshot, &r.access, &r.dynamics);
  if (!st.is_ok()) return st;
  const model::ModelInfo* mi = model::find_model(o.model);
  if (!mi) return Status::invalid_argument("unknown --model '" + o.model + "' (known: logistic, linear)");
  auto model_obj = mi->make(o);
  if (model_obj->binary() && m.label_kind != LabelKind::kBinary) {
    return Status::invalid_argument("--model " + o.model + " needs binary labels, and " + train.path() +
                                    " holds real ones (convert it with --task binary)");
  }
  if (test && model_obj->binary() && test->meta().label_kind != LabelKind::kBinary) {
    return Status::invalid_argument("--model " + o.model + " needs binary labels, and the test store " +
                                    test->path() + " holds real ones");
  }
  if (!model_obj->binary()) r.noise_var = o.noise_var;
  if (m.rows == 0) return Status::invalid_argument(train.path() + " has no rows");
  if (test && test->meta().features > m.features) {
    return Status::invalid_argument("the test store has " + std::to_string(test->meta().features) +
                                    " features and the training store " + std::to_string(m.features));
  }
  if (!(o.prior_var > 0)) return Status::invalid_argument("--prior-var must be positive");
  if (!(o.noise_var > 0) || !std::isfinite(o.noise_var)) return Status::invalid_argument("--noise-var must be positive and finite");
  if (o.chains == 0) return Status::invalid_argument("--chains must be at least 1");
  if (o.precondition != "diag" && o.precondition != "none") {
    return Status::invalid_argument("unknown --precondition '" + o.precondition + "' (known: diag, none)");
  }
  if (!o.metric.empty() && o.metric != "diag" && o.precondition != "diag") {
    return Status::invalid_argument("--metric sets the preconditioner's M: it needs --precondition diag (the default)");
  }
  if (o.chain_id == 0) return Status::invalid_argument("--chain-id must be at least 1 (chains are numbered from 1)");
  const uint64_t n_rows = m.rows;
  r.rows = n_rows;
  r.dim = m.features + (o.intercept ? 1 : 0);
  if (r.dim == 0) return Status::invalid_argument(train.path() + " has no features (and no --intercept)");
  if (r.dim > uint64_t{std::numeric_limits<uint32_t>::max()}) {
    return Status::invalid_argument("too many coordinates for this build: " + std::to_string(r.dim));
  }
  const SnapshotInfo& snapshot_info = *find_snapshot(r.snapshot);
  const reader::OrderInfo& order_info = *reader::find_order(r.access);
  const DynamicsInfo& dynamics_info = *find_dynamics(r.dynamics);
  const bool full = snapshot_info.full_batch;
  r.refresh_subsample = snapshot_info.refresh_rows == RefreshRows::kSubsample;
  r.underdamped = dynamics_info.state_dim == 2;
  if (o.batch && *o.batch == 0) return Status::invalid_argument("--batch must be at least 1");
  const uint64_t default_batch = std::max(kDefaultBatch, (n_rows + kIterationsPerPass - 1) / kIterationsPerPass);
  r.batch = full ? n_rows : std::min<uint64_t>(o.batch.value_or(default_batch), n_rows);
  const uint64_t per_pass = (n_rows + r.batch - 1) / r.batch;
  // Random orders: one sequence a chain, so that the chains are independent given the data
  // (ca has one sequence: every chain reads the same batches).
  r.own_streams = order_info.seeded && !full && !o.share_batches;

  // The step: 1 / L with L = 1/s2p + c max(sum_i |x_i|^2, (N/n) max_i |x_i|^2), c bounding
  // l''. The sum bounds the largest curvature of U (so the full-gradient dynamics is
  // stable); the second term bounds the curvature one row brings into a minibatch estimate,
  // scaled by N/n (docs/samplers.md).
  const double one = o.intercept ? 1.0 : 0.0;
  const double sum_sq = std::max(m.row_sq_norm_sum + one * static_cast<double>(n_rows),
                                 static_cast<double>(n_rows) / static_cast<double>(r.batch) * (m.row_sq_norm_max + one));
  const double inv_s2p = std::isinf(o.prior_var) ? 0.0 : 1.0 / o.prior_var;
  if (o.step) {
    r.step = *o.step;
    r.step_rule = "given";
  } else {
    r.step = 1.0 / (inv_s2p + model_obj->curvature() * sum_sq);
    r.step_rule = "1 / (1/prior_var + curvature * max(sum of squared row norms, N/batch * largest squared row norm))";
  }
  if (!(r.step > 0) || !std::isfinite(r.step)) return Status::invalid_argument("--step must be positive");
  if (o.time_limit && !(*o.time_limit > 0)) return Status::invalid_argument("--time-limit must be positive");
  r.divergence_radius = divergence_radius(m, *model_obj, o.prior_var, r.dim);
  // Under diag, eta M_j is checked (preconditioner.cpp); the underdamped dynamics' h by
  // resolve_dynamics().
  if (o.precondition != "diag" && !r.underdamped && r.step * inv_s2p >= 1) {
    return Status::invalid_argument("--step must be below --prior-var (the prior alone makes larger steps unstable)");
  }

  // The rare coordinates' Gibbs sweep (docs/samplers.md): where --rao-blackwell's
  // conditionals by quadrature may apply (resolve_rao_blackwell decides, with the memory); its
  // second pass a refresh is counted in the default length.
  if (o.gibbs != "auto" && o.gibbs != "off") {
    return Status::invalid_argument("unknown --gibbs '" + o.gibbs + "' (known: auto, off)");
  }
  r.gibbs = false;
  r.gibbs_planned = o.gibbs == "auto" && o.rao_blackwell == "auto" && !model_obj->constant_curvature() &&
                    snapshot_info.refresh_rows == RefreshRows::kFullPass && !dynamics_info.eval_shift &&
                    std::isfinite(o.prior_var) && has_feature_stats(train);
  if (r.gibbs_planned) {  // and some coordinate to move (a store without one keeps its passes)
    RareRowCounts counts;
    const uint64_t limit = rare_rows_limit(n_rows, r.batch);
    AGLD_RETURN_IF_ERROR(count_rare_rows(train, limit, &counts));
    r.gibbs_planned = counts.coordinates(limit) > 0;
  }
  r.refresh = o.refresh.value_or(per_pass);
  if (r.refresh == 0) return Status::invalid_argument("--refresh must be at least 1");
  const uint64_t sb = o.snapshot_batch.value_or(std::max<uint64_t>(r.batch, (n_rows + 9) / 10));
  r.snapshot_batch = std::max<uint64_t>(1, (sb + r.batch - 1) / r.batch) * r.batch;  // whole batches

  // A row's nonzeros on average, the intercept's included: what the small-store floor and the
  // default thinning count.
  const double row_nnz = static_cast<double>(m.nnz) / static_cast<double>(n_rows) + (o.intercept ? 1 : 0);
  if (o.iterations && o.epochs) return Status::invalid_argument("give --iterations or --epochs, not both");
  if (o.iterations) {
    r.iterations = *o.iterations;
    r.length_rule = "given";
  } else if (o.epochs) {
    if (!(*o.epochs > 0)) return Status::invalid_argument("--epochs must be positive");
    r.iterations = static_cast<uint64_t>(std::ceil(*o.epochs * static_cast<double>(n_rows) / static_cast<double>(r.batch)));
    r.length_rule = "--epochs passes of minibatches";
  } else {
    // kDefaultPasses passes of the data a chain, counting what the strategy reads at its start
    // and its refreshes; small stores get more (kFloorIterations above).
    const auto snap = snapshot_info.make({n_rows, r.dim, r.refresh, r.snapshot_batch, model_obj.get()});
    Reads reads;
    reads.snap = snap.get();
    reads.per_iteration = r.batch;
    if (snap->refresh_rows() != RefreshRows::kNone) {
      const uint64_t refresh_rows = snap->refresh_rows() == RefreshRows::kFullPass ? n_rows : r.snapshot_batch;
      reads.start = refresh_rows;
      reads.per_refresh = refresh_rows * (r.gibbs_planned ? 2 : 1);
    }
    if (o.precondition == "diag") reads.start += preconditioner_rows(train);
    const uint64_t by_passes = most_iterations(reads, static_cast<uint64_t>(kDefaultPasses * static_cast<double>(n_rows)));
    const auto floor_rows = static_cast<uint64_t>(std::min(static_cast<double>(kFloorRows), kFloorNnz / std::max(row_nnz, 1.0)));
    const uint64_t floor = std::max(std::min(kFloorIterations, most_iterations(reads, floor_rows)),
                                    std::min(kFloorOldIterations, most_iterations(reads, kFloorRows)));
    r.iterations = std::max<uint64_t>({by_passes, floor, 1});
    r.length_rule = by_passes >= floor ? fmt::format("{:g} passes of the data a chain, the start's and refreshes' included{}", kDefaultPasses,
                                                     r.gibbs_planned ? " (two passes a refresh: --gibbs)" : "")
                                       : "a small store: the iterations that read 10^7 rows or 1.5e8 nonzeros, at most 100,000 (at least 10,000)";
  }
  if (r.iterations == 0) return Status::invalid_argument("the run has no iterations");
  r.burn_in = o.burn_in.value_or(r.iterations / 2);
  if (r.burn_in >= r.iterations) return Status::invalid_argument("--burn-in must be below the number of iterations");
  // Default thinning: a kept state costs O(d) (every coordinate brought current and added
  // to the moments), about four times what an iteration spends on each nonzero of its
  // batch (bench/sample_bench.sh); keep one every 4 d / (nnz of a batch) iterations, so
  // that keeping states costs no more than the iterations between; but keep at least 100
  // states a chain, which the diagnostics need.
  const double batch_nnz = static_cast<double>(r.batch) * row_nnz;
  const uint64_t kept_iterations = r.iterations - r.burn_in;
  const uint64_t by_cost = static_cast<uint64_t>(std::ceil(4 * static_cast<double>(r.dim) / std::max(batch_nnz, 1.0)));
  r.thin = o.thin.value_or(std::max<uint64_t>(1, std::min(by_cost, kept_iterations / kMinDefaultDraws)));
  if (r.thin == 0) return Status::invalid_argument("--thin must be at least 1");
  r.draws = kept_iterations / r.thin;
  r.eval_every = o.evaluations ? std::max<uint64_t>(1, r.iterations / o.evaluations) : 0;
  st = resolve_until_mixed(o, &r);
  if (!st.is_ok()) return st;

  if (o.track_default) {
    for (uint64_t j = 0; j < std::min<uint64_t>(kDefaultTracked, m.features); ++j) r.track.push_back(j);
    if (o.intercept) r.track.push_back(r.dim - 1);
  } else {
    r.track = o.track;
  }
  for (uint64_t j : r.track) {
    if (j >= r.dim) {
      return Status::invalid_argument("--track " + std::to_string(j + 1) + " is beyond the " + std::to_string(r.dim) + " coordinates");
    }
  }

  if (o.precondition == "diag" && !has_feature_stats(train)) r.warnings.push_back(feature_stats_note(train));
  if (!order_info.on_stored_order.empty() && !rows_shuffled(m)) {
    r.warnings.push_back(
        "the rows of " + train.path() + " are in their source order (converted with --keep-order, or by an agld "
        "that did not shuffle by default); " + std::string(order_info.on_stored_order) + " and assumes it has no trend: on time-ordered or sorted rows the chains drift with the data and sample the "
        "wrong posterior. Convert the store again without --keep-order, or use a random order (e.g. --method " +
        r.snapshot + "-rr); docs/readers.md says why");
  }

  r.epochs = static_cast<double>(r.iterations) * static_cast<double>(r.batch) / static_cast<double>(n_rows);
  *out = std::move(r);
  return Status::ok();
}

Status resolve_dynamics(const SampleOptions& o, ResolvedSample* r) {
  const DynamicsInfo* d = find_dynamics(r->dynamics);
  if (d->state_dim == 1) {
    if (o.friction) {
      std::string underdamped;
      for (const DynamicsInfo& u : registered_dynamics()) {
        if (u.state_dim == 2) underdamped += (underdamped.empty() ? "" : ", ") + std::string(u.name);
      }
      return Status::invalid_argument("--friction is the underdamped dynamics' (" + underdamped + "): --method " +
                                      r->method + " runs " + r->dynamics + ", which has none");
    }
    r->friction = 0;
    return Status::ok();
  }
  // The step h: hmc with D_f h = 1 is ld with eta = h^2 exactly (p' = -h G + sqrt(2) xi, theta'
  // = theta - h^2 G + sqrt(2) h xi), so h = sqrt(eta) keeps ld's bounds on the curvature and on
  // one row's kick (docs/samplers.md, "Dynamics").
  if (!o.step) {
    r->step = std::sqrt(r->step);
    r->step_rule = "sqrt of ld's step, " + r->step_rule;
  }
  const bool diag = o.precondition == "diag" && r->precondition_m_max > 0;
  if (o.friction) {
    if (!(*o.friction > 0) || !std::isfinite(*o.friction)) return Status::invalid_argument("--friction must be positive");
    r->friction = *o.friction;
    r->friction_rule = "given";
  } else {
    // 1 / h: the gradient noise's excess temperature is then ld's. A minibatch estimate's
    // noise of variance B a step heats ld by eta B / 2 and an underdamped dynamics by h B / (2 D)
    // (its momentum gathers the noise for 1 / (D h) steps); with h = sqrt(eta), D = 1 / h
    // matches them, and a smaller friction multiplies the heat by 1 / (D h) (docs/samplers.md,
    // "Dynamics", measures it).
    r->friction = 1 / r->step;
    r->friction_rule = "1 / h: the gradient noise heats the chain as much as ld's at eta = h^2";
  }
  // The prior alone must keep the step stable at the largest M (the one-step map's spectral
  // radius below 1: |det A| < 1 and |tr A| < 1 + det A).
  DynamicsParams p;
  p.step = r->step;
  p.precondition = diag ? r->precondition_m_max : 1.0;
  p.prior_var = o.prior_var;
  p.friction = r->friction;
  const GaussianStep one = d->step(p);
  const double a00 = 1 + one.n00, a11 = 1 + one.n11;
  const double det = a00 * a11 - one.n01 * one.n10, tr = a00 + a11;
  if (!(std::abs(det) < 1 && std::abs(tr) < 1 + det)) {
    return Status::invalid_argument(fmt::format(
        "--step {:.6g} with --friction {:.6g} is unstable for {} under the prior alone (largest M_j {:.6g}): give a "
        "smaller --step",
        r->step, r->friction, r->dynamics, p.precondition));
  }
  return Status::ok();
}

}  // namespace agld::sampler
