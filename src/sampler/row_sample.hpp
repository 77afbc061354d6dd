// A sample of the training store's rows for the preconditioner's step rule and the dense
// block's curvature: whole chunks in a seeded random order, at most kSampleRows rows and
// kSampleNnz nonzeros, the intercept's constant appended. On a store whose rows keep their
// source order, every stride-th row of up to kSpreadChunks chunks instead (one chunk there is
// one stretch of time, not a sample). Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"

namespace agld::sampler {

inline constexpr uint64_t kSampleRows = 65536;
inline constexpr uint64_t kSampleNnz = uint64_t{1} << 22;
inline constexpr uint64_t kSpreadChunks = 64;

// Its columns renumbered 0 .. cols - 1 (local) and its values scaled by sqrt(m_j).
struct RowSample {
  std::vector<uint64_t> offsets{0};
  std::vector<uint32_t> local;
  std::vector<double> values;
  std::vector<double> labels;
  std::vector<uint32_t> cols;  // local -> coordinate
  uint64_t rows() const { return offsets.size() - 1; }
  // The local columns of coordinates js (each must be among cols: read_row_sample's extra_cols).
  std::vector<uint32_t> locals(std::span<const uint32_t> js) const;
  // By local column: its position among `locals` (-1 where it is none of them).
  std::vector<int32_t> positions(const std::vector<uint32_t>& locals) const;
};

// Reads the sample for run r, each value scaled by sqrt(m[j]); extra_cols get local columns
// even if no sampled row has them. *rows_read gets the rows read (kept or not: the passes count them).
Status read_row_sample(const Store& train, const ResolvedSample& r, const std::vector<float>& m,
                       std::span<const uint32_t> extra_cols, RowSample* out, uint64_t* rows_read);

}  // namespace agld::sampler
