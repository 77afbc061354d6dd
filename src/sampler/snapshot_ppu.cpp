// `ppu` (SAGA-LD) and `tmu`: one snapshot scalar per row, updated for the rows of each
// batch after the step (sh_i = s_i(x_k), A += (s_i(x_k) - sh_i) x_i; a row twice in a
// batch updates once: the second update adds exactly zero). `tmu` also rebuilds every
// sh_i and A from a full pass every D iterations. Both start with a full pass at x_0.
//
// The table holds float32 scalars (4 bytes a row: 600 MB for kdd12's 149.6M rows). A is
// kept equal to sum_i sh_i x_i of the stored (rounded) values, and the estimate uses the
// same stored values, so the rounding does not bias it: it only moves the control variate.
#include <algorithm>
#include <vector>

#include "common/huge_array.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {
namespace {

class PerRowTable final : public Snapshot {
 public:
  PerRowTable(const SnapshotParams& p, bool periodic) : p_(p), periodic_(periodic) {}

  uint64_t state_bytes() const override { return p_.rows * sizeof(float); }
  RefreshRows refresh_rows() const override { return RefreshRows::kFullPass; }

  void shadows(const Batch& b, std::span<double> sh) override {
    for (size_t i = 0; i < b.size(); ++i) sh[i] = table_[b.row_ids[i]];
  }

  void after_step(const Batch& b, std::span<const double> s, StridedSpan<double> a) override {
    for (size_t i = 0; i < b.size(); ++i) {
      float& slot = table_[b.row_ids[i]];
      const float now = static_cast<float>(s[i]);
      const double delta = static_cast<double>(now) - static_cast<double>(slot);
      if (delta == 0) continue;
      slot = now;
      const auto idx = b.row_indices(i);
      const auto val = b.row_values(i);
      for (size_t e = 0; e < idx.size(); ++e) a[idx[e]] += delta * val[e];
    }
  }

  bool refresh_due(uint64_t k) const override { return periodic_ && (k + 1) % p_.refresh == 0; }
  uint64_t refreshes_in(uint64_t iterations) const override { return periodic_ ? iterations / p_.refresh : 0; }

  void begin_refresh(const PointWriter&, StridedSpan<double>) override {
    if (table_.empty()) table_.reset(p_.rows);  // at the start: every entry is written now
  }

  void refresh_piece(const Batch& rows, std::span<const double> margins, StridedSpan<double> a) override {
    coef_.resize(rows.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      const float sh = static_cast<float>(p_.model->dloss(rows.labels[i], margins[i]));
      table_[rows.row_ids[i]] = sh;
      coef_[i] = sh;
    }
    add_rows(a, rows, coef_);
  }

  // The table: a float a row (empty before the start's refresh, but a checkpoint comes after
  // it: an empty table in one would leave the shadows reading nothing).
  void save(StateWriter& out) const override {
    out.section("ROWS");
    out.array("the per-row table", std::span<const float>(table_));
  }
  Status load(StateReader& in) override {
    AGLD_RETURN_IF_ERROR(in.section("ROWS", "the per-row table"));
    table_.reset(static_cast<size_t>(p_.rows));
    return in.array("the per-row table", std::span<float>(table_.data(), table_.size()));
  }

 private:
  SnapshotParams p_;
  bool periodic_;
  HugeArray<float> table_;  // read at random under rr, ra and br
  std::vector<double> coef_;
};

}  // namespace

std::unique_ptr<Snapshot> make_ppu(const SnapshotParams& p) { return std::make_unique<PerRowTable>(p, false); }
std::unique_ptr<Snapshot> make_tmu(const SnapshotParams& p) { return std::make_unique<PerRowTable>(p, true); }

}  // namespace agld::sampler
