#include "sampler/head_metric.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace agld::sampler {

Status parse_metric(const std::string& given, uint64_t dim, MetricRequest* out) {
  if (given == "diag") return Status::ok();
  if (given.empty()) {  // the default (docs/samplers.md, "Defaults")
    out->kind = MetricRequest::kAuto;
    return Status::ok();
  }
  if (given == "block") {
    out->kind = MetricRequest::kBlock;
  } else if (given == "dense") {
    out->kind = MetricRequest::kDense;
  } else if (given == "auto") {
    out->kind = MetricRequest::kAuto;
  } else {
    AGLD_RETURN_IF_ERROR(CoordinateFile::open("--metric", given, dim, 2, &out->file));
    out->dense_file = out->file->cols() == dim && dim != 2;
    if (!out->dense_file && out->file->cols() != 2) {
      return Status::invalid_argument(fmt::format(
          "--metric {}: {} columns; expected 2 (a standard deviation per coordinate in column 1) or {} (a d x d metric)",
          given, out->file->cols(), dim));
    }
    if (out->dense_file && dim > kMaxDense) {
      return Status::invalid_argument(fmt::format("--metric {}: a dense metric of d = {} coordinates is more than {}",
                                                  given, dim, kMaxDense));
    }
    if (!out->dense_file) AGLD_RETURN_IF_ERROR(out->file->check_column(1, true));
    return Status::ok();
  }
  if (out->kind == MetricRequest::kDense && dim > kMaxDense) {
    return Status::invalid_argument(fmt::format(
        "--metric dense: d = {} coordinates is more than {}; --metric block keeps a dense block of the most frequent",
        dim, kMaxDense));
  }
  return Status::ok();
}


namespace {

// A sampled row's entries on the block: (position in the block, value).
struct BlockRows {
  std::vector<uint64_t> offsets{0};
  std::vector<uint32_t> pos;
  std::vector<double> val;
  uint64_t rows() const { return offsets.size() - 1; }
};

BlockRows block_rows(const RowSample& s, const std::vector<uint32_t>& locals) {
  const std::vector<int32_t> at = s.positions(locals);
  BlockRows b;
  for (uint64_t i = 0; i < s.rows(); ++i) {
    for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) {
      if (at[s.local[e]] >= 0) {
        b.pos.push_back(static_cast<uint32_t>(at[s.local[e]]));
        b.val.push_back(s.values[e]);
      }
    }
    b.offsets.push_back(b.pos.size());
  }
  return b;
}

// Rows with more entries on the block than this go through a dense rank update (their outer
// products cost K^2 each either way; blocked, they run at matrix-multiply speed).
constexpr uint64_t kDenseRow = 32;
constexpr Eigen::Index kRankBlock = 64;

// H = diag(inv_s2p) + scale sum_i w_i x_iB x_iB' (the lower triangle and the diagonal filled).
Eigen::MatrixXd weighted_gram(const BlockRows& b, const std::vector<double>& w, Eigen::Index k, double scale,
                              double inv_s2p) {
  Eigen::MatrixXd h = Eigen::MatrixXd::Zero(k, k);
  Eigen::MatrixXd buf = Eigen::MatrixXd::Zero(k, kRankBlock);
  Eigen::Index held = 0;
  auto flush = [&] {
    if (held == 0) return;
    h.selfadjointView<Eigen::Lower>().rankUpdate(buf.leftCols(held), 1.0);
    buf.leftCols(held).setZero();
    held = 0;
  };
  for (uint64_t i = 0; i < b.rows(); ++i) {
    const uint64_t lo = b.offsets[i], hi = b.offsets[i + 1];
    if (hi == lo || w[i] == 0) continue;
    if (hi - lo > kDenseRow) {
      const double r = std::sqrt(scale * w[i]);
      for (uint64_t e = lo; e < hi; ++e) buf(b.pos[e], held) = r * b.val[e];
      if (++held == kRankBlock) flush();
      continue;
    }
    const double sw = scale * w[i];
    for (uint64_t e = lo; e < hi; ++e) {
      for (uint64_t f = lo; f < hi; ++f) {
        if (b.pos[f] <= b.pos[e]) h(b.pos[e], b.pos[f]) += sw * b.val[e] * b.val[f];
      }
    }
  }
  flush();
  h.diagonal().array() += inv_s2p;
  return h.selfadjointView<Eigen::Lower>();
}

// The restricted posterior's negative log density at t (margins into *m).
double objective(const BlockRows& b, const RowSample& s, const model::Model& model, const Eigen::VectorXd& t,
                 double scale, double inv_s2p, std::vector<double>* m) {
  m->assign(b.rows(), 0.0);
  double u = 0.5 * inv_s2p * t.squaredNorm();
  for (uint64_t i = 0; i < b.rows(); ++i) {
    double mi = 0;
    for (uint64_t e = b.offsets[i]; e < b.offsets[i + 1]; ++e) mi += b.val[e] * t[b.pos[e]];
    (*m)[i] = mi;
    u += scale * model.loss(s.labels[i], mi);
  }
  return u;
}

constexpr int kNewtonIterations = 30;

// head->l = M's lower Cholesky factor; false if M is not positive definite.
bool factor(HeadMetric* head) {
  Eigen::LLT<Eigen::MatrixXd> lm(head->m);
  if (lm.info() != Eigen::Success) return false;
  head->l = lm.matrixL();
  return true;
}

}  // namespace

Status head_at_mode(const RowSample& s, const model::Model& model, const std::vector<double>& h_floor, double scale,
                    double inv_s2p, HeadMetric* head, std::vector<double>* weights, bool* at_mode, std::string* rule) {
  const std::vector<uint32_t> locals = s.locals(head->coords);
  const auto k = static_cast<Eigen::Index>(locals.size());
  const BlockRows b = block_rows(s, locals);
  const double c = model.curvature();
  std::vector<double> m, w(b.rows(), c);
  Eigen::VectorXd t = Eigen::VectorXd::Zero(k), g(k);
  // Newton with backtracking on the restricted posterior (convex: a log-concave likelihood and
  // a Gaussian prior). A flat prior on separable rows has no mode: then the curvature bound.
  double u = objective(b, s, model, t, scale, inv_s2p, &m);
  int it = 0;
  bool converged = false;
  for (; it < kNewtonIterations && !converged; ++it) {
    g = inv_s2p * t;
    for (uint64_t i = 0; i < b.rows(); ++i) {
      const double d1 = scale * model.dloss(s.labels[i], m[i]);
      w[i] = model.d2loss(s.labels[i], m[i]);
      for (uint64_t e = b.offsets[i]; e < b.offsets[i + 1]; ++e) g[b.pos[e]] += d1 * b.val[e];
    }
    Eigen::MatrixXd h = weighted_gram(b, w, k, scale, inv_s2p);
    const double top = std::max(h.diagonal().maxCoeff(), 1e-300);
    for (Eigen::Index i = 0; i < k; ++i) h(i, i) += 1e-12 * top;  // a coordinate in no sampled row, flat prior
    Eigen::LLT<Eigen::MatrixXd> llt(h);
    if (llt.info() != Eigen::Success) break;
    const Eigen::VectorXd step = llt.solve(g);
    const double decrement = g.dot(step);
    if (!std::isfinite(decrement)) break;
    if (decrement <= 1e-10 * (1 + std::abs(u))) {
      converged = true;
      break;
    }
    double a = 1;
    bool moved = false;
    for (int tries = 0; tries < 40; ++tries, a *= 0.5) {
      const Eigen::VectorXd next = t - a * step;
      std::vector<double> mn;
      const double un = objective(b, s, model, next, scale, inv_s2p, &mn);
      if (std::isfinite(un) && un <= u - 0.25 * a * decrement) {
        t = next;
        u = un;
        m = std::move(mn);
        moved = true;
        break;
      }
    }
    if (!moved) {
      converged = true;  // no descent left at rounding's scale: at the mode
      break;
    }
  }
  *at_mode = converged && t.allFinite() && t.norm() < 1e6;
  double w_mean = 0;
  for (uint64_t i = 0; i < b.rows(); ++i) {
    w[i] = *at_mode ? model.d2loss(s.labels[i], m[i]) : c;
    w_mean += w[i];
  }
  w_mean = b.rows() ? w_mean / static_cast<double>(b.rows()) : c;
  Eigen::MatrixXd h = weighted_gram(b, w, k, scale, inv_s2p);
  // The floor: the statistics' curvature (at the bound c) scaled to the sample's mean l''.
  const double share = c > 0 ? w_mean / c : 1.0;
  double top = 0;
  for (Eigen::Index i = 0; i < k; ++i) {
    const double floor = inv_s2p + share * std::max(0.0, h_floor[static_cast<size_t>(i)] - inv_s2p);
    h(i, i) = std::max(h(i, i), floor);
    top = std::max(top, h(i, i));
  }
  for (Eigen::Index i = 0; i < k; ++i) {
    if (!(h(i, i) > 0)) h(i, i) = top > 0 ? top : 1.0;  // no data and a flat prior: any scale
  }
  Eigen::LLT<Eigen::MatrixXd> llt(h);
  for (int tries = 0; llt.info() != Eigen::Success && tries < 8; ++tries) {  // rounding at a flat prior
    h.diagonal().array() += 1e-9 * top * std::pow(10.0, tries);
    llt.compute(h);
  }
  if (llt.info() != Eigen::Success) return Status::internal("the dense metric's curvature is not positive definite");
  head->m = llt.solve(Eigen::MatrixXd::Identity(k, k));
  head->m = 0.5 * (head->m + head->m.transpose());
  if (!factor(head)) return Status::internal("the dense metric is not positive definite");
  *weights = std::move(w);
  *rule = *at_mode ? fmt::format("M = H^-1, H the Hessian of the posterior restricted to the block at its mode on {} "
                                "sampled rows ({} Newton steps; mean l'' there {:.3g}, the bound {:g})",
                                b.rows(), it, w_mean, c)
                  : fmt::format("M = H^-1, H at the curvature bound c = {:g} on {} sampled rows (the restricted "
                                "posterior has no mode Newton found in {} steps)",
                                c, b.rows(), it);
  return Status::ok();
}

// --metric FILE of d x d: M itself, which must be finite, symmetric and positive definite.
Status dense_metric_file(const CoordinateFile& file, const std::string& path, uint64_t dim, HeadMetric* head) {
  const Eigen::Index k = static_cast<Eigen::Index>(dim);
  head->coords.resize(dim);
  for (uint64_t j = 0; j < dim; ++j) head->coords[j] = static_cast<uint32_t>(j);
  head->m.resize(k, k);
  double top = 0;
  for (uint64_t a = 0; a < dim; ++a) {
    for (uint64_t b = 0; b < dim; ++b) {
      const double v = file.at(a, b);
      if (!std::isfinite(v)) {
        return Status::invalid_argument(fmt::format("--metric {}: entry ({}, {}) is not finite", path, a, b));
      }
      head->m(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b)) = v;
      top = std::max(top, std::abs(v));
    }
  }
  for (uint64_t a = 0; a < dim; ++a) {
    for (uint64_t b = 0; b < a; ++b) {
      const double x = head->m(static_cast<Eigen::Index>(a), static_cast<Eigen::Index>(b));
      const double y = head->m(static_cast<Eigen::Index>(b), static_cast<Eigen::Index>(a));
      if (std::abs(x - y) > 1e-9 * top) {
        return Status::invalid_argument(
            fmt::format("--metric {}: not symmetric: entry ({}, {}) is {:g} but ({}, {}) is {:g}", path, a, b, x, b, a, y));
      }
    }
  }
  if (!factor(head)) return Status::invalid_argument("--metric " + path + ": the matrix is not positive definite");
  return Status::ok();
}

}  // namespace agld::sampler
