// Snapshot strategies (ALGORITHMS.md section 2, "Snapshot-Updating"): how the snapshot
// scalars sh_i and their aggregate A = sum_i sh_i x_i are kept. The gradient estimate is
//     G(theta) = theta / s2p + (N / n) sum_{i in S} (s_i(theta) - sh_i) x_i + A.
// A strategy is a small policy object, one per chain; the chain owns theta and A (A in the
// lazy state's records beside theta: a strided view here). The strategy never reads data
// itself: a refresh is driven by the engine, which reads the rows once for every chain and
// hands each chain's strategy the rows with their margins at that chain's theta
// (begin_refresh, refresh_rows, ...). Internal to the sampler layer.
//
// Adding a strategy: a file src/sampler/snapshot_<name>.cpp with a Snapshot subclass and
// its factory (save and load included), and one line in the table of src/sampler/snapshots.cpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "agld/reader.hpp"
#include "agld/status.hpp"
#include "common/strided_span.hpp"
#include "model/model.hpp"
#include "common/state_archive.hpp"

namespace agld::sampler {

struct SnapshotParams {
  uint64_t rows = 0;            // N
  uint64_t dim = 0;             // d
  uint64_t refresh = 0;         // D: refresh after iteration k when (k + 1) % D == 0
  uint64_t snapshot_batch = 0;  // ptu+: rows of a refresh
  const model::Model* model = nullptr;
};

// The rows a refresh reads (the start is a refresh at x_0).
enum class RefreshRows {
  kNone,       // none, full: no refresh
  kFullPass,   // every row once, in stored order
  kSubsample,  // snapshot_batch rows drawn by the chain's access order (ptu+)
};

class Snapshot {
 public:
  virtual ~Snapshot() = default;
  // Bytes of per-chain state the strategy keeps (beyond A, which the chain owns).
  virtual uint64_t state_bytes() const = 0;
  virtual RefreshRows refresh_rows() const = 0;
  // Whether the chain keeps an aggregate A (d doubles).
  virtual bool has_aggregate() const { return refresh_rows() != RefreshRows::kNone; }
  // `full` (LMC): every step uses all rows, with sh = 0 and A = 0.
  virtual bool full_batch() const { return false; }
  // Gradient evaluations shadows() spends per row (ptu recomputes s_i at the snapshot).
  virtual uint64_t shadow_cost() const { return 0; }

  // A refresh at the chain's gradient point (theta, or hmc2's midpoint z; every coordinate
  // current), the start's included: begin, the rows (all of them, or the subsample) in pieces
  // with their margins at that point, end. `point` writes the point into a d-long span (a
  // strategy that keeps it: ptu). A is zero at begin_refresh (the chain zeroes it: only the
  // entries some row has can be nonzero, sampler/lazy_state.hpp's zero_aggregate), and the
  // pieces add the new aggregate into it.
  using PointWriter = std::function<void(std::span<double>)>;
  virtual void begin_refresh(const PointWriter& point, StridedSpan<double> a) { (void)point, (void)a; }
  // The same at a point already in memory, A zeroed here (tests: no chain).
  void begin_refresh_at(std::span<const double> point, StridedSpan<double> a) {
    a.fill(0.0);
    begin_refresh([point](std::span<double> out) { std::copy(point.begin(), point.end(), out.begin()); }, a);
  }
  virtual void refresh_piece(const Batch& rows, std::span<const double> margins, StridedSpan<double> a) {
    (void)rows, (void)margins, (void)a;
  }
  // Whether to refresh after iteration k (0-based).
  virtual bool refresh_due(uint64_t k) const { (void)k; return false; }
  // How many refreshes a run of `iterations` makes after its start: the k < iterations
  // with refresh_due(k) (the default run length counts what they read).
  virtual uint64_t refreshes_in(uint64_t iterations) const { (void)iterations; return 0; }

  // sh_i for each row of the batch.
  virtual void shadows(const Batch& batch, std::span<double> sh) = 0;
  // After the step of iteration k: s holds s_i(x_k) for the batch's rows.
  virtual void after_step(const Batch& batch, std::span<const double> s, StridedSpan<double> a) {
    (void)batch, (void)s, (void)a;
  }

  // The strategy's state, for a checkpoint (docs/reliability.md); load() reads into a
  // strategy made with the same parameters. Every strategy says what it keeps, even nothing
  // (tests/sampler/checkpoint_test.cpp round-trips every registered one).
  virtual void save(StateWriter& out) const = 0;
  virtual Status load(StateReader& in) = 0;
};

using SnapshotFactory = std::unique_ptr<Snapshot> (*)(const SnapshotParams& params);

struct SnapshotInfo {
  std::string_view name;
  std::string_view summary;
  SnapshotFactory make;
  // What its objects' refresh_rows() and full_batch() say, known before one is made (the
  // run's resolution reads them; tests/sampler/snapshot_test.cpp checks they agree).
  RefreshRows refresh_rows = RefreshRows::kNone;
  bool full_batch = false;
  // Refreshed every --refresh iterations (refresh_due), not only at the start.
  bool periodic = false;
  // Each row's shadow is its gradient at its last visit (ppu, tmu): the estimate's noise grows
  // with how far the chain moves between visits, so with the step, and the dense block's step
  // stays where it starts (DenseHead::retemper; raised, their sds came out 2-8 times wide).
  bool row_memory = false;
};

std::span<const SnapshotInfo> registered_snapshots();
const SnapshotInfo* find_snapshot(std::string_view name);

// body(i) for each row i in order, the rows kRowsAhead further on prefetched first
// (prefetch(j) for each of their indices): rows scatter over d, and their cache misses then
// overlap instead of queueing one by one (a refresh's dots and scatters).
template <class Prefetch, class Body>
void walk_rows_prefetching(const Batch& rows, Prefetch prefetch, Body body) {
  constexpr size_t kRowsAhead = 4;
  const size_t n = rows.size();
  for (size_t i = 0; i < std::min(kRowsAhead, n); ++i) {
    for (uint32_t j : rows.row_indices(i)) prefetch(j);
  }
  for (size_t i = 0; i < n; ++i) {
    if (i + kRowsAhead < n) {
      for (uint32_t j : rows.row_indices(i + kRowsAhead)) prefetch(j);
    }
    body(i);
  }
}

// a += sum over the rows of coef_i x_i (the strategies' aggregates, the full gradient).
inline void add_rows(StridedSpan<double> a, const Batch& rows, std::span<const double> coef) {
  walk_rows_prefetching(rows, [&](uint32_t j) { __builtin_prefetch(&a[j], 1); }, [&](size_t i) {
    const double c = coef[i];
    if (c == 0) return;
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) a[idx[e]] += c * val[e];
  });
}

}  // namespace agld::sampler
