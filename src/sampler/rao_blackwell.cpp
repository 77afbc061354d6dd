#include "sampler/rao_blackwell.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "agld/feature_stats.hpp"
#include "sampler/dynamics.hpp"

namespace agld::sampler {

RaoBlackwell::Estimate RaoBlackwell::at(uint64_t coordinate) const {
  uint64_t j = coordinate;  // the accumulators' slot
  if (!gaussian()) {
    const uint32_t r = rare_->index(coordinate);
    if (r == RareRows::kNone) {
      constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
      return {kNaN, kNaN, kNaN, kNaN, kNaN};
    }
    j = r;
  }
  const double s = static_cast<double>(mu_.count());
  const double v = gaussian() ? 1 / (inv_s2p_ + static_cast<double>(data_h_[j])) : static_cast<double>(var_mean_[j]);
  const double var_mu = mu_.count() > 1 ? mu_.m2()[j] / (s - 1) : std::nan("");
  const double var = v + var_mu;
  const double k = static_cast<double>(chains_), n = s / k;
  double rhat = std::nan(""), mcse2 = var_mu / s;
  if (chains_ > 1 && n > 1) {
    double between = 0;  // sum over chains of (chain mean - mean)^2
    for (size_t c = 0; c < chains_; ++c) {
      const double d = static_cast<double>(chain_mean_[j * chains_ + c]) - mu_.mean()[j];
      between += d * d;
    }
    const double w = std::max(0.0, mu_.m2()[j] - n * between) / (k * (n - 1));
    rhat = std::sqrt(std::max(0.0, 1 + (between / (k - 1) - w / n) / (v + w)));
    // The chains as batches: the pooled mean's variance from the spread of the chains' means,
    // which holds when successive conditional draws are correlated (they inherit the slow
    // coordinates of j's rows); the larger of the two.
    mcse2 = std::max(mcse2, between / (k - 1) / k);
  }
  return {mu_.mean()[j], std::sqrt(var), std::sqrt(mcse2), var_mu / var, rhat};
}

namespace {
Status resolve_rao_blackwell_moments(const Store& train, const model::Model& model, const Snapshot& snap,
                                     ResolvedSample* r);

// --gibbs after the Rao-Blackwellized moments: on where their conditionals by quadrature are,
// whose rows it moves on.
void resolve_gibbs(ResolvedSample* r) {
  r->gibbs = r->gibbs_planned && r->rao_blackwell && r->rao_blackwell_rare_rows > 0;
  if (r->given.gibbs == "off") {
    r->gibbs_rule = "off (--gibbs off)";
  } else if (r->gibbs) {
    r->gibbs_rule = fmt::format(
        "at each refresh, the {} coordinates in 1 to {} rows each take an exact Metropolis step on their conditional "
        "in turn, their rows' margins following; then the refresh is taken again at the moved state (a pass, counted)",
        r->rao_blackwell_rare_coordinates, r->rao_blackwell_rare_rows);
  } else if (r->given.rao_blackwell == "off") {
    r->gibbs_rule = "off: it moves the coordinates whose conditionals --rao-blackwell auto computes, and that is off";
  } else {
    r->gibbs_rule = "off: no conditional by quadrature here (" + r->rao_blackwell_rule + ")";
  }
}
}  // namespace

Status resolve_rao_blackwell(const Store& train, const model::Model& model, const Snapshot& snap, ResolvedSample* r) {
  const Status st = resolve_rao_blackwell_moments(train, model, snap, r);
  if (st.is_ok()) resolve_gibbs(r);
  return st;
}

namespace {
Status resolve_rao_blackwell_moments(const Store& train, const model::Model& model, const Snapshot& snap,
                                     ResolvedSample* r) {
  const std::string& asked = r->given.rao_blackwell;
  if (asked != "auto" && asked != "off") {
    return Status::invalid_argument("unknown --rao-blackwell '" + asked + "' (known: auto, off)");
  }
  r->rao_blackwell = false;
  r->rao_blackwell_refreshes = 0;
  if (asked == "off") {
    r->rao_blackwell_rule = "off (--rao-blackwell off): the kept draws' moments";
    return Status::ok();
  }
  if (snap.refresh_rows() != RefreshRows::kFullPass) {
    r->rao_blackwell_rule = "off: " + r->snapshot + " has no refresh that reads every row (ptu and tmu have)";
    return Status::ok();
  }
  if (find_dynamics(r->dynamics)->eval_shift) {
    r->rao_blackwell_rule = "off: " + r->dynamics + " refreshes at its midpoint, not at the chain's state";
    return Status::ok();
  }
  if (!has_feature_stats(train)) {
    r->rao_blackwell_rule = "off: " + train.path() + " has no per-feature statistics (convert it again)";
    return Status::ok();
  }
  // A refresh after iteration k is at the state x_{k+1}: after burn-in from k = burn_in on.
  const uint64_t refreshes = snap.refreshes_in(r->iterations) - snap.refreshes_in(r->burn_in);
  if (refreshes * r->given.chains < 2) {
    r->rao_blackwell_rule = fmt::format("off: {} refreshes after burn-in in {} chains, and the estimate needs two",
                                        refreshes, r->given.chains);
    return Status::ok();
  }
  r->rao_blackwell_rare_rows = r->rao_blackwell_rare_coordinates = r->rao_blackwell_rare_pairs = 0;
  if (model.constant_curvature()) {
    r->rao_blackwell = true;
    r->rao_blackwell_refreshes = refreshes;
    r->rao_blackwell_rule = fmt::format(
        "each coordinate's Gaussian conditional at the {} refreshes after burn-in of each chain; posterior.npy takes "
        "its mean and sd where their Monte Carlo error is below the kept draws'",
        refreshes);
    return Status::ok();
  }
  // Conditionals by quadrature, of the coordinates in few rows: their rows gathered by every
  // chain at each refresh; the accumulators, the layout and the rows in at most 1/kRareShare of
  // --memory.
  if (!std::isfinite(r->given.prior_var)) {
    r->rao_blackwell_rule = "off: under a flat prior the conditional of a coordinate in a few rows may be improper";
    return Status::ok();
  }
  RareRowCounts counts;
  uint64_t rows = rare_rows_limit(train.meta().rows, r->batch);
  Status st = count_rare_rows(train, rows, &counts);
  if (!st.is_ok()) return st;
  const uint64_t k = r->given.chains, cap = r->given.memory / kRareShare;
  auto bytes = [&](uint64_t n) {
    return RaoBlackwell::bytes(counts.coordinates(n), k) + RareRowCounts::shared_bytes(r->dim, counts.coordinates(n)) +
           k * RareRowCounts::chain_bytes(counts.coordinates(n), counts.pairs(n), r->gibbs_planned);
  };
  while (rows > 0 && bytes(rows) > cap) rows /= 2;
  if (rows == 0 || counts.coordinates(rows) == 0) {
    r->rao_blackwell_rule =
        rows == 0 ? fmt::format("off: the conditional moments of the coordinates in one row would take {} MiB, more "
                                "than 1/{} of --memory",
                                bytes(1) >> 20, kRareShare)
                  : fmt::format("off: no coordinate is in 1 to {} rows (the {} model's conditionals are not Gaussian: "
                                "computed for those alone)",
                                rows, r->given.model);
    return Status::ok();
  }
  r->rao_blackwell = true;
  r->rao_blackwell_refreshes = refreshes;
  r->rao_blackwell_rare_rows = rows;
  r->rao_blackwell_rare_coordinates = counts.coordinates(rows);
  r->rao_blackwell_rare_pairs = counts.pairs(rows);
  r->rao_blackwell_rule = fmt::format(
      "the conditionals of the {} coordinates in 1 to {} rows (the {} model's are not Gaussian: by quadrature, from "
      "each one's rows gathered at the refresh) at the {} refreshes after burn-in of each chain; posterior.npy takes "
      "their mean and sd where their Monte Carlo error is below the kept draws'",
      r->rao_blackwell_rare_coordinates, rows, r->given.model, refreshes);
  return Status::ok();
}
}  // namespace

Status make_rao_blackwell(const Store& train, const ResolvedSample& r, const model::Model& model,
                          std::unique_ptr<RaoBlackwell>* out) {
  out->reset();
  if (!r.rao_blackwell) return Status::ok();
  if (r.rao_blackwell_rare_rows > 0) {
    std::shared_ptr<const RareRows> rare;
    Status st = RareRows::make(train, r.dim, r.rao_blackwell_rare_rows, &rare);
    if (!st.is_ok()) return st;
    *out = std::make_unique<RaoBlackwell>(std::move(rare), inverse_prior_var(r.given.prior_var),
                                          static_cast<size_t>(r.given.chains));
    return Status::ok();
  }
  std::vector<float> data_h;
  Status st = conditional_precisions(train, model, r.given.intercept, r.dim, &data_h);
  if (!st.is_ok()) return st;
  *out = std::make_unique<RaoBlackwell>(std::move(data_h), inverse_prior_var(r.given.prior_var),
                                        static_cast<size_t>(r.given.chains));
  return Status::ok();
}

Taken take_conditional(const RaoBlackwell& rb, uint64_t j, CoordinateEstimate* x) {
  Taken t;
  const RaoBlackwell::Estimate e = rb.at(j);
  if (!std::isfinite(e.mean) || !std::isfinite(e.sd)) return t;
  const double s = static_cast<double>(rb.samples());
  const double draws_err = 1 / std::sqrt(2 * x->ess);
  const double rb_err = e.mu_share * std::sqrt(0.5 / (s - 1));
  if (!(draws_err <= rb_err)) {
    x->sd = e.sd;
    t.sd = true;
  }
  if (x->mcse <= e.mcse) return t;
  x->mean = e.mean;
  x->mcse = e.mcse;
  t.mean = true;
  // The mean's diagnostics are then its own: the R-hat of the chains' conditional means, and
  // the independent draws its MCSE is worth, (sd / MCSE)^2. (With one chain, or one
  // conditional draw a chain, there is no such R-hat: the kept draws' stand.)
  if (std::isfinite(e.rhat)) {
    x->rhat = e.rhat;
    x->ess = x->sd * x->sd / (e.mcse * e.mcse);
  }
  return t;
}

void take_conditional_moments(const RaoBlackwell& rb, SampleResult* r, const std::function<bool(uint64_t)>& skip) {
  r->rb_samples = rb.samples();
  for (uint64_t j = 0; j < r->run.dim; ++j) {
    if (skip && skip(j)) continue;
    CoordinateEstimate x{r->mean[j], r->sd[j], r->rhat[j], r->ess[j], r->mcse[j]};
    const Taken t = take_conditional(rb, j, &x);
    r->mean[j] = x.mean;
    r->sd[j] = x.sd;
    r->rhat[j] = x.rhat;
    r->ess[j] = x.ess;
    r->mcse[j] = x.mcse;
    r->rb_sds += t.sd;
    r->rb_means += t.mean;
  }
}

Status conditional_precisions(const Store& train, const model::Model& model, bool intercept, uint64_t dim,
                              std::vector<float>* data_h) {
  const double c = model.curvature();
  data_h->assign(dim, 0.0f);
  Status st = scan_feature_stats(train, [&](const FeatureStatsBlock& b) {
    for (size_t i = 0; i < b.sum_sq.size(); ++i) (*data_h)[b.first + i] = static_cast<float>(c * b.sum_sq[i]);
    return Status::ok();
  });
  if (!st.is_ok()) return st;
  if (intercept) data_h->back() = static_cast<float>(c * static_cast<double>(train.meta().rows));
  return Status::ok();
}

}  // namespace agld::sampler
