// R-hats by the rows a feature is in (diagnostics/rhat_by_rows.hpp).
#include "diagnostics/rhat_by_rows.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>

#include "agld/feature_stats.hpp"

namespace agld::diagnostics {

uint32_t rows_class(uint64_t n) {
  // The last class takes every count above 10^18 (10^19 is the last power of 10 below 2^64).
  uint32_t k = 0;
  for (uint64_t top = 1; n > top && k < kLastRowsClass; top *= 10) ++k;
  return k;
}

namespace {
void add(RowsClass& c, double rhat, uint64_t j) {
  ++c.coordinates;
  if (!std::isfinite(rhat)) return;
  ++c.with_rhat;
  if (rhat > kRhatLimit) ++c.rhat_above;
  if (rhat > 1.1) ++c.rhat_above_1_1;
  if (!(rhat <= c.max_rhat)) c.max_rhat = rhat, c.max_rhat_at = j;
}
}  // namespace

Status rhat_by_rows(const Store& train, std::span<const double> rhat, bool intercept, std::vector<RowsClass>* out) {
  out->clear();
  if (!has_feature_stats(train) || rhat.empty()) return Status::ok();
  const uint64_t features = std::min<uint64_t>(train.meta().features, rhat.size() - (intercept ? 1 : 0));
  std::vector<RowsClass> classes(kLastRowsClass + 1);
  uint64_t top = 1;  // 10^k
  for (uint32_t k = 0; k <= kLastRowsClass; ++k, top *= 10) {
    classes[k].min_rows = k == 0 ? 1 : top / 10 + 1;
    classes[k].max_rows = k == kLastRowsClass ? UINT64_MAX : top;
  }
  Status st = scan_feature_stats(train, [&](const FeatureStatsBlock& b) {
    for (size_t i = 0; i < b.count.size(); ++i) {
      const uint64_t j = b.first + i, n = b.count[i];
      if (j < features && n > 0) add(classes[rows_class(n)], rhat[j], j);
    }
    return Status::ok();
  });
  if (!st.is_ok()) return st;
  for (const RowsClass& c : classes) {
    if (c.coordinates > 0) out->push_back(c);
  }
  if (intercept) {
    RowsClass c;
    c.intercept = true;
    c.min_rows = c.max_rows = train.meta().rows;
    add(c, rhat.back(), rhat.size() - 1);
    out->push_back(c);
  }
  return Status::ok();
}

}  // namespace agld::diagnostics
