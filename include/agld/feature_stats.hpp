// Per-feature statistics of a store: for each feature j, the rows where it is stored, the
// sum and the largest of its squared values. The sampler's diagonal preconditioner and its
// default step come from them (docs/samplers.md, issue #15); `agld info` reports their spread.
//
// A store converted by this agld records them (docs/format.md, "Feature statistics"), so
// reading them costs no pass over the rows. A store written before has none: they are then
// computed in one sequential pass over its chunks, and the caller says that a re-conversion
// saves that pass.
#pragma once

#include <cstdint>
#include <functional>
#include <span>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

// Statistics of the consecutive features first, first + 1, ... (0-based), one element each.
struct FeatureStatsBlock {
  uint64_t first = 0;
  std::span<const uint64_t> count;   // rows where the feature is stored (a stored 0 counts)
  std::span<const double> sum_sq;    // sum over those rows of x_ij^2
  std::span<const double> max_sq;    // the largest x_ij^2 (0 for a feature in no row)
};

enum class FeatureStatsSource {
  kStored,    // read from the store's record
  kComputed,  // the store has no record (an older agld wrote it): one pass over its chunks
};

// Whether the store records its features' statistics.
bool has_feature_stats(const Store& store);

// Calls visit with consecutive blocks that cover features 0 .. meta().features - 1 in order,
// each of at most max_block features, and stops at visit's first error. Memory: a block's
// arrays when the statistics are stored; the d-long accumulators of one pass (16 bytes a
// feature) when they must be computed. A record that fails its checks is an error naming the
// store, never a crash. source (if given) says where they came from.
//
// Every block but the last has exactly max_block features (the spans are valid during the
// call only). Stored and computed statistics are the same bits: both are summed row after
// row in the stored order (docs/format.md, "Feature statistics"). A damaged record is an
// error (Status::Code::kCorruption), not a reason to compute them instead. max_block 0 is
// an invalid argument.
Status scan_feature_stats(const Store& store, const std::function<Status(const FeatureStatsBlock&)>& visit,
                          FeatureStatsSource* source = nullptr, uint64_t max_block = uint64_t{1} << 20);

}  // namespace agld
