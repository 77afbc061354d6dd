// One chain (ALGORITHMS.md section 7): its lazy state, its snapshot strategy and aggregate,
// its noise, its kept state's record, and its scratch. A chain never reads data: the engine
// hands it batches (its own, or the ones every chain shares) and the rows of refreshes.
// Chains share nothing mutable, so the engine steps them on any threads in any order and
// the draws stay the same. Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "common/huge_array.hpp"
#include "common/strided_span.hpp"
#include "model/model.hpp"
#include "sampler/coordinate_file.hpp"
#include "sampler/dense_head.hpp"
#include "sampler/gradient_noise.hpp"
#include "sampler/lazy_state.hpp"
#include "sampler/rare_rows.hpp"
#include "sampler/snapshot.hpp"
#include "sampler/unseen_move.hpp"

namespace agld::sampler {

struct ChainConfig {
  uint64_t rows = 0;      // N
  uint64_t dim = 0;       // d
  // The dynamics (sampler/dynamics.hpp), its step (eta for ld and svrhmc, h for hmc and
  // hmc2) and friction (the underdamped kinds').
  std::string dynamics = "ld";
  double step = 0;
  double friction = 1;
  // A diagonal preconditioner: coordinate j has M = level_m[level[j]]. Empty (and level null):
  // M = 1 everywhere.
  std::vector<double> level_m;
  const uint8_t* level = nullptr;
  // The metric's dense block (null: none); its coordinates' level is level_m.size().
  std::shared_ptr<const HeadMetric> head;
  // The coordinates some row has, a bit each (Preconditioner::in_rows; shared by the chains).
  // Empty: every coordinate counts as in a row.
  std::span<const uint64_t> in_rows;
  // The lazy state's layout: each coordinate's stamp in its record (one cache miss a touched
  // coordinate, 4 bytes a coordinate more), or in an array of its own (sampler/lazy_state.hpp).
  bool stamps_in_record = true;
  double prior_var = 1;
  // |theta| beyond which the state is outside the posterior (ResolvedSample::divergence_radius):
  // sync() then reports a divergence.
  double divergence_radius = std::numeric_limits<double>::infinity();
  // The noise's variance is this times the dynamics': 1 samples the posterior, 0 is gradient
  // descent on U (no noise is drawn: `agld optimize`, sampler/optimizer.cpp).
  double temperature = 1;
  bool dense = false;     // every coordinate, every iteration (the tests' reference)
  // Conditionals by quadrature (sampler/rare_rows.hpp): the coordinates whose rows a refresh
  // that asks for them gathers (null: none).
  std::shared_ptr<const RareRows> rare;
  bool gibbs = false;  // their Gibbs sweep at each refresh (the rows linked for it)
  const model::Model* model = nullptr;
  std::vector<uint64_t> track;
  // The gradient's noise taken out of the injected noise (sampler/gradient_noise.hpp); off at
  // temperature 0 and for full-batch strategies.
  GradientNoiseConfig noise;
};

// The seed of chain `id` of a run with seed `seed`: a one-chain run with --chain-id id and
// the same seed is that chain.
uint64_t chain_seed(uint64_t seed, uint64_t id);

class Chain {
 public:
  Chain(uint64_t id, uint64_t seed, const ChainConfig& config, std::unique_ptr<Snapshot> snapshot);

  // Bytes of one chain's state for this strategy and d (the scratch apart).
  static uint64_t state_bytes(const Snapshot& snapshot, uint64_t dim, int state_dim, bool stamps_in_record);
  // Bytes of a chain's jump tables: one a preconditioner level (levels 0: none), and their table size.
  static uint64_t dynamics_bytes(int state_dim, uint64_t levels);
  static uint64_t jumps_table(uint64_t levels);

  uint64_t id() const { return id_; }
  Snapshot& snapshot() { return *snap_; }
  StridedSpan<const double> theta() const { return state_.x(); }
  const DrawRecord& draw() const { return draw_; }

  // x_0: each coordinate drawn from the prior N(0, prior_var) (uniform on (-2, 2) for a
  // flat prior), from the chain's own noise (at temperature 0, which has none: 0).
  void start_dispersed();
  // x_0 = column 0 + sd z, sd column 1 of the file if it has one, else as start_dispersed().
  void start_around(const CoordinateFile& init);

  // Brings every coordinate to k; with `keep`, also records the kept state's tracked
  // coordinates and |theta|^2 for lp__. Fails if a coordinate is not finite.
  Status sync(uint64_t k, bool keep = false);
  bool sync_due(uint64_t k) const { return state_.gap_due(k); }
  // Before a refresh: brings to k the coordinates some row has (ChainConfig::in_rows; every
  // coordinate without it). A refresh reads and changes nothing of the others.
  Status catch_up_rows(uint64_t k);

  // Iteration k on batch b: margins at x_k (lp__ if `keep`: the state must have been synced
  // with keep), then, if `step`, the step to k + 1 and the strategy's update.
  Status step(uint64_t k, const Batch& b, bool keep, bool do_step);

  // `full` (every row every step): theta is current everywhere; each piece of the pass
  // adds its rows' gradients (and loss); then the step.
  void full_piece(const Batch& rows);
  Status full_step(uint64_t k, bool keep, bool do_step);

  // A refresh at theta (current everywhere): begin, pieces, as the strategy asks. A piece's
  // margins theta . x_i are returned (valid until the next call). The strategy gets A at zero.
  // With `gather`, the pieces' rows of the rare coordinates are kept (ChainConfig::rare) for
  // compute_conditionals() after the last piece.
  void begin_refresh(bool gather = false) {
    state_.zero_aggregate(cfg_.in_rows);
    snap_->begin_refresh([this](std::span<double> out) { state_.eval_all(out); }, state_.a());
    gathering_ = gather && rare_;
    if (gathering_) rare_->begin();
  }
  std::span<const double> refresh_piece(const Batch& rows);
  // After a refresh that gathered: each rare coordinate's conditional moments at theta; with
  // `move`, the Gibbs sweep over them too (RareConditionals::compute). Every coordinate some
  // row has must be current (the refresh's).
  void compute_conditionals(bool move) {
    sq_ += rare_->compute(*cfg_.model, state_.inv_prior_var(), state_.x(), move ? &noise_ : nullptr);
    gathering_ = false;
  }
  // The r-th rare coordinate's (RareRows::coordinate(r)).
  ConditionalMoments conditional(uint64_t r) const { return rare_->at(r); }
  // The last sweep's Metropolis steps: proposed and accepted.
  uint64_t sweep_proposed() const { return rare_ ? rare_->proposed() : 0; }
  uint64_t sweep_accepted() const { return rare_ ? rare_->accepted() : 0; }
  // theta's component along the directions no row sees drawn anew from the chain's noise
  // (set to its mean, 0, at temperature 0). Every coordinate must be current.
  void redraw_unseen(const UnseenMove& move) { move.apply(state_.x(), noise_); }
  // The same at a kept state (after sync(k, true)): the kept state's tracked coordinates and
  // |theta|^2 are the redrawn ones.
  void redraw_unseen_kept(const UnseenMove& move);
  // Where every coordinate some row has is current at k (sync and catch_up_rows call it): the
  // noise's shares from the gradient noise measured since the last retempering, if
  // kNoisePeriod iterations have passed since.
  void retemper(uint64_t k);
  // The least share of its noise a level or block direction kept at the last retempering (1: none).
  double least_noise_share() const { return least_share_; }
  // The dense block's step now (0: no block).
  double block_step() const;
  // The aggregate A (empty for strategies without one), kept in the lazy state's records.
  StridedSpan<const double> aggregate() const { return state_.a(); }

  // The chain's whole state between two iterations: coordinates and stamps, noise, the
  // aggregate, `full`'s gradient, the kept state's record and the strategy's state. load()
  // reads into a chain made with the same configuration; a mismatch is corruption.
  void save(StateWriter& out) const;
  Status load(StateReader& in);

  // Margins theta . x_i of the rows (every coordinate of the rows current), into the
  // chain's own scratch, valid until the next call.
  std::span<const double> margins(const Batch& rows);
  // The same at the gradient point (hmc2's midpoint z; theta for the other dynamics).
  std::span<const double> eval_margins(const Batch& rows);

 private:
  void record_tracked();  // the tracked coordinates into the kept draw
  void start_momenta();
  // The gradient's sums of batch b into g_ (by slot), and with kNoise its noise's (g2_, hh_,
  // then the levels' sums); returns the batch's nonzeros.
  template <bool kNoise>
  uint64_t scatter(const Batch& b);
  // The block's gradient noise from the batch's first rows, their pairs about `budget`;
  // returns how many rows it took.
  uint64_t add_block_noise(const Batch& b, uint64_t budget);
  // theta . x_i (every coordinate of the rows current) into theta_margins_: lp__ where the
  // gradient's margins are at hmc2's midpoint.
  std::span<const double> theta_margins(const Batch& rows);
  std::string step_hint() const;
  Status diverged(uint64_t k) const;
  Status left_posterior(uint64_t k, double sq) const;  // |theta| (sqrt sq) beyond cfg_.divergence_radius

  uint64_t id_;
  ChainConfig cfg_;
  std::unique_ptr<Snapshot> snap_;
  Noise noise_;
  std::unique_ptr<DenseHead> head_;  // the metric's dense block (null: none); before state_, which reads it
  std::unique_ptr<RareConditionals> rare_;  // the rare coordinates' rows and conditionals (null: none)
  std::unique_ptr<GradientNoise> noise_sums_;  // the gradient noise's sums (null: no correction)
  double least_share_ = 1;
  bool gathering_ = false;
  LazyState state_;         // with the aggregate A (strategies with one)
  HugeArray<double> grad_;  // `full`: the whole gradient of a step
  double full_loss_ = 0;    // `full`: the loss at theta of the rows so far
  double sq_ = 0;           // |theta|^2 at the last kept sync
  DrawRecord draw_;
  // Scratch.
  std::vector<double> margins_, theta_margins_, s_, sh_, g_, g2_, hh_, block_entries_;
  std::vector<int32_t> slot_block_, block_pos_;
};

}  // namespace agld::sampler
