// Snapshot strategies (ALGORITHMS.md section 2, "Snapshot-Updating"): how the snapshot
// scalars sh_i and their aggregate A = sum_i sh_i x_i are kept. The gradient estimate is
//     G(theta) = theta / s2p + (N / n) sum_{i in S} (s_i(theta) - sh_i) x_i + A.
// A strategy is a small policy object; the sampler (the host) owns theta, A and the data.
// Internal to the sampler layer.
//
// Adding a strategy: a file src/sampler/snapshot_<name>.cpp with a Snapshot subclass and
// its factory, and one line in the table of src/sampler/snapshots.cpp.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "agld/reader.hpp"
#include "agld/status.hpp"
#include "model/model.hpp"

namespace agld::sampler {

// Called with rows of the data and their margins theta . x_i at the host's current theta.
using RowVisitor = std::function<void(const Batch& rows, std::span<const double> margins)>;

// What a strategy may ask of the sampler. theta() is current in every coordinate whenever
// start() or refresh() runs.
class SnapshotHost {
 public:
  virtual ~SnapshotHost() = default;
  virtual uint64_t rows() const = 0;  // N
  virtual uint64_t dim() const = 0;   // d
  virtual const model::Model& model() const = 0;
  virtual std::span<const double> theta() const = 0;
  virtual std::span<double> aggregate() = 0;  // A
  // Every row once, in stored order (a data pass: counted as read and as N gradient
  // evaluations).
  virtual Status full_pass(const RowVisitor& visit) = 0;
  // `rows` rows drawn by the run's access order (counted likewise).
  virtual Status subsample(uint64_t rows, const RowVisitor& visit) = 0;
};

struct SnapshotParams {
  uint64_t rows = 0;            // N
  uint64_t dim = 0;             // d
  uint64_t refresh = 0;         // D: refresh after iteration k when (k + 1) % D == 0
  uint64_t snapshot_batch = 0;  // ptu+: rows of a refresh
};

class Snapshot {
 public:
  virtual ~Snapshot() = default;
  // Bytes of per-run state the strategy keeps (beyond A, which the host owns).
  virtual uint64_t state_bytes() const = 0;
  // Whether the host needs a full-pass reader (start or refresh reads every row).
  virtual bool reads_full_passes() const = 0;
  // `full` (LMC): every step uses all rows, with sh = 0 and A = 0.
  virtual bool full_batch() const { return false; }
  // Gradient evaluations shadows() spends per row (ptu recomputes s_i at the snapshot).
  virtual uint64_t shadow_cost() const { return 0; }
  // Before the first iteration, at x_0.
  virtual Status start(SnapshotHost& host) = 0;
  // sh_i for each row of the batch.
  virtual void shadows(const Batch& batch, std::span<double> sh) = 0;
  // After the step of iteration k: s holds s_i(x_k) for the batch's rows.
  virtual void after_step(SnapshotHost& host, const Batch& batch, std::span<const double> s) {
    (void)host, (void)batch, (void)s;
  }
  // Whether to refresh after iteration k (0-based).
  virtual bool refresh_due(uint64_t k) const { (void)k; return false; }
  virtual Status refresh(SnapshotHost& host) { (void)host; return Status::ok(); }
};

using SnapshotFactory = std::unique_ptr<Snapshot> (*)(const SnapshotParams& params);

struct SnapshotInfo {
  std::string_view name;
  std::string_view summary;
  SnapshotFactory make;
};

std::span<const SnapshotInfo> registered_snapshots();
const SnapshotInfo* find_snapshot(std::string_view name);

// a += sum over the rows of coef_i x_i (the strategies' aggregates, the engine's gradient).
inline void add_rows(std::span<double> a, const Batch& rows, std::span<const double> coef) {
  for (size_t i = 0; i < rows.size(); ++i) {
    const double c = coef[i];
    if (c == 0) continue;
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) a[idx[e]] += c * val[e];
  }
}

}  // namespace agld::sampler
