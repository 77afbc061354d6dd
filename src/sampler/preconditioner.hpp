// The diagonal preconditioner (`--precondition diag`, issue #15; docs/samplers.md,
// "Preconditioning"). Coordinate j steps
//     x_j' = x_j - eta M_j G_j + sqrt(2 eta M_j) xi_j
// with M_j = 1 / max(h_j, q_j) from the per-feature statistics (one pass over the store, until
// convert records them):
//     h_j = 1/s2p + c sum_i x_ij^2          (the curvature of U along j, c bounding l'')
//     q_j = 1/s2p + c (N/n) max_i x_ij^2    (what one row brings to a minibatch estimate)
// so that every diagonal entry of the preconditioned Hessian M^1/2 H M^1/2 is at most 1 and
// no single row can make a coordinate's step unstable. The default eta is
// 1 / max(1.25 lambda, 4 kick), lambda the largest eigenvalue of M^1/2 H M^1/2 estimated by
// power iteration on a sample of rows, kick the largest (N/n) c sum_j M_j x_ij^2 of a sampled
// row (what one row brings to a variance-reduced estimate, all its coordinates at once).
// For sampling at the default step, the visit rule then lowers M_j to
// max(0.03 / q'_j, 200 / (h_j I_kept)) / eta where that is smaller (q'_j the data's part of
// q_j, I_kept the kept iterations): a row's visit at random iterations biases the
// coordinate's variance by about eta M_j q'_j / 2, and the second term keeps the coordinates
// whose rows are too few for it at their speed.
// M is quantized down to levels a constant factor apart (sampler/lazy_state.hpp), which is
// still a diagonal preconditioner: the dynamics stays exact for it.
// Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "model/model.hpp"
#include "sampler/head_metric.hpp"

namespace agld::sampler {

struct Preconditioner {
  std::vector<double> level_m;      // M of each level, level 0 the largest
  // Each coordinate's level (d); a head coordinate's is level_m.size(), a level that never
  // moves on its own (the head steps it).
  std::vector<uint8_t> level;
  std::shared_ptr<const HeadMetric> head;  // null: diagonal everywhere
  // Bit j (word j / 64, bit j % 64): coordinate j is in some row of the store (or is the
  // intercept). A coordinate in no row has no data term: a refresh leaves its gradient the
  // prior's alone, and need not bring it current (LazyState::catch_up_rows).
  std::vector<uint64_t> in_rows;
};

// Rows make_preconditioner reads: its sample, and a pass for the per-feature statistics.
uint64_t preconditioner_rows(const Store& train);
// The note a run on a store without per-feature statistics gives (they cost it a pass).
std::string feature_stats_note(const Store& train);

// Builds the preconditioner for the run r: its step is r->step if the user gave it (in M's
// metric), else the default, written back with its rule, and r gets its figures (levels, M's
// range, lambda, the rows read). Reads the per-feature statistics and a sample of rows.
// sampling: the visit rule lowers M where a row's visits would bias a sampler's variance
// (`agld optimize` has no noise to bias, and keeps M as the statistics give it).
Status make_preconditioner(const Store& train, const model::Model& model, bool step_given, bool sampling,
                           ResolvedSample* r, Preconditioner* out);

}  // namespace agld::sampler
