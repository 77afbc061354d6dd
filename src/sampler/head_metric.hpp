// The dense block of the metric (`--metric block|dense|auto|FILE`; docs/samplers.md, "A dense
// metric"): which coordinates it holds, and its M, from the Hessian of the posterior restricted
// to them at that restriction's mode on a sample of rows (or from a d x d file). The chains step
// it with sampler/dense_head.hpp. Internal to the sampler layer.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agld/status.hpp"
#include "model/model.hpp"
#include "sampler/coordinate_file.hpp"
#include "sampler/row_sample.hpp"

namespace agld::sampler {

// --metric block and auto: K coordinates at most (M and its factor are 16 MB; forming them
// costs K^3 / 3 once). --metric dense and a d x d file: d at most.
inline constexpr uint64_t kMaxHead = 1024;
inline constexpr uint64_t kMaxDense = 4096;

// The most of the block's noise its gradient noise may stand for when the step is raised
// (DenseHead::retemper): half, well inside what the shares can take out (1 - kLeastNoiseShare).
inline constexpr double kBlockNoiseTarget = 0.5;

// K coordinates whose M is a K x K matrix, stepped together every iteration; the others keep
// their diagonal levels. Shared by the chains.
struct HeadMetric {
  // The block's coordinates in M's order: the intercept (if any) first, then by rows; a d x d
  // file's in coordinate order.
  std::vector<uint32_t> coords;
  Eigen::MatrixXd m;             // M (symmetric positive definite), K x K
  Eigen::MatrixXd l;             // its lower Cholesky factor: L L^T = M
  // ld's drift step on the block, a <= 1 (sampler/dense_head.hpp): theta' = theta - a M G +
  // sqrt(2a - a^2) L z, exact for a Gaussian whose Hessian M^-1 is. The step it starts with.
  double ld_step = 0;
  // The most the gradient-noise correction may raise the step to, where the block's measured
  // gradient noise allows (DenseHead::retemper); ld_step where it is fixed (--step).
  double max_step = 0;
};

// What --metric asks for: the metric's shape, or a file (d x 2: a diagonal from its sds; d x d:
// M itself).
struct MetricRequest {
  enum Kind { kDiag, kBlock, kDense, kAuto } kind = kDiag;
  std::unique_ptr<CoordinateFile> file;
  bool dense_file = false;
};
// Parses --metric's value for d coordinates (a file is opened and its shape checked).
Status parse_metric(const std::string& given, uint64_t dim, MetricRequest* out);

// M on head->coords from the sample (its values unscaled on them): the Hessian of the posterior
// restricted to the block, H = (N/S) sum_i l''(y_i, x_iB . t) x_iB x_iB' + I/s2p, at that
// restriction's mode t (Newton; the other coordinates at their prior mean 0), each diagonal
// entry at least h_floor's share of it; M = H^-1. *weights gets each sampled row's l'' at t;
// *at_mode whether Newton found t (else H is at the curvature bound c); *rule says how H was found.
Status head_at_mode(const RowSample& s, const model::Model& model, const std::vector<double>& h_floor, double scale,
                    double inv_s2p, HeadMetric* head, std::vector<double>* weights, bool* at_mode, std::string* rule);

// M from a d x d file: finite, symmetric and positive definite, or a one-line error.
Status dense_metric_file(const CoordinateFile& file, const std::string& path, uint64_t dim, HeadMetric* head);

}  // namespace agld::sampler
