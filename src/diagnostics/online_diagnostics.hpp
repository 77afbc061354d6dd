// Convergence diagnostics for every coordinate, online, without keeping draws (ALGORITHMS.md
// section 7; docs/samplers.md, "Diagnostics"): classic split-R-hat from each half-chain's
// moments, and the Monte Carlo standard error of the pooled mean from replicated batch
// means (Gupta and Vats 2020: batches of every half-chain, centred on the grand mean, so that
// chains that disagree inflate it), with ESS = var+ / MCSE^2 capped at S log10 S as Stan and
// `posterior` cap theirs.
//
// Each of K chains keeps n planned draws; as `posterior` splits a chain, its first and last
// floor(n/2) draws are the halves (the middle one of an odd n is left out). A half is cut into
// min(sqrt(n/2), 10) batches, the last taking the remainder: few and long, because batches
// shorter than the chain's autocorrelation understate the error (and a slow chain's
// autocorrelation spans many kept draws). A run stopped early folds
// the half and the batch it was in, as far as they went.
//
// Memory per covered coordinate: 16 bytes a chain (the running sums of its half and batch)
// and 56 shared. Draws are accumulated as offsets from the first draw of the first chain, so
// that the sums of squares do not cancel. Internal to the library.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "common/strided_span.hpp"
#include "common/state_archive.hpp"

namespace agld::diagnostics {

class OnlineDiagnostics {
 public:
  // Covers `coordinates` (ascending; empty: every one of d), for `chains` chains of
  // `planned` kept draws each.
  OnlineDiagnostics(uint64_t d, std::vector<uint64_t> coordinates, size_t chains, uint64_t planned);

  static uint64_t bytes_per_coordinate(size_t chains) { return 16 * chains + 56; }

  uint64_t covered() const { return covered_; }
  // The coordinate of covered index i.
  uint64_t coordinate(uint64_t i) const { return coords_.empty() ? i : coords_[i]; }

  // The draw of every chain at the current kept iteration, for covered indices [i0, i1)
  // (disjoint ranges may run at once); then next_draw(), once.
  void add(std::span<const StridedSpan<const double>> states, uint64_t i0, uint64_t i1);
  void next_draw();

  // Between kept draws: the coordinates covered and every running sum. load() reads into
  // diagnostics made for the same d, chains and planned draws; the coordinates covered are
  // the checkpoint's (the run that saved it chose them from its memory).
  void save(StateWriter& out) const;
  Status load(StateReader& in);

  // d each: R-hat, ESS and MCSE; NaN for coordinates not covered or with too few draws.
  void finish(std::span<double> rhat, std::span<double> ess, std::span<double> mcse);

  // Covered index i's R-hat, ESS and MCSE (NaN where undefined), once every planned draw is in
  // (complete()): what finish() gives it, without the arrays.
  bool complete() const { return t_ >= planned_ && in_half_ == 0; }
  struct Values {
    double rhat, ess, mcse;
  };
  Values at(uint64_t i) const;

  // The same coordinates, no draw yet, for `planned` kept draws (a run's next stage).
  void restart(uint64_t planned);

 private:
  enum class Place { kSkip, kInBatch, kEndsBatch, kEndsHalf };
  Place place(uint64_t t) const;
  void fold_batch(uint64_t i, uint64_t len);
  void fold_half(uint64_t i, uint64_t len);

  uint64_t d_;
  std::vector<uint64_t> coords_;
  uint64_t covered_;
  size_t k_;
  uint64_t planned_, half_, batch_, batches_;  // n, floor(n/2), batch size, batches a half
  uint64_t t_ = 0;                             // kept draws so far (each chain)
  uint64_t in_half_ = 0, in_batch_ = 0;        // draws of the current half and batch
  // Counters over what was folded (the same for every coordinate).
  uint64_t halves_ = 0, draws_ = 0, batches_folded_ = 0;
  double within_df_ = 0;  // sum over halves of (length - 1)
  // Per covered coordinate and chain: the current half's and batch's sums.
  std::vector<double> half_sum_, batch_sum_;
  // Per covered coordinate.
  std::vector<double> ref_;       // the first draw of the first chain
  std::vector<double> sq_;        // sum of y^2 over the draws folded in halves
  std::vector<double> sum_;       // sum of y
  std::vector<double> hm_, hm2_;  // sums of the half means and of their squares
  std::vector<double> nhm2_;      // sum over halves of length * mean^2
  std::vector<double> bsq_;       // sum over batches of (batch sum)^2 / length
};

}  // namespace agld::diagnostics
