// A run in stages (docs/samplers.md, "Until mixed"). Stage 0 is the run as resolved; stage s
// runs to iteration L 2^s (L the first stage's iterations) and keeps the states after
// L 2^(s-1), where the stage before it ended. The draws a stage's verdict read are burn-in for
// the next: a decision to go on never touches the draws the run then keeps. The thinning and
// the evaluations' spacing double with the stage, so that each stage keeps about as many
// draws as the first (and the same memory). Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "agld/sample.hpp"

namespace agld::sampler {

// The default cap of a run until mixed: this many times the passes its first stage read, so
// that the first stage and two doublings fit.
inline constexpr double kMaxPassesFactor = 4;
// No run goes past this stage (2^40 times its first length), whatever its caps.
inline constexpr uint64_t kMaxStage = 40;

struct Stage {
  uint64_t index = 0;
  uint64_t iterations = 0, burn_in = 0, thin = 1, eval_every = 0, draws = 0;
};
Stage stage_of(const ResolvedSample& r, uint64_t s);
// r as stage st runs it: its length, burn-in, thinning, evaluations, draws, epochs and rule.
ResolvedSample staged(const ResolvedSample& r, const Stage& st);

// What a stage's kept draws say: over every coordinate with diagnostics (R-hat and ESS as
// diagnostics.npy will have them) and every tracked column (rank-normalized R-hat, bulk ESS).
struct StageVerdict {
  uint64_t finite = 0;      // R-hats computed
  uint64_t rhat_above = 0;  // above the target
  uint64_t ess_below = 0;   // finite ESS below the target
  double max_rhat = std::numeric_limits<double>::quiet_NaN(), min_ess = std::numeric_limits<double>::quiet_NaN();
  uint64_t max_rhat_id = 0, min_ess_id = 0;  // the caller's ids of the two
  std::string max_rhat_at, min_ess_at;        // their names, set by the caller
  // Counts an R-hat and an ESS (either may be NaN) of the quantity the caller calls `id`.
  void add(double rhat, double ess, double target_rhat, double target_ess, uint64_t id);
};

// Where the run stands at the end of a stage: passes read (the preconditioner's setup among
// them), sampling seconds, and the cap in passes.
struct StageCost {
  double passes = 0, setup_passes = 0, seconds = 0, max_passes = 0;
  std::optional<double> time_limit;
};

struct StageDecision {
  bool go_on = false;
  bool mixed = false;
  std::string reason;  // a sentence for config.json and the summary
};
// Stop where the targets hold; else go on unless the next stage, which reads as much as every
// stage before it, would pass the cap in passes or the time limit.
StageDecision decide_stage(const ResolvedSample& r, const Stage& st, const StageVerdict& v, const StageCost& c);

}  // namespace agld::sampler
