// Reading a run directory back (`agld summary DIR`, and the summary `agld sample` prints at
// the end of a run): the tracked coordinates' exact diagnostics from the draws files
// (rank-normalized split-R-hat, bulk- and tail-ESS, as the R package `posterior` computes
// them; docs/diagnostics.md) and the whole vector's online ones from diagnostics.npy.
//
// Every file is checked against config.json: a directory that is not a run, or whose files
// are cut short or malformed, is an error naming the file (and the line) and what was
// expected, never a crash.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "agld/file.hpp"
#include "agld/sample.hpp"
#include "agld/status.hpp"

namespace agld {

// One row of the table: lp__ or a tracked coordinate, over every chain's kept draws.
struct ColumnSummary {
  std::string name;  // "lp__", "theta.J" (1-based feature J) or "intercept"
  double mean = 0, mcse = 0, sd = 0;
  double q5 = 0, q50 = 0, q95 = 0;
  double ess_bulk = 0, ess_tail = 0, rhat = 0;  // NaN where undefined (too few or constant draws)
};

// The whole vector, from diagnostics.npy (online: classic split-R-hat, batch-means ESS).
struct VectorSummary {
  uint64_t dim = 0;           // coordinates
  bool sampled = false;       // the diagnostics cover a seeded sample (config.json says which)
  uint64_t covered = 0;       // with a finite R-hat
  double max_rhat = 0;        // NaN when none is finite
  std::string max_rhat_name;
  uint64_t rhat_above = 0;    // R-hat > kRhatLimit
  double min_ess = 0;         // NaN when none is finite
  std::string min_ess_name;
  uint64_t ess_below = 0;     // ESS below 100 a chain (posterior's rule of thumb for bulk-ESS)
};

// A class of config.json's diagnostics.by_rows (SampleResult::by_rows): the coordinates whose
// feature is in min_rows to max_rows training rows, or the intercept.
struct RowsClassSummary {
  uint64_t min_rows = 0, max_rows = 0;
  bool intercept = false;
  uint64_t coordinates = 0, with_rhat = 0, rhat_above = 0, rhat_above_1_1 = 0;
  double max_rhat = 0;  // NaN when none is finite
  std::string max_rhat_name;
};

// A run's class as config.json holds it, the coordinate named (d coordinates, the intercept last
// if `intercept`).
RowsClassSummary rows_class_summary(const RowsClass& c, uint64_t d, bool intercept);

struct RunSummary {
  std::string dir;
  std::string method, model;
  uint64_t chains = 0, first_chain = 1;
  uint64_t draws = 0;          // kept states of each chain
  uint64_t iterations = 0, burn_in = 0, thin = 1;
  bool stopped_early = false;
  // A run until mixed (config.json's until_mixed, result.stages and stop_reason): the stages it
  // ran (the draws are the last one's) and why it stopped. 0 stages: a run of one length.
  uint64_t stages = 0;
  std::string stop_reason;
  // Coordinates in no training row, whose posterior is the prior exactly (config.json's
  // result.prior_exact; 0 in runs before it).
  uint64_t prior_exact = 0;
  std::vector<ColumnSummary> columns;  // lp__ first, then the tracked coordinates
  VectorSummary vector;
  std::vector<RowsClassSummary> by_rows;  // empty in runs before it, or on a store without statistics
  // With Rao-Blackwellized moments (config.json's result.rao_blackwell): the conditional draws,
  // and how many of posterior.npy's means and sds came from them.
  bool rao_blackwell = false;
  uint64_t rb_samples = 0, rb_means = 0, rb_sds = 0;
  // No R-hat above 1.01, neither a column's nor the whole vector's, and some computed.
  bool mixed = false;
};

// The name of 0-based coordinate j of a run with d coordinates: "theta.J", or "intercept"
// for the last one of a run with an intercept.
std::string coordinate_name(uint64_t j, uint64_t d, bool intercept);

// One column's row of the table from its kept draws, chain-major (chain c's n draws at
// [c * n, (c + 1) * n)).
ColumnSummary summarize_column(std::string name, std::span<const double> draws, size_t chains);

// The verdict of a run: some R-hat computed and none above kRhatLimit, among the online ones
// of the covered coordinates (how many have one, how many exceed the limit) and the exact
// ones of the columns.
bool chains_mixed(uint64_t online_with_rhat, uint64_t online_above, std::span<const ColumnSummary> columns);

// Reads and checks the run directory dir (config.json, draws_ID.csv of every chain,
// diagnostics.npy) and summarizes it.
Status summarize_run(const std::string& dir, FileSystem& fs, RunSummary* out);

}  // namespace agld
