// Exact convergence diagnostics of one quantity from its kept draws (ALGORITHMS.md section 7;
// docs/diagnostics.md): rank-normalized split-R-hat, bulk-ESS and tail-ESS as Vehtari,
// Gelman, Simpson, Carpenter and Buerkner (2021) define them, with the same definitions as
// the R package `posterior` (version 1.4: rhat, ess_bulk, ess_tail, mcse_mean, quantile2)
// and ArviZ. Checked against numbers computed with `posterior` (tests/diagnostics/fixtures).
//
// Draws are chain-major: chain c's n draws at [c * n, (c + 1) * n). Where `posterior`
// returns NA (a non-finite draw, constant draws, too few draws), these return NaN.
// Internal to the library: the run directory's reader (`agld summary`) uses it.
#pragma once

#include <cstddef>
#include <span>

namespace agld::diagnostics {

// max(R-hat of the rank-normalized split chains, R-hat of the rank-normalized folded split
// chains): posterior::rhat.
double rhat(std::span<const double> draws, size_t chains);
// ESS of the rank-normalized split chains: posterior::ess_bulk.
double ess_bulk(std::span<const double> draws, size_t chains);
// min(ESS of the 5 % and of the 95 % quantile's indicator): posterior::ess_tail.
double ess_tail(std::span<const double> draws, size_t chains);
// ESS of the mean (split chains, no rank normalization): posterior::ess_mean.
double ess_mean(std::span<const double> draws, size_t chains);
// sd / sqrt(ess_mean): posterior::mcse_mean.
double mcse_mean(std::span<const double> draws, size_t chains);
// The p-quantile of the pooled draws, R's type 7 (posterior::quantile2's default).
double quantile(std::span<const double> draws, double p);

// Everything a stansummary row shows, at once (the ranks computed once).
struct DrawSummary {
  double mean = 0, mcse = 0, sd = 0;  // mcse: of the mean
  double q5 = 0, q50 = 0, q95 = 0;
  double ess_bulk = 0, ess_tail = 0, rhat = 0;
};
DrawSummary summarize(std::span<const double> draws, size_t chains);

}  // namespace agld::diagnostics
