// sample(): the Langevin samplers of the AGLD family on a store (docs/samplers.md).
//
// One engine runs every snapshot strategy under every access order: the strategy is a
// policy object (sampler/snapshot.hpp), the order is the reader's, the model is a policy
// object (model/model.hpp) and the dynamics is overdamped Langevin (sampler/langevin.hpp).
// Iteration k, lazily (ALGORITHMS.md section 4): bring the batch's support to time k,
// compute the margins and s_i = l'(y_i, m_i), step the support to k + 1 with the old A,
// then let the strategy update sh and A. Every other coordinate stays where it was last
// touched until it is read; at draws, evaluations and refreshes every coordinate is
// brought current (O(d)).
#include <algorithm>
#include <boost/random/normal_distribution.hpp>
#include <chrono>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "common/huge_array.hpp"
#include "common/mix.hpp"
#include "common/proc.hpp"
#include "model/model.hpp"
#include "sampler/langevin.hpp"
#include "sampler/pass_stream.hpp"
#include "sampler/snapshot.hpp"

namespace agld {
namespace {

using sampler::Langevin;
using sampler::PassStream;
using sampler::RowVisitor;
using sampler::Snapshot;
using Clock = std::chrono::steady_clock;

constexpr uint32_t kInSupport = 0xFFFFFFFFu;   // stamp of a coordinate in this step's support
constexpr uint64_t kMaxGap = 0xFFFFFFF0u;      // stamps are uint32 offsets from the last sync
constexpr size_t kPassBatch = 4096;            // rows a batch of full passes and evaluations
constexpr uint64_t kDefaultBatch = 100;
constexpr double kDefaultEpochs = 10;
constexpr uint64_t kMinDefaultIterations = 10000;
constexpr uint64_t kDefaultTracked = 10;

const std::pair<std::string_view, std::string_view> kAliases[] = {
    {"lmc", "full-ca"},       {"sgld", "none-ra"},      {"svrg-ld", "ptu-ra"},
    {"saga-ld", "ppu-ra"},    {"svrg-ld+", "ptu+-ra"},  {"svrg-rr+", "ptu+-rr"},
    {"svrg-ca+", "ptu+-ca"},
};

Status split_method(const std::string& method, std::string* snapshot, std::string* access) {
  std::string name = method;
  for (const auto& [alias, means] : kAliases) {
    if (alias == name) name = std::string(means);
  }
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos) {
    return Status::invalid_argument("unknown --method '" + method + "' (expected SNAPSHOT-ACCESS, e.g. tmu-ca, or an alias such as sgld)");
  }
  *snapshot = name.substr(0, dash);
  *access = name.substr(dash + 1);
  if (!sampler::find_snapshot(*snapshot)) {
    std::string known;
    for (const auto& s : sampler::registered_snapshots()) known += std::string(known.empty() ? "" : ", ") + std::string(s.name);
    return Status::invalid_argument("unknown snapshot strategy '" + *snapshot + "' in --method " + method + " (known: " + known + ")");
  }
  const auto orders = reader_orders();
  if (std::none_of(orders.begin(), orders.end(), [&](const ReaderOrderInfo& o) { return o.name == *access; })) {
    std::string known;
    for (const auto& o : orders) known += (known.empty() ? "" : ", ") + o.name;
    return Status::invalid_argument("unknown access order '" + *access + "' in --method " + method + " (known: " + known + ")");
  }
  return Status::ok();
}

std::string mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  return buf;
}

ReaderOptions pass_reader_options(const Store& store, uint64_t seed) {
  ReaderOptions o;
  o.order = "ca";
  o.batch_size = static_cast<size_t>(std::min<uint64_t>(std::max<uint64_t>(store.meta().rows, 1), kPassBatch));
  o.seed = seed;
  return o;
}

// How the process's budget is split (resolve_sample computes it; sample() uses it).
struct Shares {
  uint64_t baseline = 0;  // the process before the run (code, mappings, the CLI)
  uint64_t state = 0;
  uint64_t main = 0, pass = 0, test = 0;  // reader shares (0: reader not opened)
};

Status plan_memory(const Store& train, const Store* test, const ResolvedSample& r,
                   const Snapshot& snap, uint64_t test_rows, Shares* out) {
  const uint64_t d = r.dim;
  const bool aggregate = !(r.snapshot == "none" || r.snapshot == "full");
  // theta, the gradient scratch, the stamps, A, the running mean and M2, the strategy's
  // own state, the test set's predictive accumulators, and the batch scratch.
  Shares s;
  s.state = d * (8 + 8 + 4 + (aggregate ? 8 : 0) + 16) + snap.state_bytes() + test_rows * 16 +
            (snap.full_batch() ? 0 : r.batch * 3 * 8) + kPassBatch * 8 + r.options.track.size() * 8;
  s.baseline = process_rss_bytes();
  const uint64_t budget = r.options.memory;
  ReaderOptions main_opt;
  main_opt.order = r.access;
  main_opt.batch_size = static_cast<size_t>(r.batch);
  const bool need_main = !snap.full_batch();
  const bool need_pass = snap.reads_full_passes();
  const uint64_t main_min = need_main ? reader_min_memory(train, main_opt) : 0;
  const uint64_t pass_min = need_pass ? reader_min_memory(train, pass_reader_options(train, 0)) : 0;
  const uint64_t test_min = test ? reader_min_memory(*test, pass_reader_options(*test, 0)) : 0;
  const uint64_t need = s.baseline + s.state + main_min + pass_min + test_min;
  if (budget < need) {
    return Status::invalid_argument(
        "--memory " + mib(budget) + " is too small for " + r.snapshot + "-" + r.access +
        " on this store: the sampler's state takes " + mib(s.state) + ", the readers at least " +
        mib(main_min + pass_min + test_min) + " and the process " + mib(s.baseline) +
        "; give at least " + mib(need));
  }
  uint64_t left = budget - s.baseline - s.state;
  if (test) {  // the test set is read whole at every evaluation: keep it whole if a quarter allows
    s.test = std::max(test_min, std::min(reader_whole_store_memory(*test, pass_reader_options(*test, 0)), left / 4));
    left -= s.test;
  }
  if (need_pass && need_main) {  // passes stream in stored order: twice the minimum is plenty
    s.pass = std::min(2 * pass_min, left - main_min);
    left -= s.pass;
  }
  if (need_main) {
    s.main = left;
  } else {
    s.pass = left;
  }
  *out = s;
  return Status::ok();
}

// Resolves everything but the memory plan.
Status resolve_options(const Store& train, const Store* test, const SampleOptions& o, ResolvedSample* out) {
  ResolvedSample r;
  r.options = o;
  Status st = split_method(o.method, &r.snapshot, &r.access);
  if (!st.is_ok()) return st;
  const model::ModelInfo* mi = model::find_model(o.model);
  if (!mi) return Status::invalid_argument("unknown --model '" + o.model + "' (known: logistic, linear)");
  const StoreMeta& m = train.meta();
  if (o.model == "logistic" && m.label_kind != LabelKind::kBinary) {
    return Status::invalid_argument("--model logistic needs binary labels, and " + train.path() +
                                    " holds real ones (convert it with --task binary)");
  }
  if (test && o.model == "logistic" && test->meta().label_kind != LabelKind::kBinary) {
    return Status::invalid_argument("--model logistic needs binary labels, and the test store " +
                                    test->path() + " holds real ones");
  }
  if (m.rows == 0) return Status::invalid_argument(train.path() + " has no rows");
  if (test && test->meta().features > m.features) {
    return Status::invalid_argument("the test store has " + std::to_string(test->meta().features) +
                                    " features and the training store " + std::to_string(m.features));
  }
  if (!(o.prior_var > 0)) return Status::invalid_argument("--prior-var must be positive");
  if (!(o.noise_var > 0) || !std::isfinite(o.noise_var)) return Status::invalid_argument("--noise-var must be positive and finite");
  const uint64_t n_rows = m.rows;
  r.rows = n_rows;
  r.dim = m.features + (o.intercept ? 1 : 0);
  if (r.dim == 0) return Status::invalid_argument(train.path() + " has no features (and no --intercept)");
  if (r.dim > uint64_t{std::numeric_limits<uint32_t>::max()}) {
    return Status::invalid_argument("too many coordinates for this build: " + std::to_string(r.dim));
  }
  const bool full = r.snapshot == "full";
  if (o.batch && *o.batch == 0) return Status::invalid_argument("--batch must be at least 1");
  r.batch = full ? n_rows : std::min<uint64_t>(o.batch.value_or(kDefaultBatch), n_rows);
  const uint64_t per_pass = (n_rows + r.batch - 1) / r.batch;

  // The step: 1 / L with L = 1/s2p + c max(sum_i |x_i|^2, (N/n) max_i |x_i|^2), c bounding
  // l''. The sum bounds the largest curvature of U (so the full-gradient dynamics is
  // stable); the second term bounds the curvature one row brings into a minibatch estimate,
  // scaled by N/n (docs/samplers.md).
  auto model_obj = mi->make(o);
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
  if (r.step * inv_s2p >= 1) {
    return Status::invalid_argument("--step must be below --prior-var (the prior alone makes larger steps unstable)");
  }

  if (o.iterations && o.epochs) return Status::invalid_argument("give --iterations or --epochs, not both");
  if (o.iterations) {
    r.iterations = *o.iterations;
  } else if (o.epochs) {
    if (!(*o.epochs > 0)) return Status::invalid_argument("--epochs must be positive");
    r.iterations = static_cast<uint64_t>(std::ceil(*o.epochs * static_cast<double>(n_rows) / static_cast<double>(r.batch)));
  } else {
    r.iterations = std::max<uint64_t>(static_cast<uint64_t>(std::ceil(kDefaultEpochs * static_cast<double>(per_pass))),
                                      kMinDefaultIterations);
  }
  if (r.iterations == 0) return Status::invalid_argument("the run has no iterations");
  r.burn_in = o.burn_in.value_or(r.iterations / 2);
  if (r.burn_in >= r.iterations) return Status::invalid_argument("--burn-in must be below the number of iterations");
  // Default thinning: a kept state costs O(d) (every coordinate brought current and added
  // to the moments), about four times what an iteration spends on each nonzero of its
  // batch (bench/sample_bench.sh); keep one every 4 d / (nnz of a batch) iterations, so
  // that keeping states costs no more than the iterations between.
  const double batch_nnz = static_cast<double>(r.batch) * (static_cast<double>(m.nnz) / static_cast<double>(n_rows) + (o.intercept ? 1 : 0));
  r.thin = o.thin.value_or(std::max<uint64_t>(1, static_cast<uint64_t>(std::ceil(4 * static_cast<double>(r.dim) / std::max(batch_nnz, 1.0)))));
  if (r.thin == 0) return Status::invalid_argument("--thin must be at least 1");
  r.refresh = o.refresh.value_or(per_pass);
  if (r.refresh == 0) return Status::invalid_argument("--refresh must be at least 1");
  const uint64_t sb = o.snapshot_batch.value_or(std::max<uint64_t>(r.batch, (n_rows + 9) / 10));
  r.snapshot_batch = std::max<uint64_t>(1, (sb + r.batch - 1) / r.batch) * r.batch;  // whole batches
  r.eval_every = o.evaluations ? std::max<uint64_t>(1, r.iterations / o.evaluations) : 0;

  if (o.track_default) {
    r.options.track.clear();
    for (uint64_t j = 0; j < std::min<uint64_t>(kDefaultTracked, m.features); ++j) r.options.track.push_back(j);
    if (o.intercept) r.options.track.push_back(r.dim - 1);
  }
  for (uint64_t j : r.options.track) {
    if (j >= r.dim) {
      return Status::invalid_argument("--track " + std::to_string(j + 1) + " is beyond the " + std::to_string(r.dim) + " coordinates");
    }
  }
  r.options.step = r.step;
  r.options.batch = r.batch;
  r.options.iterations = r.iterations;
  r.options.epochs = static_cast<double>(r.iterations) * static_cast<double>(r.batch) / static_cast<double>(n_rows);
  r.options.burn_in = r.burn_in;
  r.options.thin = r.thin;
  r.options.refresh = r.refresh;
  r.options.snapshot_batch = r.snapshot_batch;
  r.options.track_default = false;
  *out = std::move(r);
  return Status::ok();
}

// Rows with the intercept's constant feature appended (a view of b itself without one).
class Augment {
 public:
  Augment(bool on, uint32_t intercept) : on_(on), j_(intercept) {}
  const Batch& operator()(const Batch& b) {
    if (!on_) return b;
    offsets_.resize(b.size() + 1);
    indices_.clear();
    values_.clear();
    offsets_[0] = 0;
    for (size_t i = 0; i < b.size(); ++i) {
      const auto idx = b.row_indices(i);
      const auto val = b.row_values(i);
      indices_.insert(indices_.end(), idx.begin(), idx.end());
      values_.insert(values_.end(), val.begin(), val.end());
      indices_.push_back(j_);
      values_.push_back(1.0f);
      offsets_[i + 1] = indices_.size();
    }
    views_.clear();
    append_row_views(offsets_, indices_.data(), values_.data(), &views_);
    out_ = Batch{b.row_ids, b.labels, views_};
    return out_;
  }

 private:
  bool on_;
  uint32_t j_;
  std::vector<uint64_t> offsets_;
  std::vector<uint32_t> indices_;
  std::vector<float> values_;
  std::vector<BatchRow> views_;
  Batch out_;
};

class Engine final : public sampler::SnapshotHost {
 public:
  Engine(const Store& train, const Store* test, const ResolvedSample& run, const Shares& shares,
         std::unique_ptr<model::Model> model, std::unique_ptr<Snapshot> snap)
      : train_(train),
        test_(test),
        run_(run),
        shares_(shares),
        model_(std::move(model)),
        snap_(std::move(snap)),
        ld_(run.step, run.options.prior_var),
        dense_(run.options.dense),
        augment_(run.options.intercept, static_cast<uint32_t>(run.dim - 1)),
        test_augment_(run.options.intercept, static_cast<uint32_t>(run.dim - 1)),
        rng_(mix64(run.options.seed ^ 0x5eed0001u)) {}

  Status run(SampleObserver& obs, SampleResult* result);

  // SnapshotHost
  uint64_t rows() const override { return run_.rows; }
  uint64_t dim() const override { return run_.dim; }
  const model::Model& model() const override { return *model_; }
  std::span<const double> theta() const override { return x_; }
  std::span<double> aggregate() override { return a_; }
  Status full_pass(const RowVisitor& visit) override;
  Status subsample(uint64_t rows, const RowVisitor& visit) override;

 private:
  double normal() { return normal_(rng_); }
  double a_of(uint32_t j) const { return a_.empty() ? 0.0 : a_[j]; }
  // Brings coordinate j to time k (the steps it skipped, in one exact jump).
  void bring(uint32_t j, uint64_t k) {
    const uint64_t gap = k - sync_base_ - stamp_[j];
    if (gap) x_[j] = ld_.advance(x_[j], a_of(j), gap, normal());
    stamp_[j] = static_cast<uint32_t>(k - sync_base_);
  }
  Status sync_all(uint64_t k);
  Status open_readers();
  // Margins at the current theta (every coordinate of the rows current).
  void margins_of(const Batch& b, std::vector<double>* m) const;
  Status step_batch(uint64_t k, const Batch& b, bool draw, bool do_step);
  Status step_full(uint64_t k, bool draw, bool do_step);
  void emit(uint64_t k, double loss_sum, double loss_scale);
  Status evaluate(uint64_t j, SampleObserver& obs);
  Status diverged(uint64_t k) const {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", run_.step);
    return Status::invalid_argument("the chain diverged at iteration " + std::to_string(k) +
                                    " (a non-finite state): try a smaller --step than " + buf);
  }
  bool is_draw(uint64_t j) const { return j > run_.burn_in && (j - run_.burn_in) % run_.thin == 0; }
  bool is_eval(uint64_t j) const {
    return j > 0 && ((run_.eval_every && j % run_.eval_every == 0) || j == run_.iterations);
  }
  double sample_seconds() const {
    return std::chrono::duration<double>(Clock::now() - start_).count() - eval_seconds_;
  }
  uint64_t bytes_read() const {
    return (main_ ? main_->stats().bytes_read : 0) + (pass_ ? pass_->reader().stats().bytes_read : 0);
  }

  const Store& train_;
  const Store* test_;
  ResolvedSample run_;
  Shares shares_;
  std::unique_ptr<model::Model> model_;
  std::unique_ptr<Snapshot> snap_;
  Langevin ld_;
  bool dense_;
  Augment augment_, test_augment_;
  std::mt19937_64 rng_;
  boost::random::normal_distribution<double> normal_;

  std::unique_ptr<Reader> main_;
  std::unique_ptr<PassStream> pass_, test_stream_;

  // Per-coordinate state, read at random: huge pages (common/huge_array.hpp).
  HugeArray<double> x_, a_, g_;
  HugeArray<uint32_t> stamp_;
  uint64_t sync_base_ = 0;
  std::vector<uint32_t> support_;
  std::vector<double> margins_, s_, sh_, pass_margins_;

  // Accounting.
  uint64_t rows_read_ = 0, grad_evals_ = 0;
  Clock::time_point start_;
  double eval_seconds_ = 0;
  // Posterior moments over kept states (Welford).
  uint64_t draws_ = 0;
  std::vector<double> mean_, m2_;  // swept in order: ordinary pages
  DrawRecord draw_;
  SampleObserver* obs_ = nullptr;
  Status draw_status_;
  // The posterior predictive on the test rows: log-sum-exp of log p(y_t | theta_s) and the
  // sum of predictions over the states averaged so far.
  std::vector<double> lse_, pred_;
  uint64_t test_samples_ = 0;
  std::optional<EvalRecord> last_eval_;
};

Status Engine::open_readers() {
  const uint64_t seed = run_.options.seed;
  if (shares_.main) {
    ReaderOptions o;
    o.order = run_.access;
    o.batch_size = static_cast<size_t>(run_.batch);
    o.seed = mix64(seed ^ 0xacce55u);
    o.memory = shares_.main;
    Status st = Reader::open(train_, o, &main_);
    if (!st.is_ok()) return st;
  }
  if (shares_.pass) {
    ReaderOptions o = pass_reader_options(train_, seed);
    o.memory = shares_.pass;
    std::unique_ptr<Reader> r;
    Status st = Reader::open(train_, o, &r);
    if (!st.is_ok()) return st;
    pass_ = std::make_unique<PassStream>(std::move(r));
  }
  if (test_) {
    ReaderOptions o = pass_reader_options(*test_, seed);
    o.memory = shares_.test;
    std::unique_ptr<Reader> r;
    Status st = Reader::open(*test_, o, &r);
    if (!st.is_ok()) return st;
    test_stream_ = std::make_unique<PassStream>(std::move(r));
  }
  return Status::ok();
}

void Engine::margins_of(const Batch& b, std::vector<double>* m) const {
  m->resize(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    double s = 0;
    for (size_t e = 0; e < idx.size(); ++e) s += x_[idx[e]] * val[e];
    (*m)[i] = s;
  }
}

Status Engine::full_pass(const RowVisitor& visit) {
  if (!pass_) return Status::internal("a full pass without a pass reader");
  Status st = pass_->take(run_.rows, [&](const Batch& piece) {
    const Batch& b = augment_(piece);
    margins_of(b, &pass_margins_);
    visit(b, pass_margins_);
  });
  rows_read_ += run_.rows;
  grad_evals_ += run_.rows;
  return st;
}

Status Engine::subsample(uint64_t rows, const RowVisitor& visit) {
  if (!main_) return Status::internal("a subsample without a reader");
  for (uint64_t got = 0; got < rows;) {
    Batch raw;
    Status st = main_->next(&raw);
    if (!st.is_ok()) return st;
    const Batch& b = augment_(raw);
    margins_of(b, &pass_margins_);
    visit(b, pass_margins_);
    got += b.size();
    rows_read_ += b.size();
    grad_evals_ += b.size();
  }
  return Status::ok();
}

Status Engine::sync_all(uint64_t k) {
  bool finite = true;
  for (uint32_t j = 0; j < run_.dim; ++j) {
    if (!dense_) bring(j, k);
    stamp_[j] = 0;
    finite &= std::isfinite(x_[j]);
  }
  sync_base_ = k;
  return finite ? Status::ok() : diverged(k);
}

// A kept state (every coordinate current): moments, and the observer's draw.
void Engine::emit(uint64_t k, double loss_sum, double loss_scale) {
  ++draws_;
  double sq = 0;
  const double inv = 1.0 / static_cast<double>(draws_);
  for (size_t j = 0; j < x_.size(); ++j) {
    const double v = x_[j];
    sq += v * v;
    const double delta = v - mean_[j];
    mean_[j] += delta * inv;
    m2_[j] += delta * (v - mean_[j]);
  }
  draw_.iteration = k;
  draw_.lp = -(0.5 * sq * ld_.inv_prior_var() + loss_scale * loss_sum);
  draw_.tracked.resize(run_.options.track.size());
  for (size_t t = 0; t < draw_.tracked.size(); ++t) draw_.tracked[t] = x_[run_.options.track[t]];
  if (draw_status_.is_ok()) draw_status_ = obs_->on_draw(draw_);
}

Status Engine::step_batch(uint64_t k, const Batch& b, bool draw, bool do_step) {
  const size_t n = b.size();
  margins_.resize(n);
  s_.resize(n);
  sh_.resize(n);
  support_.clear();
  // The batch's coordinates are scattered over d: ask for their state's cache lines first,
  // so that the misses overlap instead of queueing behind each jump (bench/sample_bench.sh).
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t j : b.row_indices(i)) {
      __builtin_prefetch(&stamp_[j]);
      __builtin_prefetch(&x_[j]);
      __builtin_prefetch(&g_[j]);
    }
  }
  for (size_t i = 0; i < n; ++i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    double m = 0;
    for (size_t e = 0; e < idx.size(); ++e) {
      const uint32_t j = idx[e];
      if (!dense_ && stamp_[j] != kInSupport) {
        bring(j, k);
        stamp_[j] = kInSupport;
        support_.push_back(j);
      }
      m += x_[j] * val[e];
    }
    if (!std::isfinite(m)) return diverged(k);
    margins_[i] = m;
  }
  for (size_t i = 0; i < n; ++i) s_[i] = model_->dloss(b.labels[i], margins_[i]);
  snap_->shadows(b, sh_);
  grad_evals_ += n * (1 + snap_->shadow_cost());
  rows_read_ += n;
  if (draw) {
    double loss = 0;
    for (size_t i = 0; i < n; ++i) loss += model_->loss(b.labels[i], margins_[i]);
    emit(k, loss, static_cast<double>(run_.rows) / static_cast<double>(n));
  }
  if (!do_step) {
    for (uint32_t j : support_) stamp_[j] = static_cast<uint32_t>(k - sync_base_);
    return Status::ok();
  }
  // g = (N/n) sum_i (s_i - sh_i) x_i; sh_ is not needed after this and holds the coefficients.
  const double scale = static_cast<double>(run_.rows) / static_cast<double>(n);
  for (size_t i = 0; i < n; ++i) sh_[i] = scale * (s_[i] - sh_[i]);
  sampler::add_rows(g_, b, sh_);
  if (dense_) {  // every coordinate, one plain step (no jumps): the reference for the tests
    for (uint32_t j = 0; j < run_.dim; ++j) {
      x_[j] = ld_.step(x_[j], g_[j], a_of(j), normal());
      g_[j] = 0;
    }
    sync_base_ = k + 1;
  } else {
    const uint32_t next = static_cast<uint32_t>(k + 1 - sync_base_);
    for (uint32_t j : support_) {
      x_[j] = ld_.step(x_[j], g_[j], a_of(j), normal());
      g_[j] = 0;
      stamp_[j] = next;
    }
  }
  snap_->after_step(*this, b, s_);
  return Status::ok();
}

// `full`: the batch is every row. theta is current in every coordinate on entry.
Status Engine::step_full(uint64_t k, bool draw, bool do_step) {
  double loss = 0;
  Status st = full_pass([&](const Batch& b, std::span<const double> margins) {
    s_.resize(b.size());
    for (size_t i = 0; i < b.size(); ++i) {
      if (draw) loss += model_->loss(b.labels[i], margins[i]);
      s_[i] = model_->dloss(b.labels[i], margins[i]);
    }
    sampler::add_rows(g_, b, s_);
  });
  if (!st.is_ok()) return st;
  if (draw) emit(k, loss, 1.0);
  if (!do_step) {
    std::fill(g_.begin(), g_.end(), 0.0);
    return Status::ok();
  }
  for (uint32_t j = 0; j < run_.dim; ++j) {
    x_[j] = ld_.step(x_[j], g_[j], 0.0, normal());
    g_[j] = 0;
    if (!std::isfinite(x_[j])) return diverged(k);
  }
  sync_base_ = k + 1;
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
    const uint64_t nt = test_->meta().rows;
    const bool pool = !e.burn_in;
    if (pool) ++test_samples_;
    e.samples = pool ? test_samples_ : 1;
    const double log_s = std::log(static_cast<double>(e.samples));
    double ll = 0, sq = 0;
    uint64_t right = 0;
    Status st = test_stream_->take(nt, [&](const Batch& piece) {
      const Batch& b = test_augment_(piece);
      margins_of(b, &pass_margins_);
      for (size_t i = 0; i < b.size(); ++i) {
        const double y = b.labels[i], m = pass_margins_[i];
        double lp = model_->log_lik(y, m), pred = model_->predict(m);
        if (pool) {
          const uint64_t t = b.row_ids[i];
          const double hi = std::max(lse_[t], lp);
          lse_[t] = hi + std::log(std::exp(lse_[t] - hi) + std::exp(lp - hi));
          pred_[t] += pred;
          lp = lse_[t] - log_s;
          pred = pred_[t] / static_cast<double>(e.samples);
        }
        ll += lp;
        if (model_->binary()) {
          right += (pred > 0.5) == (y > 0);
        } else {
          sq += (y - pred) * (y - pred);
        }
      }
    });
    if (!st.is_ok()) return st;
    const double ntd = static_cast<double>(nt);
    e.test_loglik = ll / ntd;
    if (model_->binary()) {
      e.test_accuracy = static_cast<double>(right) / ntd;
    } else {
      e.test_mse = sq / ntd;
    }
  }
  e.bytes_read = bytes_read();
  e.memory_bytes = process_rss_bytes();
  eval_seconds_ += std::chrono::duration<double>(Clock::now() - t0).count();
  e.eval_seconds = eval_seconds_;
  last_eval_ = e;
  return obs.on_eval(e);
}

Status Engine::run(SampleObserver& obs, SampleResult* result) {
  start_ = Clock::now();
  obs_ = &obs;
  const uint64_t d = run_.dim;
  x_.reset(d);
  g_.reset(d);
  stamp_.reset(d);
  if (!(run_.snapshot == "none" || run_.snapshot == "full")) a_.reset(d);
  mean_.assign(d, 0.0);
  m2_.assign(d, 0.0);
  if (test_) {
    lse_.assign(test_->meta().rows, -std::numeric_limits<double>::infinity());
    pred_.assign(test_->meta().rows, 0.0);
  }
  Status st = open_readers();
  if (!st.is_ok()) return st;
  st = obs.on_start(run_);
  if (!st.is_ok()) return st;
  st = snap_->start(*this);
  if (!st.is_ok()) return st;

  const uint64_t K = run_.iterations;
  auto last_progress = Clock::now();
  bool stopped = false;
  uint64_t k = 0;
  const bool full = snap_->full_batch();
  for (; k <= K; ++k) {
    const bool last = k == K;
    const bool draw = is_draw(k), eval = is_eval(k);
    if (draw || eval || full || k - sync_base_ >= kMaxGap) {
      st = sync_all(k);
      if (!st.is_ok()) return st;
    }
    if (eval) {
      st = evaluate(k, obs);
      if (!st.is_ok()) return st;
    }
    if (last && !draw) break;
    if (full) {
      st = step_full(k, draw, !last);
    } else {
      Batch raw;
      st = main_->next(&raw);
      if (!st.is_ok()) return st;
      st = step_batch(k, augment_(raw), draw, !last);
    }
    if (!st.is_ok()) return st;
    if (!draw_status_.is_ok()) return draw_status_;
    if (last) break;
    if (snap_->refresh_due(k)) {
      st = sync_all(k + 1);
      if (st.is_ok()) st = snap_->refresh(*this);
      if (!st.is_ok()) return st;
    }
    if ((k & 63) == 63) {
      const auto now = Clock::now();
      if (now - last_progress > std::chrono::milliseconds(500)) {
        last_progress = now;
        Progress p;
        p.iteration = k + 1;
        p.iterations = K;
        p.passes = static_cast<double>(rows_read_) / static_cast<double>(run_.rows);
        p.seconds = std::chrono::duration<double>(now - start_).count();
        p.rows = rows_read_;
        p.bytes_read = bytes_read();
        p.memory_bytes = process_rss_bytes();
        p.memory_budget = run_.options.memory;
        if (last_eval_ && !std::isnan(last_eval_->test_loglik)) p.test_loglik = last_eval_->test_loglik;
        obs.on_progress(p);
      }
      if (obs.stop_requested() || (run_.options.time_limit && sample_seconds() > *run_.options.time_limit)) {
        stopped = true;
        break;
      }
    }
  }
  if (stopped && run_.eval_every && (!last_eval_ || last_eval_->iteration != k + 1)) {  // evaluate where it stopped
    st = sync_all(k + 1);
    if (st.is_ok()) st = evaluate(k + 1, obs);
    if (!st.is_ok()) return st;
  }
  SampleResult r;
  r.run = run_;
  r.draws = draws_;
  // The moments move into the result (no copy of 2d doubles); M2 becomes the sd in place.
  for (size_t j = 0; j < d; ++j) m2_[j] = draws_ > 1 ? std::sqrt(m2_[j] / static_cast<double>(draws_ - 1)) : 0.0;
  r.mean = std::move(mean_);
  r.sd = std::move(m2_);
  r.last_eval = last_eval_;
  r.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  r.stopped_early = stopped;
  *result = std::move(r);
  return Status::ok();
}

}  // namespace

std::vector<MethodInfo> sample_methods() {
  std::vector<MethodInfo> out;
  for (const auto& s : sampler::registered_snapshots()) {
    for (const auto& o : reader_orders()) {
      out.push_back({std::string(s.name) + "-" + o.name, "", std::string(s.summary) + "; " + o.summary});
    }
  }
  for (const auto& [alias, means] : kAliases) out.push_back({std::string(alias), std::string(means), ""});
  return out;
}

std::vector<std::string> sample_models() {
  std::vector<std::string> out;
  for (const auto& m : model::registered_models()) out.emplace_back(m.name);
  return out;
}

namespace {
// Everything sample() needs before it starts: the resolved options, the strategy and the
// memory plan (resolve_sample() stops here).
Status prepare(const Store& train, const Store* test, const SampleOptions& options, ResolvedSample* r,
               std::unique_ptr<Snapshot>* snap, Shares* shares) {
  Status st = resolve_options(train, test, options, r);
  if (!st.is_ok()) return st;
  *snap = sampler::find_snapshot(r->snapshot)->make({r->rows, r->dim, r->refresh, r->snapshot_batch});
  st = plan_memory(train, test, *r, **snap, test ? test->meta().rows : 0, shares);
  if (!st.is_ok()) return st;
  r->state_bytes = shares->state;
  r->reader_bytes = shares->main ? shares->main : shares->pass;
  return Status::ok();
}
}  // namespace

Status resolve_sample(const Store& train, const Store* test, const SampleOptions& options, ResolvedSample* out) {
  std::unique_ptr<Snapshot> snap;
  Shares shares;
  return prepare(train, test, options, out, &snap, &shares);
}

Status sample(const Store& train, const Store* test, const SampleOptions& options,
              SampleObserver& observer, SampleResult* out) {
  ResolvedSample r;
  std::unique_ptr<Snapshot> snap;
  Shares shares;
  Status st = prepare(train, test, options, &r, &snap, &shares);
  if (!st.is_ok()) return st;
  Engine engine(train, test, r, shares, model::find_model(r.options.model)->make(r.options),
                std::move(snap));
  return engine.run(observer, out);
}

}  // namespace agld
