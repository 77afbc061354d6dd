// The table of snapshot strategies. Adding one: its factory's declaration and one line.
#include "common/registry.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {

std::unique_ptr<Snapshot> make_none(const SnapshotParams&);
std::unique_ptr<Snapshot> make_full(const SnapshotParams&);
std::unique_ptr<Snapshot> make_ptu(const SnapshotParams&);
std::unique_ptr<Snapshot> make_ptu_plus(const SnapshotParams&);
std::unique_ptr<Snapshot> make_ppu(const SnapshotParams&);
std::unique_ptr<Snapshot> make_tmu(const SnapshotParams&);

namespace {
constexpr SnapshotInfo kSnapshots[] = {
    {"none", "no snapshot (SGLD): sh = 0, A = 0", make_none, RefreshRows::kNone, false, false},
    {"full", "every row every step (LMC)", make_full, RefreshRows::kNone, true, false},
    {"ptu", "periodic total update (SVRG-LD): x~ and A from a full pass every D steps", make_ptu,
     RefreshRows::kFullPass, false, true},
    {"ptu+", "ptu whose refresh uses --snapshot-batch rows of the access order (SVRG-LD+)", make_ptu_plus,
     RefreshRows::kSubsample, false, true},
    {"ppu", "per-row partial update (SAGA-LD): sh_i of the batch's rows after each step", make_ppu,
     RefreshRows::kFullPass, false, false, true},
    {"tmu", "ppu every step and a full refresh every D steps (AGLD's TMU)", make_tmu, RefreshRows::kFullPass, false,
     true, true},
};
}  // namespace

std::span<const SnapshotInfo> registered_snapshots() { return kSnapshots; }

const SnapshotInfo* find_snapshot(std::string_view name) { return find_by_name<SnapshotInfo>(kSnapshots, name); }

}  // namespace agld::sampler
