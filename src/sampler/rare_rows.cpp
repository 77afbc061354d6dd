#include "sampler/rare_rows.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "sampler/conditional_move.hpp"

#include "agld/feature_stats.hpp"

namespace agld::sampler {

uint64_t RareRowCounts::coordinates(uint64_t max_rows) const {
  uint64_t s = 0;
  for (uint64_t n = 1; n <= max_rows && n < features.size(); ++n) s += features[n];
  return s;
}

uint64_t RareRowCounts::pairs(uint64_t max_rows) const {
  uint64_t s = 0;
  for (uint64_t n = 1; n <= max_rows && n < features.size(); ++n) s += n * features[n];
  return s;
}

Status count_rare_rows(const Store& train, uint64_t limit, RareRowCounts* out) {
  out->features.assign(limit + 1, 0);
  return scan_feature_stats(train, [&](const FeatureStatsBlock& b) {
    for (uint64_t n : b.count) {
      if (n <= limit) ++out->features[n];
    }
    return Status::ok();
  });
}

Status RareRows::make(const Store& train, uint64_t dim, uint64_t max_rows, std::shared_ptr<const RareRows>* out) {
  auto r = std::make_shared<RareRows>();
  r->index_.assign(dim, kNone);
  r->offsets_.assign(1, 0);
  const uint64_t features = train.meta().features;
  Status st = scan_feature_stats(train, [&](const FeatureStatsBlock& b) {
    for (size_t i = 0; i < b.count.size(); ++i) {
      const uint64_t j = b.first + i, n = b.count[i];
      if (j >= features || j >= dim || n == 0 || n > max_rows) continue;
      r->index_[j] = static_cast<uint32_t>(r->coords_.size());
      r->coords_.push_back(static_cast<uint32_t>(j));
      r->offsets_.push_back(r->offsets_.back() + n);
    }
    return Status::ok();
  });
  if (!st.is_ok()) return st;
  *out = std::move(r);
  return Status::ok();
}

void RareConditionals::begin() {
  std::fill(filled_.begin(), filled_.end(), 0u);
  numbered_ = 0;
  shift_.clear();
}

void RareConditionals::add(const Batch& b, std::span<const double> margins, StridedSpan<const double> x) {
  const RareRows& l = *layout_;
  for (size_t i = 0; i < b.size(); ++i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    pending_.clear();
    for (size_t e = 0; e < idx.size(); ++e) {
      const uint32_t r = l.index(idx[e]);
      if (r == RareRows::kNone) continue;
      uint32_t& f = filled_[r];
      if (f == l.rows(r)) continue;  // more rows than the statistics count: the store is damaged
      const double xv = val[e];
      const uint64_t pair = l.offset(r) + f++;
      rows_[pair] = {static_cast<float>(margins[i] - xv * x[idx[e]]), val[e], static_cast<float>(b.labels[i])};
      pending_.push_back(pair);
    }
    if (row_.empty()) continue;
    // At most one number a two pairs, and fewer than the pairs' count: below kAlone.
    const uint32_t number = pending_.size() > 1 ? numbered_++ : kAlone;
    for (uint64_t pair : pending_) row_[pair] = number;
  }
}

std::span<const ConditionalRow> RareConditionals::current(uint32_t r, std::vector<ConditionalRow>& scratch) const {
  const uint64_t begin = layout_->offset(r);
  const std::span<const ConditionalRow> gathered(rows_.data() + begin, filled_[r]);
  if (shift_.empty()) return gathered;
  scratch.assign(gathered.begin(), gathered.end());
  for (size_t p = 0; p < scratch.size(); ++p) {
    const uint32_t number = row_[begin + p];
    if (number != kAlone) scratch[p].offset += shift_[number];
  }
  return scratch;
}

std::vector<ConditionalRow> RareConditionals::rows(uint32_t r) const {
  std::vector<ConditionalRow> out;
  const std::span<const ConditionalRow> now = current(r, out);
  if (now.data() != out.data()) return {now.begin(), now.end()};  // no sweep since the gathering
  // Its rows' sums hold its own move too, which its offsets leave out.
  const uint64_t begin = layout_->offset(r);
  for (size_t p = 0; p < out.size(); ++p) {
    if (row_[begin + p] != kAlone) out[p].offset -= moved_[r] * out[p].x;
  }
  return out;
}

double RareConditionals::compute(const model::Model& model, double inv_prior_var, StridedSpan<double> x, Noise* noise) {
  const RareRows& l = *layout_;
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::vector<double> scratch;
  std::vector<ConditionalRow> rows_now;
  const bool moves = noise && !row_.empty();
  if (moves) {
    shift_.assign(numbered_, 0.0f);
    std::fill(moved_.begin(), moved_.end(), 0.0f);
  }
  double d_sq = 0;
  proposed_ = accepted_ = 0;
  for (uint32_t r = 0; r < l.size(); ++r) {
    if (filled_[r] != l.rows(r)) {
      moments_[r] = {kNaN, kNaN};
      continue;
    }
    const std::span<const ConditionalRow> rows = current(r, rows_now);
    const uint32_t j = l.coordinate(r);
    moments_[r] = conditional_moments(rows, model, inv_prior_var, x[j], scratch);
    if (!moves || !std::isfinite(moments_[r].mean) || !(moments_[r].var > 0)) continue;
    const double old = x[j];
    const ConditionalStep step = conditional_move(rows, model, inv_prior_var, old, moments_[r], *noise);
    ++proposed_;
    if (!step.accepted) continue;
    ++accepted_;
    x[j] = step.value;
    d_sq += step.value * step.value - old * old;
    // The other rare coordinates of j's rows see the move at their turns.
    const double delta = step.value - old;
    moved_[r] = static_cast<float>(delta);
    const uint64_t begin = l.offset(r);
    for (size_t p = 0; p < rows.size(); ++p) {
      const uint32_t number = row_[begin + p];
      if (number != kAlone) shift_[number] += static_cast<float>(delta * static_cast<double>(rows[p].x));
    }
  }
  return d_sq;
}

}  // namespace agld::sampler
