// Rao-Blackwellized posterior moments (docs/samplers.md, "Rao-Blackwellized moments"). At a
// full-pass refresh after burn-in each chain's state x gives, for a coordinate j, the mean mu_j
// and variance v_j of its conditional given all the others, and
//     E[x_j] = E[mu_j],  Var(x_j) = E[v_j] + Var(mu_j),
// whose averages over the refreshes have a Monte Carlo error set by Var(mu_j) alone: small
// where j's rows hold coordinates that are themselves well determined, which is where a rare
// coordinate's own draws mix slowest (it moves only when one of its few rows is in a batch).
// Two sources of (mu_j, v_j):
// - a model whose l'' is a constant c (linear): the conditional is Gaussian,
//     x_j | x_-j ~ N(mu_j, 1 / H_jj),  H_jj = 1/s2p + c sum_i x_ij^2,  mu_j = x_j - G_j(x) / H_jj,
//   G the full gradient of U; the refresh's aggregate A = sum_i l'(y_i, x . x_i) x_i gives
//   G(x) = x / s2p + A exactly: every coordinate at O(d);
// - any other model: quadrature of the conditional from the coordinate's own rows
//   (sampler/conditional_quadrature.hpp), for the coordinates in few rows
//   (sampler/rare_rows.hpp); the others have none, and their kept draws' moments stand.
// Internal to the sampler layer.
#pragma once

#include <algorithm>

#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "common/strided_span.hpp"
#include "model/model.hpp"
#include "common/state_archive.hpp"
#include "sampler/conditional_quadrature.hpp"
#include "sampler/moments.hpp"
#include "sampler/rare_rows.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {

class RaoBlackwell {
 public:
  // Gaussian conditionals: data_h, c sum_i x_ij^2 of each coordinate (the data's part of
  // H_jj); chains: the run's.
  RaoBlackwell(std::vector<float> data_h, double inv_prior_var, size_t chains)
      : data_h_(std::move(data_h)),
        inv_s2p_(inv_prior_var),
        chains_(chains),
        mu_(data_h_.size()),
        chain_mean_(data_h_.size() * chains, 0.0f) {}
  // Conditionals by quadrature (add_moments) of the coordinates in few rows, which the chains
  // gather (rare_rows()): each one's variance is kept too. The accumulators hold those
  // coordinates alone, by their place among them (RareRows::index).
  RaoBlackwell(std::shared_ptr<const RareRows> rare, double inv_prior_var, size_t chains)
      : inv_s2p_(inv_prior_var),
        chains_(chains),
        mu_(rare->size()),
        chain_mean_(rare->size() * chains, 0.0f),
        var_mean_(rare->size(), 0.0f),
        rare_(std::move(rare)) {}
  // Bytes of the accumulators of n coordinates (d Gaussian ones; the rare ones by quadrature).
  static uint64_t bytes(uint64_t n, uint64_t chains) { return PooledMoments::bytes(n) + 4 * n + 4 * n * chains; }
  bool gaussian() const { return !rare_; }
  const std::shared_ptr<const RareRows>& rare_rows() const { return rare_; }

  // One refresh of every chain, coordinates [j0, j1) (disjoint ranges may run at once): chain
  // c's state x[c] (current at every coordinate some row has) and its aggregate a[c] at x[c].
  // prepare() before, next_sample() after, once each. Gaussian conditionals only.
  void add(std::span<const StridedSpan<const double>> x, std::span<const StridedSpan<const double>> a, uint64_t j0,
           uint64_t j1) {
    const double inv_n = 1.0 / static_cast<double>(mu_.count() / chains_ + 1);
    mu_.add_values(x.size(), j0, j1, [&](size_t c, uint64_t j) {
      // A coordinate in no row has A_j = 0 and H_jj = 1/s2p: mu_j = 0 (the prior's mean),
      // whatever its stale x_j. Under a flat prior it has no conditional: NaN (the draws' moments then stand).
      const double h = inv_s2p_ + static_cast<double>(data_h_[j]);
      const double xj = x[c][j];
      const double mu = xj - (xj * inv_s2p_ + a[c][j]) / h;
      keep_chain_mean(j, c, mu, inv_n);
      return mu;
    });
  }
  // The same from chain c's conditional moments of the r-th rare coordinate, moments(c, r),
  // for r in [r0, r1) (NaN where it has none: its estimate is then NaN, and its kept draws'
  // stand). Conditionals by quadrature only.
  template <class Moments>
  void add_moments(size_t k, uint64_t r0, uint64_t r1, Moments moments) {
    const double inv_n = 1.0 / static_cast<double>(mu_.count() / chains_ + 1);
    mu_.add_values(k, r0, r1, [&](size_t c, uint64_t r) {
      const ConditionalMoments m = moments(c, r);
      keep_chain_mean(r, c, m.mean, inv_n);
      float& v = var_mean_[r];  // the mean of v_j over every conditional so far
      v = static_cast<float>(v + (m.var - v) / static_cast<double>(mu_.count() + c + 1));
      return m.mean;
    });
  }
  void prepare(size_t chains) { mu_.prepare(chains); }
  // No conditional draw yet (a run's next stage).
  void reset() {
    mu_.reset();
    std::fill(chain_mean_.begin(), chain_mean_.end(), 0.0f);
    std::fill(var_mean_.begin(), var_mean_.end(), 0.0f);
  }
  void next_sample(size_t chains) { mu_.next_draw(chains); }
  uint64_t samples() const { return mu_.count(); }

  // Coordinate j's estimates: the mean of mu_j, sqrt(the mean of v_j + the variance of mu_j), and the
  // mean's Monte Carlo error: the larger of sqrt(Var(mu_j) / samples) (the samples a pass
  // apart taken as independent) and sqrt(B/n / K), the chains' means taken as K batches (the
  // draws inherit the autocorrelation of the coordinates in j's rows); the share of the
  // variance Var(mu_j) is (what the sd's error scales with); and the R-hat of the mean (NaN
  // with one chain or one conditional draw a chain):
  //     rhat^2 = 1 + (B/n - W/n) / (E[v_j] + W),
  // B/n the variance of the chains' means of mu_j, W the variance of mu_j within a chain, n the
  // conditional draws of a chain: Stan's R-hat, (n-1)/n W + B/n over W, with the variance of x_j
  // within a chain (E[v_j] + W) in place of W. It exceeds 1.01 when the chains' estimates
  // disagree by more than their within-chain noise explains, by about 0.14 posterior sds. Not
  // split: a chain has a handful of conditional draws.
  struct Estimate {
    double mean, sd, mcse, mu_share, rhat;
  };
  Estimate at(uint64_t j) const;

  void save(StateWriter& out) const {
    mu_.save(out);
    out.array("the chains' conditional means", chain_mean_);
    out.array("the conditional variances' means", var_mean_);
  }
  Status load(StateReader& in) {
    AGLD_RETURN_IF_ERROR(mu_.load(in));
    AGLD_RETURN_IF_ERROR(in.array("the chains' conditional means", chain_mean_));
    return in.array("the conditional variances' means", var_mean_);
  }

 private:
  // Chain c's running mean of mu at slot j, its (1 / inv_n)-th conditional draw.
  void keep_chain_mean(uint64_t j, size_t c, double mu, double inv_n) {
    float& m = chain_mean_[j * chains_ + c];
    m = static_cast<float>(m + (mu - m) * inv_n);
  }

  std::vector<float> data_h_;
  double inv_s2p_;
  size_t chains_;
  PooledMoments mu_;               // of mu_j over every chain's refreshes after burn-in; a slot a coordinate
                                   // (Gaussian) or a rare coordinate (by quadrature: RareRows::index)
  std::vector<float> chain_mean_;  // slots x chains: each chain's mean of mu_j (float: their spread is what counts)
  std::vector<float> var_mean_;    // by quadrature: the mean of v_j (empty: Gaussian, v_j = 1 / H_jj)
  std::shared_ptr<const RareRows> rare_;  // by quadrature: the coordinates with conditionals (null: Gaussian)
};

// Conditionals by quadrature: of the coordinates in fewer rows than a pass has iterations
// (ceil(N / batch): most minibatches lack such a coordinate, so the dynamics moves it only at
// its visits), at least kRareRowsMin and at most kRareRowsMax rows; fewer (halving) if the
// accumulators, the layout and the chains' rows would take more than 1/kRareShare of --memory;
// none if even those in one row would.
constexpr uint64_t kRareRowsMin = 64;
constexpr uint64_t kRareRowsMax = 1024;
inline uint64_t rare_rows_limit(uint64_t rows, uint64_t batch) {
  return std::clamp((rows + batch - 1) / std::max<uint64_t>(batch, 1), kRareRowsMin, kRareRowsMax);
}
constexpr uint64_t kRareShare = 4;

// Whether the run r keeps Rao-Blackwellized moments: asked for (--rao-blackwell auto),
// refreshes that read every row at the chain's state (ptu, tmu; not hmc2, whose gradient point
// is its midpoint), per-feature statistics in the store, and at least two conditional draws
// after burn-in; a model without Gaussian conditionals also needs a finite prior and some
// coordinate in few rows whose rows fit (kRareRowsMax, kRareShare). Sets r's fields, with the
// reason either way. An unknown --rao-blackwell is an error.
Status resolve_rao_blackwell(const Store& train, const model::Model& model, const Snapshot& snap,
                             ResolvedSample* r);

// The accumulators of a run that keeps Rao-Blackwellized moments (r.rao_blackwell; else null):
// H_jj's data part from the store's per-feature statistics, or the coordinates in few rows.
Status make_rao_blackwell(const Store& train, const ResolvedSample& r, const model::Model& model,
                          std::unique_ptr<RaoBlackwell>* out);

// posterior.npy's moments, coordinate by coordinate (r holds the kept draws' moments and
// diagnostics): the conditional mean (and its MCSE) where its Monte Carlo error is below the
// draws', and the conditional sd where its relative error is. An sd's relative error: about
// 1 / sqrt(2 ESS) from the draws; from S conditional draws, the share of the variance that
// Var(mu_j) is times sqrt(1 / (2 (S - 1))). Where the draws have no diagnostics (a coordinate
// not covered), the conditional moments stand. Where it takes the mean, the coordinate's R-hat
// and ESS become the conditional mean's (Estimate::rhat; (sd / MCSE)^2), as its MCSE does:
// diagnostics.npy then describes posterior.npy's estimates. Counts what it took in r.
// skip(j): coordinates to leave as they are (known exactly).
void take_conditional_moments(const RaoBlackwell& rb, SampleResult* r, const std::function<bool(uint64_t)>& skip = {});

// The same for one coordinate j, its kept draws' estimates in e (a stage's verdict reads them
// without the result's arrays): which of the conditional mean and sd it took.
struct CoordinateEstimate {
  double mean, sd, rhat, ess, mcse;
};
struct Taken {
  bool mean = false, sd = false;
};
Taken take_conditional(const RaoBlackwell& rb, uint64_t j, CoordinateEstimate* e);

// c sum_i x_ij^2 for every coordinate of a run of dim coordinates (the intercept's, the last
// with `intercept`, is c N), from the store's per-feature statistics, which it must have.
Status conditional_precisions(const Store& train, const model::Model& model, bool intercept, uint64_t dim,
                              std::vector<float>* data_h);

}  // namespace agld::sampler
