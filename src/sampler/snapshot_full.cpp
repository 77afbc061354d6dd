// `full` (LMC): every step's batch is every row, with sh = 0 and A = 0.
#include <algorithm>

#include "sampler/snapshot.hpp"

namespace agld::sampler {
namespace {

class FullBatch final : public Snapshot {
 public:
  uint64_t state_bytes() const override { return 0; }
  RefreshRows refresh_rows() const override { return RefreshRows::kNone; }
  bool full_batch() const override { return true; }
  void shadows(const Batch&, std::span<double> sh) override { std::fill(sh.begin(), sh.end(), 0.0); }
  void save(StateWriter& out) const override { out.section("FULL"); }
  Status load(StateReader& in) override { return in.section("FULL", "snapshot full"); }
};

}  // namespace

std::unique_ptr<Snapshot> make_full(const SnapshotParams&) { return std::make_unique<FullBatch>(); }

}  // namespace agld::sampler
