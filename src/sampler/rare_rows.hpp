// The rows of the coordinates in few rows, gathered at a refresh for their conditionals by
// quadrature (sampler/conditional_quadrature.hpp; docs/samplers.md, "Rao-Blackwellized
// moments"). A refresh reads every row once with its margin at the chain's state; for each
// coordinate j in at most `max_rows` rows, each of j's rows leaves (margin - x_ij x_j, x_ij,
// y_i): after the pass, j's conditional given every other coordinate is known from those alone.
// The layout (which coordinates, and where each one's rows go) is shared by the chains; the
// rows themselves are each chain's (12 bytes a (row, rare coordinate) pair). Internal to the
// sampler layer.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <vector>

#include "agld/reader.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"
#include "common/strided_span.hpp"
#include "model/model.hpp"
#include "sampler/conditional_quadrature.hpp"
#include "sampler/lazy_state.hpp"

namespace agld::sampler {

// How many coordinates are in 1, 2, ... rows, up to a limit (from the store's per-feature
// statistics), and what gathering the rows of those in at most r rows costs.
struct RareRowCounts {
  std::vector<uint64_t> features;  // [n]: features in exactly n rows, n <= the limit
  uint64_t coordinates(uint64_t max_rows) const;
  uint64_t pairs(uint64_t max_rows) const;
  // Bytes of the layout (shared: d, the coordinates) and of a chain's rows and results (with
  // `moves`, what the Gibbs sweep adds: a row number a pair, a float a numbered row, at most
  // one a two pairs, and a float a coordinate).
  static uint64_t shared_bytes(uint64_t dim, uint64_t coords) { return 4 * dim + 8 * (coords + 1); }
  static uint64_t chain_bytes(uint64_t coords, uint64_t pairs, bool moves) {
    return (sizeof(ConditionalRow) + (moves ? sizeof(uint32_t) + sizeof(float) / 2 : 0)) * pairs +
           (4 + sizeof(ConditionalMoments) + (moves ? sizeof(float) : 0)) * coords;
  }
};
Status count_rare_rows(const Store& train, uint64_t limit, RareRowCounts* out);

class RareRows {
 public:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  // The coordinates of a run of dim coordinates (the features; the intercept, if any, last and
  // never rare) in 1 to max_rows training rows.
  static Status make(const Store& train, uint64_t dim, uint64_t max_rows, std::shared_ptr<const RareRows>* out);

  uint64_t dim() const { return index_.size(); }
  uint64_t size() const { return coords_.size(); }
  uint64_t pairs() const { return offsets_.back(); }
  uint32_t index(uint64_t j) const { return index_[j]; }  // kNone: not rare
  uint32_t coordinate(uint32_t r) const { return coords_[r]; }
  uint64_t offset(uint32_t r) const { return offsets_[r]; }
  uint64_t rows(uint32_t r) const { return offsets_[r + 1] - offsets_[r]; }

 private:
  std::vector<uint32_t> index_;    // d: the coordinate's place among the rare ones, or kNone
  std::vector<uint32_t> coords_;   // the rare coordinates, ascending
  std::vector<uint64_t> offsets_;  // where each one's rows start (and the total, last)
};

// A chain's gathered rows and its conditionals at the last refresh that gathered them.
class RareConditionals {
 public:
  // moves: compute() may move the coordinates (a Gibbs sweep), so each pair keeps its row.
  RareConditionals(std::shared_ptr<const RareRows> layout, bool moves)
      : layout_(std::move(layout)),
        rows_(layout_->pairs()),
        row_(moves ? layout_->pairs() : 0),
        moved_(moves ? layout_->size() : 0),
        filled_(layout_->size()),
        moments_(layout_->size()) {}

  // Before a refresh's pieces: none gathered.
  void begin();
  // A piece of the refresh: its rows, their margins at x (the chain's state, current at every
  // coordinate the rows have). With moves, a row with two or more rare coordinates gets a
  // number, kept by its pairs, under which a sweep sums the moves its margin has seen.
  void add(const Batch& rows, std::span<const double> margins, StridedSpan<const double> x);
  // After the pass: every rare coordinate's conditional moments in turn (NaN for one whose
  // rows did not all come: a partial pass), each from its rows as they stand at its turn. With
  // `noise` (and moves), each then takes one Metropolis-Hastings step on its conditional
  // (conditional_move), which its rows' other rare coordinates see at their turns (the gathered
  // offset plus the row's sum of moves): a Gibbs sweep over the rare coordinates, exact, each
  // one's moments those of a state of that sweep. Returns the change of |x|^2 (0 without moves).
  double compute(const model::Model& model, double inv_prior_var, StridedSpan<double> x, Noise* noise);
  // The moves' proposals and acceptances at the last compute().
  uint64_t proposed() const { return proposed_; }
  uint64_t accepted() const { return accepted_; }
  // The r-th rare coordinate's moments at the last compute() (NaN where it has none).
  ConditionalMoments at(uint64_t r) const { return moments_[r]; }
  // The r-th rare coordinate's rows as they stand now: as gathered, and after a sweep their
  // offsets at the state it left.
  std::vector<ConditionalRow> rows(uint32_t r) const;

 private:
  static constexpr uint32_t kAlone = std::numeric_limits<uint32_t>::max();  // a row's only rare pair
  // The r-th rare coordinate's rows with the moves of the sweep so far (copied into scratch
  // if there were any).
  std::span<const ConditionalRow> current(uint32_t r, std::vector<ConditionalRow>& scratch) const;

  std::shared_ptr<const RareRows> layout_;
  std::vector<ConditionalRow> rows_;  // as gathered
  std::vector<uint32_t> row_;         // each pair's row number (kAlone: no other rare pair in it)
  std::vector<float> moved_;          // each rare coordinate's move at the last sweep
  std::vector<float> shift_;          // each numbered row: the sum of x_ij times j's move, this sweep
  std::vector<uint32_t> filled_;      // each rare coordinate's rows gathered so far
  std::vector<ConditionalMoments> moments_;
  std::vector<uint64_t> pending_;     // add()'s scratch: a row's pairs
  uint32_t numbered_ = 0;             // rows numbered at this refresh
  uint64_t proposed_ = 0, accepted_ = 0;
};

}  // namespace agld::sampler
