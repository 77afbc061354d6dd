#include "diagnostics/online_diagnostics.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace agld::diagnostics {
namespace {

// sqrt(h) batches a half, at most 10: a batch must outlast the chain's autocorrelation, and a
// slow chain's batches of sqrt(h) draws do not (they then overstate the ESS).
uint64_t batches_per_half(uint64_t h) {
  return std::clamp<uint64_t>(static_cast<uint64_t>(std::sqrt(static_cast<double>(h))), 1, 10);
}

}  // namespace

OnlineDiagnostics::OnlineDiagnostics(uint64_t d, std::vector<uint64_t> coordinates, size_t chains, uint64_t planned)
    : d_(d), coords_(std::move(coordinates)), covered_(coords_.empty() ? d : coords_.size()), k_(chains) {
  restart(planned);
}

void OnlineDiagnostics::restart(uint64_t planned) {
  planned_ = planned;
  half_ = planned / 2;
  batch_ = std::max<uint64_t>(1, half_ / batches_per_half(half_));
  batches_ = std::max<uint64_t>(1, half_ / batch_);
  t_ = in_half_ = in_batch_ = halves_ = draws_ = batches_folded_ = 0;
  within_df_ = 0;
  for (std::vector<double>* a : {&half_sum_, &batch_sum_}) a->assign(covered_ * k_, 0.0);
  for (std::vector<double>* a : {&ref_, &sq_, &sum_, &hm_, &hm2_, &nhm2_, &bsq_}) a->assign(covered_, 0.0);
}

// Draw t's place: left out (the middle of an odd n, or past the plan), or in a batch, the
// end of a batch, or the end of a half. u is the draw's place within its half.
OnlineDiagnostics::Place OnlineDiagnostics::place(uint64_t t) const {
  if (half_ == 0 || t >= planned_) return Place::kSkip;
  uint64_t u = t;
  if (t >= half_) {
    if (t < planned_ - half_) return Place::kSkip;
    u = t - (planned_ - half_);
  }
  if (u + 1 == half_) return Place::kEndsHalf;
  if ((u + 1) % batch_ == 0 && (u + 1) / batch_ < batches_) return Place::kEndsBatch;
  return Place::kInBatch;
}

void OnlineDiagnostics::add(std::span<const StridedSpan<const double>> states, uint64_t i0, uint64_t i1) {
  const Place p = place(t_);
  if (p == Place::kSkip) return;
  const uint64_t blen = in_batch_ + 1, hlen = in_half_ + 1;
  for (uint64_t i = i0; i < i1; ++i) {
    const uint64_t j = coordinate(i);
    if (t_ == 0) ref_[i] = states[0][j];
    const double ref = ref_[i];
    double sq = 0;
    for (size_t c = 0; c < k_; ++c) {
      const double y = states[c][j] - ref;
      half_sum_[i * k_ + c] += y;
      batch_sum_[i * k_ + c] += y;
      sq += y * y;
    }
    sq_[i] += sq;
    if (p != Place::kInBatch) fold_batch(i, blen);
    if (p == Place::kEndsHalf) fold_half(i, hlen);
  }
}

void OnlineDiagnostics::fold_batch(uint64_t i, uint64_t len) {
  double s = 0;
  for (size_t c = 0; c < k_; ++c) {
    const double b = batch_sum_[i * k_ + c];
    s += b * b;
    batch_sum_[i * k_ + c] = 0;
  }
  bsq_[i] += s / static_cast<double>(len);
}

void OnlineDiagnostics::fold_half(uint64_t i, uint64_t len) {
  const double n = static_cast<double>(len);
  for (size_t c = 0; c < k_; ++c) {
    const double h = half_sum_[i * k_ + c];
    const double m = h / n;
    sum_[i] += h;
    hm_[i] += m;
    hm2_[i] += m * m;
    nhm2_[i] += n * m * m;
    half_sum_[i * k_ + c] = 0;
  }
}

void OnlineDiagnostics::next_draw() {
  const Place p = place(t_);
  ++t_;
  if (p == Place::kSkip) return;
  ++in_batch_;
  ++in_half_;
  if (p != Place::kInBatch) {
    batches_folded_ += k_;
    in_batch_ = 0;
  }
  if (p == Place::kEndsHalf) {
    halves_ += k_;
    draws_ += k_ * in_half_;
    within_df_ += static_cast<double>(k_) * static_cast<double>(in_half_ - 1);
    in_half_ = 0;
  }
}

void OnlineDiagnostics::save(StateWriter& out) const {
  out.section("DIAG");
  out.u64("the diagnostics' d", d_);
  out.u64("the diagnostics' chains", k_);
  out.u64("the diagnostics' planned draws", planned_);
  out.array("the diagnosed coordinates", coords_);
  for (uint64_t v : {t_, in_half_, in_batch_, halves_, draws_, batches_folded_}) out.u64("a diagnostics' counter", v);
  out.f64("the diagnostics' degrees of freedom", within_df_);
  for (const std::vector<double>* a : {&half_sum_, &batch_sum_, &ref_, &sq_, &sum_, &hm_, &hm2_, &nhm2_, &bsq_}) {
    out.array("the diagnostics' sums", *a);
  }
}

Status OnlineDiagnostics::load(StateReader& in) {
  AGLD_RETURN_IF_ERROR(in.section("DIAG", "the online diagnostics"));
  uint64_t d = 0, k = 0, planned = 0;
  AGLD_RETURN_IF_ERROR(in.u64("the diagnostics' d", &d));
  AGLD_RETURN_IF_ERROR(in.u64("the diagnostics' chains", &k));
  AGLD_RETURN_IF_ERROR(in.u64("the diagnostics' planned draws", &planned));
  if (d != d_ || k != k_ || planned != planned_) {
    return in.corrupt("diagnostics of " + std::to_string(k) + " chains x " + std::to_string(planned) + " draws of d = " +
                      std::to_string(d) + " in a run of " + std::to_string(k_) + " x " + std::to_string(planned_) +
                      " of d = " + std::to_string(d_));
  }
  std::vector<uint64_t> coords;
  AGLD_RETURN_IF_ERROR(in.vec("the diagnosed coordinates", &coords, d_));
  for (size_t i = 0; i < coords.size(); ++i) {
    if (coords[i] >= d_ || (i > 0 && coords[i] <= coords[i - 1])) return in.corrupt("the diagnosed coordinates are not ascending in [0, d)");
  }
  coords_ = std::move(coords);
  covered_ = coords_.empty() ? d_ : coords_.size();
  for (uint64_t* v : {&t_, &in_half_, &in_batch_, &halves_, &draws_, &batches_folded_}) {
    AGLD_RETURN_IF_ERROR(in.u64("a diagnostics' counter", v));
  }
  AGLD_RETURN_IF_ERROR(in.f64("the diagnostics' degrees of freedom", &within_df_));
  if (t_ > planned_ || in_half_ > half_ || in_batch_ > half_) return in.corrupt("the diagnostics' counters are out of range");
  half_sum_.resize(covered_ * k_);
  batch_sum_.resize(covered_ * k_);
  for (std::vector<double>* a : {&ref_, &sq_, &sum_, &hm_, &hm2_, &nhm2_, &bsq_}) a->resize(covered_);
  for (std::vector<double>* a : {&half_sum_, &batch_sum_, &ref_, &sq_, &sum_, &hm_, &hm2_, &nhm2_, &bsq_}) {
    AGLD_RETURN_IF_ERROR(in.array("the diagnostics' sums", *a));
  }
  return Status::ok();
}

void OnlineDiagnostics::finish(std::span<double> rhat, std::span<double> ess, std::span<double> mcse) {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  std::fill(rhat.begin(), rhat.end(), kNaN);
  std::fill(ess.begin(), ess.end(), kNaN);
  std::fill(mcse.begin(), mcse.end(), kNaN);
  // A run stopped early: the half (and batch) it was in, as far as it went.
  const uint64_t partial_half = in_half_, partial_batch = in_batch_;
  if (partial_half > 0) {
    for (uint64_t i = 0; i < covered_; ++i) {
      if (partial_batch > 0) fold_batch(i, partial_batch);
      fold_half(i, partial_half);
    }
    if (partial_batch > 0) batches_folded_ += k_;
    halves_ += k_;
    draws_ += k_ * partial_half;
    within_df_ += static_cast<double>(k_) * static_cast<double>(partial_half - 1);
    in_half_ = in_batch_ = 0;
  }
  for (uint64_t i = 0; i < covered_; ++i) {
    const uint64_t j = coordinate(i);
    const Values v = at(i);
    rhat[j] = v.rhat;
    ess[j] = v.ess;
    mcse[j] = v.mcse;
  }
}

OnlineDiagnostics::Values OnlineDiagnostics::at(uint64_t i) const {
  constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
  Values v{kNaN, kNaN, kNaN};
  if (halves_ < 2 || within_df_ <= 0) return v;
  const double H = static_cast<double>(halves_), S = static_cast<double>(draws_);
  const double nbar = S / H;
  const double w = (sq_[i] - nhm2_[i]) / within_df_;
  const double mbar = hm_[i] / H;
  const double bvar = std::max(0.0, (hm2_[i] - H * mbar * mbar) / (H - 1));
  const double var_plus = (nbar - 1) / nbar * w + bvar;
  if (w > 0 && std::isfinite(w)) v.rhat = std::sqrt(var_plus / w);
  if (batches_folded_ >= 2) {
    const double sigma2 = std::max(0.0, (bsq_[i] - sum_[i] * sum_[i] / S) / static_cast<double>(batches_folded_ - 1));
    const double se2 = sigma2 / S;
    v.mcse = std::sqrt(se2);
    if (se2 > 0 && var_plus > 0) v.ess = std::min(var_plus / se2, S * std::log10(S));
  }
  return v;
}

}  // namespace agld::diagnostics
