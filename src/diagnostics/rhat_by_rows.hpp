// The R-hats of a run by the rows each coordinate's feature is in (SampleResult::by_rows): a
// class a power of 10 (1, 2-10, 11-100, ...) from the training store's per-feature
// statistics, and the intercept's. On one-hot data the classes say where a run has not mixed:
// the rare levels (whose posterior is mostly the prior's) or the common ones. Internal to the
// library.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"

namespace agld::diagnostics {

// The class of a feature in n >= 1 rows: 0 for 1 row, k for 10^(k-1) < n <= 10^k, and
// kLastRowsClass for every n above 10^18.
inline constexpr uint32_t kLastRowsClass = 19;
uint32_t rows_class(uint64_t n);

// The classes over rhat (d values, the intercept last if `intercept`; NaN where there is
// none), the features' rows read from train's statistics. Classes with no feature are left
// out; a feature in no row is in none. Empty, and no pass, when the store records no
// statistics.
Status rhat_by_rows(const Store& train, std::span<const double> rhat, bool intercept, std::vector<RowsClass>* out);

}  // namespace agld::diagnostics
