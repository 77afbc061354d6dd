// `ptu` (SVRG-LD) and `ptu+` (SVRG-LD+ / -RR+ / -CA+): periodic total update. Memory-lean:
// only the snapshot point x~ and A are kept; sh_i = s_i(x~) is recomputed for the rows of
// each batch (a second sparse dot a row). Every D iterations x~ = theta and A is rebuilt:
// ptu from a full pass, A = sum_i s_i(x~) x_i; ptu+ from B rows drawn by the run's access
// order, A = (N / B) sum_{i in B} s_i(x~) x_i (its start uses the subsample too).
#include <algorithm>
#include <vector>

#include "common/huge_array.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {
namespace {

class PeriodicTotal final : public Snapshot {
 public:
  PeriodicTotal(const SnapshotParams& p, bool subsample) : p_(p), subsample_(subsample) {}

  uint64_t state_bytes() const override { return p_.dim * sizeof(double); }
  RefreshRows refresh_rows() const override { return subsample_ ? RefreshRows::kSubsample : RefreshRows::kFullPass; }
  uint64_t shadow_cost() const override { return 1; }

  void shadows(const Batch& b, std::span<double> sh) override {
    for (size_t i = 0; i < b.size(); ++i) {
      const auto idx = b.row_indices(i);
      const auto val = b.row_values(i);
      double m = 0;
      for (size_t e = 0; e < idx.size(); ++e) m += point_[idx[e]] * val[e];
      sh[i] = p_.model->dloss(b.labels[i], m);
    }
  }

  bool refresh_due(uint64_t k) const override { return (k + 1) % p_.refresh == 0; }
  uint64_t refreshes_in(uint64_t iterations) const override { return iterations / p_.refresh; }

  void begin_refresh(const PointWriter& point, StridedSpan<double>) override {
    if (point_.empty()) point_.reset(p_.dim);
    point(std::span<double>(point_.data(), point_.size()));
  }

  void refresh_piece(const Batch& rows, std::span<const double> margins, StridedSpan<double> a) override {
    const double scale = subsample_ ? static_cast<double>(p_.rows) / static_cast<double>(p_.snapshot_batch) : 1.0;
    coef_.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) coef_[i] = scale * p_.model->dloss(rows.labels[i], margins[i]);
    add_rows(a, rows, coef_);
  }

  // x~: d values (empty before the start's refresh, but a checkpoint comes after it: an empty
  // point in one would leave the shadows reading nothing).
  void save(StateWriter& out) const override {
    out.section("POIN");
    out.array("the snapshot point", std::span<const double>(point_));
  }
  Status load(StateReader& in) override {
    AGLD_RETURN_IF_ERROR(in.section("POIN", "the snapshot point"));
    point_.reset(static_cast<size_t>(p_.dim));
    return in.array("the snapshot point", std::span<double>(point_.data(), point_.size()));
  }

 private:
  SnapshotParams p_;
  bool subsample_;
  HugeArray<double> point_;  // x~, read at random like theta
  std::vector<double> coef_;
};

}  // namespace

std::unique_ptr<Snapshot> make_ptu(const SnapshotParams& p) { return std::make_unique<PeriodicTotal>(p, false); }
std::unique_ptr<Snapshot> make_ptu_plus(const SnapshotParams& p) { return std::make_unique<PeriodicTotal>(p, true); }

}  // namespace agld::sampler
