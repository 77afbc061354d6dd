// `none` (SGLD): sh = 0 and A = 0; no data passes.
#include <algorithm>

#include "sampler/snapshot.hpp"

namespace agld::sampler {
namespace {

class NoSnapshot final : public Snapshot {
 public:
  uint64_t state_bytes() const override { return 0; }
  RefreshRows refresh_rows() const override { return RefreshRows::kNone; }
  void shadows(const Batch&, std::span<double> sh) override { std::fill(sh.begin(), sh.end(), 0.0); }
  void save(StateWriter& out) const override { out.section("NONE"); }
  Status load(StateReader& in) override { return in.section("NONE", "snapshot none"); }
};

}  // namespace

std::unique_ptr<Snapshot> make_none(const SnapshotParams&) { return std::make_unique<NoSnapshot>(); }

}  // namespace agld::sampler
