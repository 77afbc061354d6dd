// One chain's iteration, lazily (ALGORITHMS.md section 4): bring the batch's support to time
// k, compute the margins and s_i = l'(y_i, m_i), step the support to k + 1 with the old A,
// then let the strategy update sh and A. Every other coordinate stays where it was last
// touched until it is read.
#include "sampler/chain.hpp"

#include <algorithm>
#include <boost/random/uniform_real_distribution.hpp>
#include <cstdio>
#include <fmt/format.h>

#include "common/mix.hpp"

namespace agld::sampler {

uint64_t chain_seed(uint64_t seed, uint64_t id) { return mix64(mix64(seed ^ 0x5eed0001u) ^ id); }

namespace {
// One dynamics a level of M; with many levels, smaller tables (they share the cache). The
// dynamics' name was checked when the run was resolved.
DynamicsParams params(const ChainConfig& c) {
  DynamicsParams p;
  p.step = c.step;
  p.prior_var = c.prior_var;
  p.temperature = c.temperature;
  p.friction = c.friction;
  return p;
}

std::unique_ptr<DenseHead> make_head(const ChainConfig& c) {
  if (!c.head) return nullptr;
  return std::make_unique<DenseHead>(c.head, *find_dynamics(c.dynamics), params(c));
}

// The gradient noise's sums: each level's coordinates in rows, and the levels that keep their
// noise (one holding a coordinate in no row: a refresh does not bring it current; the block's).
std::unique_ptr<GradientNoise> make_noise_sums(const ChainConfig& c, const Snapshot& snap, size_t levels,
                                               const DenseHead* head) {
  if (!c.noise.on || c.temperature <= 0 || snap.full_batch()) return nullptr;
  std::vector<uint64_t> coords(levels, 0);
  std::vector<uint8_t> fixed(levels, 0);
  if (head) fixed[levels - 1] = 1;
  for (uint64_t j = 0; j < c.dim; ++j) {
    const uint8_t l = c.level ? c.level[j] : 0;
    const bool in_row = c.in_rows.empty() || ((c.in_rows[j / 64] >> (j % 64)) & 1) != 0;
    if (in_row) {
      ++coords[l];
    } else {
      fixed[l] = 1;
    }
  }
  return std::make_unique<GradientNoise>(c.noise, std::move(coords), std::move(fixed), head ? head->size() : 0);
}

std::vector<CoordinateDynamics> levels(const ChainConfig& c, const DenseHead* head) {
  const DynamicsInfo* info = find_dynamics(c.dynamics);
  const std::vector<double> ms = c.level_m.empty() ? std::vector<double>{1.0} : c.level_m;
  const uint64_t table = Chain::jumps_table(ms.size() + (head ? 1 : 0));
  std::vector<CoordinateDynamics> out;
  out.reserve(ms.size());
  for (double m : ms) {
    DynamicsParams p = params(c);
    p.precondition = m;
    out.emplace_back(*info, p, table);
  }
  if (head) out.push_back(head->frozen_level());  // level ms.size()
  return out;
}

}  // namespace

Chain::Chain(uint64_t id, uint64_t seed, const ChainConfig& config, std::unique_ptr<Snapshot> snapshot)
    : id_(id),
      cfg_(config),
      snap_(std::move(snapshot)),
      noise_(chain_seed(seed, id), config.temperature > 0),
      head_(make_head(config)),
      state_(config.dim, levels(config, head_.get()), inverse_prior_var(config.prior_var), config.level,
             snap_->has_aggregate(), config.stamps_in_record) {
  if (snap_->full_batch()) grad_.reset(cfg_.dim);
  if (cfg_.rare) rare_ = std::make_unique<RareConditionals>(cfg_.rare, cfg_.gibbs);
  noise_sums_ = make_noise_sums(cfg_, *snap_, state_.levels(), head_.get());
  draw_.chain = id;
}

uint64_t Chain::jumps_table(uint64_t levels) { return levels > 1 ? 256 : GaussianJumps::kTableSize; }

uint64_t Chain::dynamics_bytes(int state_dim, uint64_t levels) {
  const uint64_t n = std::max<uint64_t>(levels, 1);
  return n * GaussianJumps::bytes(state_dim, jumps_table(n));
}

uint64_t Chain::state_bytes(const Snapshot& snap, uint64_t dim, int state_dim, bool stamps_in_record) {
  return dim * (LazyState::bytes_per_coordinate(state_dim, snap.has_aggregate(), stamps_in_record) +
                (snap.full_batch() ? 8 : 0)) +
         snap.state_bytes();
}

void Chain::start_dispersed() {
  const StridedSpan<double> x = state_.x();
  if (std::isinf(cfg_.prior_var)) {
    boost::random::uniform_real_distribution<double> u(-2.0, 2.0);
    for (size_t j = 0; j < x.size(); ++j) x[j] = u(noise_.engine());
  } else {
    const double sd = std::sqrt(cfg_.prior_var);
    for (size_t j = 0; j < x.size(); ++j) x[j] = sd * noise_();
  }
  start_momenta();
}

void Chain::start_momenta() {
  // The momentum's stationary law: N(0, T) in phi units (unit mass; no noise at T = 0: 0).
  const StridedSpan<double> p = state_.p();
  for (size_t j = 0; j < p.size(); ++j) p[j] = noise_();
  if (head_) head_->start_momenta(state_);
}

void Chain::start_around(const CoordinateFile& init) {
  start_dispersed();  // the spread where the file gives none (and the momenta)
  const StridedSpan<double> x = state_.x();
  const double prior_sd = std::isinf(cfg_.prior_var) ? 1.0 : std::sqrt(cfg_.prior_var);
  for (uint64_t j = 0; j < x.size(); ++j) {
    const double spread = init.cols() > 1 ? init.at(j, 1) * (x[j] / prior_sd) : x[j];
    x[j] = init.at(j, 0) + spread;
  }
}

std::string Chain::step_hint() const {
  std::string hint = fmt::format("try a smaller --step than {:.6g}", cfg_.step);
  if (state_.has_momentum()) {
    hint += fmt::format(" (the {} dynamics' h, with --friction {:.6g}; a larger friction damps the momentum)",
                        cfg_.dynamics, cfg_.friction);
  }
  return hint;
}

Status Chain::diverged(uint64_t k) const {
  return Status::invalid_argument("chain " + std::to_string(id_) + " diverged at iteration " + std::to_string(k) +
                                  " (a non-finite state): " + step_hint());
}

Status Chain::left_posterior(uint64_t k, double sq) const {
  return Status::invalid_argument(fmt::format(
      "chain {} diverged at iteration {}: |theta| = {:.3g}, beyond {:.3g}, which no posterior draw reaches "
      "(docs/samplers.md, \"Divergence\"): {}",
      id_, k, std::sqrt(sq), cfg_.divergence_radius, step_hint()));
}

Status Chain::catch_up_rows(uint64_t k) {
  if (cfg_.in_rows.empty()) return sync(k);
  double sq = 0;
  if (!state_.catch_up_rows(k, noise_, cfg_.in_rows, &sq)) return diverged(k);
  // Part of |theta|^2: beyond the radius, the whole is too.
  if (sq > cfg_.divergence_radius * cfg_.divergence_radius) return left_posterior(k, sq);
  retemper(k);
  return Status::ok();
}

Status Chain::sync(uint64_t k, bool keep) {
  if (!state_.sync(k, noise_, &sq_)) return diverged(k);
  if (sq_ > cfg_.divergence_radius * cfg_.divergence_radius) return left_posterior(k, sq_);
  retemper(k);
  if (keep) {
    draw_.iteration = k;
    record_tracked();
  }
  return Status::ok();
}

void Chain::record_tracked() {
  draw_.tracked.resize(cfg_.track.size());
  for (size_t t = 0; t < cfg_.track.size(); ++t) draw_.tracked[t] = state_.x(static_cast<uint32_t>(cfg_.track[t]));
}

void Chain::redraw_unseen_kept(const UnseenMove& move) {
  sq_ += move.apply(state_.x(), noise_);
  record_tracked();
}

namespace {
// out_i = sum_e value(j_e) x_ie over the rows, their coordinates prefetched ahead (prefetch).
template <class Value, class Prefetch>
std::span<const double> dots(const Batch& b, std::vector<double>& out, Value value, Prefetch prefetch) {
  out.resize(b.size());
  walk_rows_prefetching(b, prefetch, [&](size_t i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    double s = 0;
    for (size_t e = 0; e < idx.size(); ++e) s += value(idx[e]) * val[e];
    out[i] = s;
  });
  return out;
}
}  // namespace

std::span<const double> Chain::margins(const Batch& b) {
  return dots(b, margins_, [this](uint32_t j) { return state_.x(j); }, [this](uint32_t j) { state_.prefetch_x(j); });
}

std::span<const double> Chain::eval_margins(const Batch& b) {
  if (!state_.midpoint()) return margins(b);
  return dots(b, margins_, [this](uint32_t j) { return state_.eval(j); }, [this](uint32_t j) { state_.prefetch(j); });
}

std::span<const double> Chain::theta_margins(const Batch& b) {
  return dots(b, theta_margins_, [this](uint32_t j) { return state_.x(j); }, [this](uint32_t j) { state_.prefetch_x(j); });
}

std::span<const double> Chain::refresh_piece(const Batch& rows) {
  const std::span<const double> m = eval_margins(rows);
  snap_->refresh_piece(rows, m, state_.a());
  if (gathering_) rare_->add(rows, m, state_.x());
  return m;
}

Status Chain::step(uint64_t k, const Batch& b, bool keep, bool do_step) {
  const size_t n = b.size();
  margins_.resize(n);
  s_.resize(n);
  sh_.resize(n);
  // The batch's coordinates are scattered over d: ask for their records' cache lines (the
  // aggregate entry, which the jump reads, is in the record) first, so that the misses overlap
  // instead of queueing behind each jump (bench/sample_bench.sh).
  for (size_t i = 0; i < n; ++i) {
    for (uint32_t j : b.row_indices(i)) state_.prefetch(j);
  }
  for (size_t i = 0; i < n; ++i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    double m = 0;
    for (size_t e = 0; e < idx.size(); ++e) {
      const uint32_t j = idx[e];
      if (!state_.in_support(j)) state_.enter(j, k, noise_);
      m += state_.eval(j) * val[e];
    }
    if (!std::isfinite(m)) {
      state_.leave_support(k);
      return diverged(k);
    }
    margins_[i] = m;
  }
  const model::Model& model = *cfg_.model;
  for (size_t i = 0; i < n; ++i) s_[i] = model.dloss(b.labels[i], margins_[i]);
  snap_->shadows(b, sh_);
  if (keep) {  // lp__ at theta (hmc2's margins above are at z)
    const std::span<const double> at = state_.midpoint() ? theta_margins(b) : std::span<const double>(margins_);
    double loss = 0;
    for (size_t i = 0; i < n; ++i) loss += model.loss(b.labels[i], at[i]);
    draw_.lp = -(0.5 * sq_ * state_.inv_prior_var() +
                 static_cast<double>(cfg_.rows) / static_cast<double>(n) * loss);
  }
  if (!do_step) {
    state_.leave_support(k);
    return Status::ok();
  }
  if (noise_sums_ && GradientNoise::sampled(k)) {
    const uint64_t nnz = scatter<true>(b);
    noise_sums_->end_iteration(b.size());
    if (head_ && GradientNoise::block_iteration(k)) noise_sums_->end_block_iteration(b.size(), add_block_noise(b, nnz));
  } else {
    scatter<false>(b);
  }
  // The head's data gradient is read by slot before the support leaves; its step comes last.
  if (head_) head_->gather([this](uint32_t j) { return state_.in_support(j) ? g_[state_.slot(j)] : 0.0; });
  if (cfg_.dense) {  // every coordinate, one plain step (no jumps): the reference for the tests
    for (uint32_t j = 0; j < cfg_.dim; ++j) {
      const double g = state_.in_support(j) ? g_[state_.slot(j)] : 0.0;
      state_.step_one(j, g + state_.a(j), noise_);
    }
    state_.leave_support(k);
    state_.all_at(k + 1);
  } else {
    const std::span<const uint32_t> support = state_.support();
    for (size_t s = 0; s < support.size(); ++s) state_.step_support(s, g_[s] + state_.a(support[s]), noise_);
    state_.leave_support(k + 1);
  }
  if (head_) head_->step(state_, noise_);
  snap_->after_step(b, s_, state_.a());
  return Status::ok();
}

template <bool kNoise>
uint64_t Chain::scatter(const Batch& b) {
  // g = (N/n) sum_i (s_i - sh_i) x_i, gathered by support slot.
  const size_t n = b.size(), support = state_.support().size();
  const double scale = static_cast<double>(cfg_.rows) / static_cast<double>(n);
  g_.assign(support, 0.0);
  if constexpr (kNoise) {
    g2_.assign(support, 0.0);
    hh_.assign(support, 0.0);
  }
  uint64_t nnz = 0;
  for (size_t i = 0; i < n; ++i) {
    const double c = scale * (s_[i] - sh_[i]);
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    if constexpr (kNoise) {
      // The curvature's share of the row: (N/n) l''_i at the gradient's point.
      const double w = scale * cfg_.model->d2loss(b.labels[i], margins_[i]);
      nnz += idx.size();
      for (size_t e = 0; e < idx.size(); ++e) {
        const uint32_t slot = state_.slot(idx[e]);
        const double v = val[e], cv = c * v;
        g_[slot] += cv;
        g2_[slot] += cv * cv;
        hh_[slot] += w * v * v;
      }
    } else {
      if (c == 0) continue;
      for (size_t e = 0; e < idx.size(); ++e) g_[state_.slot(idx[e])] += c * val[e];
    }
  }
  if constexpr (kNoise) {
    // The sample variance of the rows' terms, times n: less the mean's part g^2 / n.
    const double rows = static_cast<double>(n), unbias = n > 1 ? rows / (rows - 1) : 1.0;
    for (size_t s = 0; s < support; ++s) {
      const double var = n > 1 ? (g2_[s] - g_[s] * g_[s] / rows) * unbias : g2_[s];
      noise_sums_->add(state_.support_level(s), var, hh_[s]);
    }
  }
  return nnz;
}

uint64_t Chain::add_block_noise(const Batch& b, uint64_t budget) {
  // Each support slot's place in the block (-1: not in it).
  const std::span<const uint32_t> coords = head_->coords();
  // and the block's gradient entries, for g_B g_B^T (the mean's part).
  slot_block_.assign(state_.support().size(), -1);
  block_pos_.clear();
  block_entries_.clear();
  for (size_t i = 0; i < coords.size(); ++i) {
    if (!state_.in_support(coords[i])) continue;
    const uint32_t slot = state_.slot(coords[i]);
    slot_block_[slot] = static_cast<int32_t>(i);
    block_pos_.push_back(static_cast<int32_t>(i));
    block_entries_.push_back(g_[slot]);
  }
  Eigen::MatrixXd& gg = noise_sums_->block_products();
  for (size_t u = 0; u < block_pos_.size(); ++u) {
    for (size_t v = 0; v <= u; ++v) gg(block_pos_[u], block_pos_[v]) += block_entries_[u] * block_entries_[v];
  }
  Eigen::MatrixXd& sum = noise_sums_->block_sum();
  const double scale = static_cast<double>(cfg_.rows) / static_cast<double>(b.size());
  uint64_t pairs = 0, rows = 0;
  while (rows < b.size() && pairs < budget) {
    const size_t i = rows++;
    const double c = scale * (s_[i] - sh_[i]);
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    block_pos_.clear();
    block_entries_.clear();
    for (size_t e = 0; e < idx.size(); ++e) {
      const int32_t p = slot_block_[state_.slot(idx[e])];
      if (p < 0) continue;
      block_pos_.push_back(p);
      block_entries_.push_back(c * val[e]);
    }
    const size_t m = block_pos_.size();
    pairs += m * (m + 1) / 2 + 1;
    for (size_t u = 0; u < m; ++u) {
      for (size_t v = 0; v <= u; ++v) {
        const int32_t r = std::max(block_pos_[u], block_pos_[v]), q = std::min(block_pos_[u], block_pos_[v]);
        sum(r, q) += block_entries_[u] * block_entries_[v];
      }
    }
  }
  return rows;
}

void Chain::retemper(uint64_t k) {
  if (!noise_sums_ || !noise_sums_->due(k)) return;
  double least = 1;
  const bool two = state_.has_momentum();
  for (uint32_t l = 0; l < state_.levels(); ++l) {
    if (state_.level_still(l) || noise_sums_->fixed(l)) continue;
    const double share = noise_sums_->share(l, state_.level_step(l), two);
    state_.set_noise_scale(l, std::sqrt(share));
    least = std::min(least, share);
  }
  if (head_) least = std::min(least, head_->retemper(noise_sums_->block_mean(), noise_sums_->block_measured(), noise_sums_->config()));
  noise_sums_->retempered(k);
  least_share_ = least;
}

double Chain::block_step() const { return head_ ? head_->step_size() : 0.0; }

void Chain::save(StateWriter& out) const {
  out.section("CHAN");
  out.u64("a chain's id", id_);
  state_.save(out);
  noise_.save(out);
  state_.save_aggregate(out);
  out.array("a chain's gradient", std::span<const double>(grad_));
  out.f64("a chain's loss", full_loss_);
  out.f64("a chain's squared norm", sq_);
  out.u64("a chain's kept iteration", draw_.iteration);
  out.f64("a chain's kept lp__", draw_.lp);
  out.array("a chain's kept state", draw_.tracked);
  snap_->save(out);
  if (noise_sums_) {
    noise_sums_->save(out);
    std::vector<double> scales(state_.levels());
    for (uint32_t l = 0; l < scales.size(); ++l) scales[l] = state_.noise_scale(l);
    out.array("a chain's noise scales", std::span<const double>(scales));
    out.f64("a chain's least noise share", least_share_);
    if (head_) head_->save(out);
  }
}

Status Chain::load(StateReader& in) {
  AGLD_RETURN_IF_ERROR(in.section("CHAN", "a chain"));
  uint64_t id = 0;
  AGLD_RETURN_IF_ERROR(in.u64("a chain's id", &id));
  if (id != id_) return in.corrupt("chain " + std::to_string(id) + " where chain " + std::to_string(id_) + " was expected");
  AGLD_RETURN_IF_ERROR(state_.load(in));
  AGLD_RETURN_IF_ERROR(noise_.load(in));
  AGLD_RETURN_IF_ERROR(state_.load_aggregate(in));
  AGLD_RETURN_IF_ERROR(in.array("a chain's gradient", std::span<double>(grad_)));
  AGLD_RETURN_IF_ERROR(in.f64("a chain's loss", &full_loss_));
  AGLD_RETURN_IF_ERROR(in.f64("a chain's squared norm", &sq_));
  AGLD_RETURN_IF_ERROR(in.u64("a chain's kept iteration", &draw_.iteration));
  AGLD_RETURN_IF_ERROR(in.f64("a chain's kept lp__", &draw_.lp));
  AGLD_RETURN_IF_ERROR(in.vec("a chain's kept state", &draw_.tracked, cfg_.track.size()));
  AGLD_RETURN_IF_ERROR(snap_->load(in));
  if (!noise_sums_) return Status::ok();
  AGLD_RETURN_IF_ERROR(noise_sums_->load(in));
  std::vector<double> scales(state_.levels());
  AGLD_RETURN_IF_ERROR(in.array("a chain's noise scales", std::span<double>(scales)));
  for (uint32_t l = 0; l < scales.size(); ++l) {
    if (!(scales[l] >= 0.5 && scales[l] <= 1)) return in.corrupt("a chain's noise scale is not one a run can have");
    state_.set_noise_scale(l, scales[l]);
  }
  AGLD_RETURN_IF_ERROR(in.f64("a chain's least noise share", &least_share_));
  return head_ ? head_->load(in) : Status::ok();
}

void Chain::full_piece(const Batch& rows) {
  const std::span<const double> m = eval_margins(rows);
  const std::span<const double> at = state_.midpoint() ? theta_margins(rows) : m;  // the loss at theta
  const model::Model& model = *cfg_.model;
  s_.resize(rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    full_loss_ += model.loss(rows.labels[i], at[i]);
    s_[i] = model.dloss(rows.labels[i], m[i]);
  }
  add_rows(grad_, rows, s_);
}

Status Chain::full_step(uint64_t k, bool keep, bool do_step) {
  if (keep) draw_.lp = -(0.5 * sq_ * state_.inv_prior_var() + full_loss_);
  full_loss_ = 0;
  if (!do_step) {
    std::fill(grad_.begin(), grad_.end(), 0.0);
    return Status::ok();
  }
  if (head_) head_->gather([this](uint32_t j) { return grad_[j]; });
  for (uint32_t j = 0; j < cfg_.dim; ++j) {
    state_.step_one(j, grad_[j], noise_);
    grad_[j] = 0;
    if (!state_.finite(j)) return diverged(k);
  }
  if (head_) {
    head_->step(state_, noise_);
    for (uint32_t j : head_->coords()) {
      if (!state_.finite(j)) return diverged(k);
    }
  }
  state_.all_at(k + 1);
  return Status::ok();
}

}  // namespace agld::sampler
