#include "sampler/preconditioner.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <span>

#include <fmt/format.h>

#include "agld/feature_stats.hpp"
#include "agld/reader.hpp"
#include "common/mix.hpp"
#include "sampler/coordinate_file.hpp"
#include "sampler/lazy_state.hpp"
#include "sampler/plan.hpp"
#include "sampler/snapshot.hpp"

namespace agld::sampler {
namespace {

constexpr int kPowerIterations = 60;
// The estimate comes from a sample and from below (power iteration): eta = 1 / (kMargin lambda).
constexpr double kMargin = 1.25;
// One row's kick in M's metric, times the step, is kept at 1 / kKickMargin at most: a variance-
// reduced estimate carries a row's difference scaled by N/n, and its step is unstable past ~1.
constexpr double kKickMargin = 4.0;
constexpr double kMinLevelRatio = 0.25;  // log2 of the factor between levels, at least
// ld's step a on the dense block (sampler/dense_head.hpp): exact where the Hessian is the
// block's M^-1, off by about a (1 - lambda) / 2 in variance where it is lambda times that.
// A model whose curvature is constant (linear) has M^-1 from its Hessian: a up to
// kHeadStepExact. Otherwise M^-1 is the Hessian at the restricted mode, and lambda varies
// with l'' over the posterior: a up to kHeadStepMode; or, where no mode was found, M^-1 is at
// the bound c and lambda anywhere in (0, 1]: a up to kHeadStepBounded, 2 % in variance.
constexpr double kHeadStepExact = 0.5;
constexpr double kHeadStepMode = 0.25;
constexpr double kHeadStepBounded = 0.04;
// The most the gradient-noise correction may raise the block's step to, as a row's kick a kick_B
// (DenseHead::retemper): 0.2 ran well on 1M dummy-coded rows, 0.25 diverged there
// (docs/notes/2026-11-29-noise-sums-reset.md).
constexpr double kHeadKickMax = 0.2;

// The visit rule (sampling only): a row's visit moves coordinate j by eta M_j (N/n) c x_ij^2 of
// its distance to the snapshot's, at random iterations, which inflates its stationary
// variance by about half that (docs/samplers.md, "The visit rule"). M_j is lowered until that
// kick is kVisitKick, but never below what leaves j kVisitRelaxations relaxation times
// (eta M_j h_j each an iteration) in the kept iterations: a coordinate whose visits are too
// few to afford it keeps its M.
constexpr double kVisitKick = 0.03;
constexpr double kVisitRelaxations = 200;

// Which coordinates a power iteration runs on: the block's, or the others (the step rule takes
// each apart: a block step and a tail step each below 1 / lambda of its own part keep the whole
// stable, since a positive semidefinite matrix's largest eigenvalue is at most the sum of its
// diagonal blocks').
enum class Part { kHead, kTail };

// lambda_max of F^T (c (N/S) X_S' X_S + I/s2p) F on the sample's columns of `part`, F F^T = M
// (sqrt(M_j) off the block, which the sample's values carry; L on it), by power iteration from
// a seeded start. hl: the block's local columns (empty: no block).
double power_lambda(const RowSample& s, const std::vector<float>& m, const std::vector<uint32_t>& hl,
                    const Eigen::MatrixXd* l, Part part, double c, double scale, double inv_s2p, uint64_t seed) {
  const size_t k = s.cols.size();
  if (k == 0) return 0;
  const auto kh = static_cast<Eigen::Index>(hl.size());
  std::vector<char> in_part;  // empty: every column
  if (kh) {
    in_part.assign(k, part == Part::kTail);
    for (uint32_t j : hl) in_part[j] = part == Part::kHead;
  }
  auto project = [&](std::vector<double>& x) {
    if (in_part.empty()) return;
    for (size_t j = 0; j < k; ++j) {
      if (!in_part[j]) x[j] = 0;
    }
  };
  const bool head = part == Part::kHead && kh > 0;
  Eigen::VectorXd hv(kh), hu(kh);
  std::vector<double> v(k), w(k), u(k);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  for (double& x : v) x = n01(rng);
  project(v);
  double lambda = 0;
  for (int it = 0; it < kPowerIterations; ++it) {
    double norm = 0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    if (!(norm > 0)) break;
    for (double& x : v) x /= norm;
    u = v;  // u = F v: off the block the values carry sqrt(M_j); on it, L v
    if (head) {
      for (Eigen::Index i = 0; i < kh; ++i) hv[i] = v[hl[static_cast<size_t>(i)]];
      hu.noalias() = l->triangularView<Eigen::Lower>() * hv;
      for (Eigen::Index i = 0; i < kh; ++i) u[hl[static_cast<size_t>(i)]] = hu[i];
    }
    for (size_t j = 0; j < k; ++j) w[j] = static_cast<double>(m[s.cols[j]]) * inv_s2p * u[j];  // m = 1 on the block
    for (uint64_t i = 0; i < s.rows(); ++i) {
      double dot = 0;
      for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) dot += s.values[e] * u[s.local[e]];
      dot *= c * scale;
      for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) w[s.local[e]] += dot * s.values[e];
    }
    project(w);
    if (head) {  // F^T on the block: L^T
      for (Eigen::Index i = 0; i < kh; ++i) hv[i] = w[hl[static_cast<size_t>(i)]];
      hu.noalias() = l->transpose().triangularView<Eigen::Upper>() * hv;
      for (Eigen::Index i = 0; i < kh; ++i) w[hl[static_cast<size_t>(i)]] = hu[i];
    }
    double rq = 0;
    for (size_t j = 0; j < k; ++j) rq += v[j] * w[j];
    lambda = rq;
    v.swap(w);
  }
  return lambda;
}

// The largest kick one row gives a step in M's metric, off the block and on it: (N/n) c
// sum_j M_j x_ij^2 over the sample's rows (its values already scaled by sqrt(M_j)), and (N/n)
// w_i x_iB' M_BB x_iB with w_i the row's l'' where the block's M came from (weights; c without).
std::pair<double, double> row_kicks(const RowSample& s, const std::vector<uint32_t>& hl, const HeadMetric* head,
                                    const std::vector<double>& weights, double c, double per_row) {
  const std::vector<int32_t> pos = s.positions(hl);  // local column -> block position
  std::vector<std::pair<int32_t, double>> in_head;
  double tail = 0, block = 0;
  for (uint64_t i = 0; i < s.rows(); ++i) {
    double sq = 0, sqh = 0;
    in_head.clear();
    for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) {
      if (pos[s.local[e]] >= 0) {
        in_head.emplace_back(pos[s.local[e]], s.values[e]);
      } else {
        sq += s.values[e] * s.values[e];
      }
    }
    for (const auto& [a, xa] : in_head) {
      for (const auto& [b, xb] : in_head) sqh += xa * head->m(a, b) * xb;
    }
    tail = std::max(tail, sq);
    block = std::max(block, (weights.empty() ? c : weights[i]) * sqh);
  }
  return {c * per_row * tail, per_row * block};
}

// The kick cap t: the largest at which every sampled row's kick off the block, each coordinate's
// part lowered to t / u_j of itself where its unit kick u_j = M_j q'_j is above t (M_j capped at
// t / q'_j), is at most `target`. u: by local column, 0 on the block. Infinite where the
// uncapped kick is within target already.
double kick_cap(const RowSample& s, const std::vector<double>& u, double c, double per_row, double target) {
  auto worst = [&](double t) {
    double most = 0;
    for (uint64_t i = 0; i < s.rows(); ++i) {
      double k = 0;
      for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) {
        const double ue = u[s.local[e]];
        if (ue > 0) k += s.values[e] * s.values[e] * std::min(1.0, t / ue);
      }
      most = std::max(most, k);
    }
    return c * per_row * most;
  };
  if (u.empty()) return std::numeric_limits<double>::infinity();
  const double u_max = *std::max_element(u.begin(), u.end());
  if (!(u_max > 0) || worst(u_max) <= target) return std::numeric_limits<double>::infinity();
  double lo = 0, hi = u_max;  // worst(lo) <= target < worst(hi)
  for (int it = 0; it < 40; ++it) {
    const double mid = 0.5 * (lo + hi);
    (worst(mid) <= target ? lo : hi) = mid;
  }
  return lo;
}

// M_j = min(sd_j^2, cap_j) with sd_j column 1 of the .npy at path, cap_j what *m holds (1/q_j,
// or 0 for a coordinate with neither data nor prior: then sd_j^2).
Status apply_metric(const CoordinateFile& file, uint64_t dim, std::vector<float>* m) {
  for (uint64_t j = 0; j < dim; ++j) {
    const double sd = file.at(j, 1);
    const float var = static_cast<float>(sd * sd);
    float& mj = (*m)[j];
    mj = mj > 0 ? std::min(mj, var) : var;
  }
  file.release(dim);
  return Status::ok();
}

}  // namespace

uint64_t preconditioner_rows(const Store& train) {
  // The statistics are read from the store's record, or computed in a pass over it.
  return std::min<uint64_t>(kSampleRows, train.meta().rows) + (has_feature_stats(train) ? 0 : train.meta().rows);
}

std::string feature_stats_note(const Store& train) {
  return "note: " + train.path() +
         " records no per-feature statistics (an older agld converted it): --precondition diag computes them "
         "in a pass over it, counted in the run's passes; converting it again saves that pass";
}

Status make_preconditioner(const Store& train, const model::Model& model, bool step_given, bool sampling,
                           ResolvedSample* r, Preconditioner* out) {
  const StoreMeta& meta = train.meta();
  const double n_rows = static_cast<double>(meta.rows);
  const double c = model.curvature();
  const double inv_s2p = std::isinf(r->given.prior_var) ? 0.0 : 1.0 / r->given.prior_var;
  const double per_row = n_rows / static_cast<double>(r->batch);  // N / n
  // The visit rule's relaxations are counted over the kept iterations.
  const double kept = static_cast<double>(r->iterations > r->burn_in ? r->iterations - r->burn_in : 1);
  // With a given --step the user sets eta M_j: the rule (a bound on it) would override the step.
  const bool visit_rule = sampling && !step_given;
  MetricRequest request;
  AGLD_RETURN_IF_ERROR(parse_metric(r->given.metric, r->dim, &request));
  const bool diag_file = request.file && !request.dense_file;
  // The dense block's size: K^2 (its step's cost) at most the iteration's gradient (batch x
  // nonzeros a row), kMaxHead at most; every coordinate when that is d (or asked for).
  const double row_nnz = (meta.rows ? static_cast<double>(meta.nnz) / n_rows : 0.0) + (r->given.intercept ? 1 : 0);
  const uint64_t k_cost = static_cast<uint64_t>(std::sqrt(static_cast<double>(r->batch) * row_nnz));
  uint64_t k_head = 0;
  std::string head_rule;
  if (request.dense_file || request.kind == MetricRequest::kDense) {
    k_head = r->dim;
    head_rule = request.dense_file ? "M from --metric's d x d file" : "every coordinate (--metric dense)";
  } else if (request.kind == MetricRequest::kBlock || request.kind == MetricRequest::kAuto) {
    k_head = std::min<uint64_t>({r->dim, kMaxHead, k_cost});
    head_rule = fmt::format(
        "the intercept and the most frequent features, K = min(d, {}, sqrt(batch x nonzeros a row) = {})", kMaxHead,
        k_cost);
    if (request.kind == MetricRequest::kAuto && k_head < r->dim) {
      // auto: dense when every coordinate fits; else the block (measured: docs/samplers.md, "Defaults").
      head_rule = "auto: " + head_rule;
    }
  }
  const SnapshotInfo& snapshot = *find_snapshot(r->snapshot);
  if (k_head > 0 && !snapshot.full_batch && snapshot.refresh_rows != RefreshRows::kFullPass) {
    // Measured (docs/notes/2026-11-28-dense-metric.md): the block mixes within a refresh period,
    // so it follows ptu+'s subsampled aggregate's error (sds 2-3.5 times the exact), and none's
    // unreduced gradient noise (17-60 % wide at the block's step).
    if (request.kind != MetricRequest::kAuto) {
      return Status::invalid_argument(fmt::format(
          "--metric {}: a dense metric needs a snapshot whose aggregate is exact (a full pass: ptu, ppu, tmu; or full); "
          "{} takes --metric diag",
          r->given.metric, r->snapshot));
    }
    k_head = 0;
    head_rule = "auto: diagonal (the " + r->snapshot + " snapshot takes no dense metric)";
  }
  Preconditioner p;
  r->metric_rule = head_rule;
  // The head: the intercept first, then the features with the most rows (ties: the lower
  // index), with each one's exact curvature h_j for the block's diagonal; or a d x d file's M,
  // checked here, before any row is read.
  auto head = std::make_shared<HeadMetric>();
  if (request.dense_file) AGLD_RETURN_IF_ERROR(dense_metric_file(*request.file, r->given.metric, r->dim, head.get()));
  std::vector<double> h_exact;
  using Ranked = std::pair<uint64_t, uint32_t>;  // (rows, -index order via comparator)
  auto worse = [](const Ranked& a, const Ranked& b) { return a.first > b.first || (a.first == b.first && a.second < b.second); };
  std::vector<Ranked> heap;  // a min-heap of the best features by `worse`
  const uint64_t k_features = k_head - (k_head > 0 && r->given.intercept ? 1 : 0);
  // M_j = 1 / max(h_j, q_j); 0 marks a coordinate with neither data nor prior (set below).
  std::vector<float> m(r->dim, 0.0f);
  // The visit rule's bound on eta M_j: max(kVisitKick / q'_j, kVisitRelaxations / (h_j kept)),
  // q'_j the data's part of q_j; infinite for a coordinate in no row (the prior's pull is no visit).
  std::vector<float> visit;
  if (visit_rule) visit.assign(r->dim, std::numeric_limits<float>::infinity());
  // q'_j, the data's part of q_j, for the kick cap (the default step's).
  const bool cap_kicks = !step_given;
  std::vector<float> q_data_of;
  if (cap_kicks) q_data_of.assign(r->dim, 0.0f);
  auto visit_bound = [&](double h, double q_data) {
    return static_cast<float>(std::max(kVisitKick / q_data, kVisitRelaxations / (h * kept)));
  };
  p.in_rows.assign((r->dim + 63) / 64, 0);
  auto in_rows = [&p](uint64_t j) { p.in_rows[j / 64] |= uint64_t{1} << (j % 64); };
  FeatureStatsSource source = FeatureStatsSource::kStored;
  Status st = scan_feature_stats(train, [&](const FeatureStatsBlock& b) {
    for (size_t i = 0; i < b.count.size(); ++i) {
      if (b.count[i] > 0) in_rows(b.first + i);
      const double h = inv_s2p + c * b.sum_sq[i];
      const double q_data = c * per_row * b.max_sq[i];
      const double q = inv_s2p + q_data;
      // With a metric file, q alone: the file's M_j is capped by it (apply_metric).
      const double dj = diag_file ? q : std::max(h, q);
      m[b.first + i] = dj > 0 ? static_cast<float>(1.0 / dj) : 0.0f;
      if (visit_rule && q_data > 0) visit[b.first + i] = visit_bound(h, q_data);
      if (cap_kicks) q_data_of[b.first + i] = static_cast<float>(q_data);
      if (k_features > 0 && k_head < r->dim) {
        const Ranked e{b.count[i], static_cast<uint32_t>(b.first + i)};
        if (heap.size() < k_features) {
          heap.push_back(e);
          std::push_heap(heap.begin(), heap.end(), worse);
        } else if (worse(e, heap.front())) {
          std::pop_heap(heap.begin(), heap.end(), worse);
          heap.back() = e;
          std::push_heap(heap.begin(), heap.end(), worse);
        }
      }
    }
    return Status::ok();
  }, &source);
  if (!st.is_ok()) return st;
  if (r->given.intercept) {  // x = 1 in every row: h = 1/s2p + c N, q = 1/s2p + c N/n
    in_rows(r->dim - 1);
    const double rows_term = diag_file ? per_row : std::max(n_rows, per_row);
    m[r->dim - 1] = static_cast<float>(1.0 / (inv_s2p + c * rows_term));
    if (visit_rule) visit[r->dim - 1] = visit_bound(inv_s2p + c * n_rows, c * per_row);
    if (cap_kicks) q_data_of[r->dim - 1] = static_cast<float>(c * per_row);
  }
  if (diag_file) {
    st = apply_metric(*request.file, r->dim, &m);
    if (!st.is_ok()) return st;
  }
  if (request.dense_file) {
    // coords and M from the file
  } else if (k_head == r->dim) {
    for (uint64_t j = 0; j < r->dim; ++j) head->coords.push_back(static_cast<uint32_t>(j));
    if (r->given.intercept) std::rotate(head->coords.begin(), head->coords.end() - 1, head->coords.end());
  } else if (k_head > 0) {
    if (r->given.intercept) head->coords.push_back(static_cast<uint32_t>(r->dim - 1));
    std::sort(heap.begin(), heap.end(), worse);
    for (const Ranked& e : heap) head->coords.push_back(e.second);
  }
  std::vector<bool> is_head(k_head > 0 ? r->dim : 0, false);
  for (uint32_t j : head->coords) is_head[j] = true;
  auto in_head = [&](uint64_t j) { return !is_head.empty() && is_head[j]; };
  if (k_head > 0) {
    // h_j for the block's diagonal, from M's definition before anything lowers it (1 / M_j
    // is max(h_j, q_j) >= h_j: the larger, which keeps one row's kick bounded).
    for (uint32_t j : head->coords) {
      h_exact.push_back(m[j] > 0 ? 1.0 / static_cast<double>(m[j]) : 0.0);
      m[j] = 1.0f;  // the sample's values on the head stay unscaled
      if (visit_rule) visit[j] = std::numeric_limits<float>::infinity();
    }
  }
  float m_max = 0, m_min = std::numeric_limits<float>::infinity();
  auto m_range = [&] {  // M's range over the coordinates off the head that have one (M_j > 0)
    m_max = 0;
    m_min = std::numeric_limits<float>::infinity();
    for (uint64_t j = 0; j < m.size(); ++j) {
      if (m[j] > 0 && !in_head(j)) {
        m_max = std::max(m_max, m[j]);
        m_min = std::min(m_min, m[j]);
      }
    }
  };
  m_range();
  if (!(m_max > 0)) m_max = m_min = 1;  // no data and a flat prior: nothing to precondition
  for (float& v : m) {
    if (!(v > 0)) v = m_max;  // a flat prior's coordinate in no row: a random walk at the largest step
  }

  RowSample sample;
  uint64_t sampled = 0;
  st = read_row_sample(train, *r, m, head->coords, &sample, &sampled);
  if (!st.is_ok()) return st;
  const double scale = n_rows / static_cast<double>(std::max<uint64_t>(sampled, 1));
  const bool tail = k_head < r->dim;  // coordinates off the block
  std::vector<double> weights;        // each sampled row's l'' where the block's M came from
  std::vector<uint32_t> hl;           // the block's local columns in the sample
  std::string curvature_rule;
  bool at_mode = false;
  if (k_head > 0) {
    if (request.dense_file) {
      curvature_rule = "M from the file";
    } else {
      st = head_at_mode(sample, model, h_exact, scale, inv_s2p, head.get(), &weights, &at_mode, &curvature_rule);
      if (!st.is_ok()) return st;
    }
    hl = sample.locals(head->coords);
  }
  const uint64_t power_seed = mix64(r->given.seed ^ 0x70e3u);
  const double lambda_data = power_lambda(sample, m, hl, nullptr, Part::kTail, c, scale, inv_s2p, power_seed);
  const double lambda = std::max({lambda_data, static_cast<double>(m_max) * inv_s2p, 1e-300});
  const auto [kick, kick_head] = row_kicks(sample, hl, head.get(), weights, c, per_row);
  // The kick cap: where one row's kick would hold the step below 1 / (kMargin lambda), the
  // coordinates with the largest unit kicks u_j = M_j q'_j (rare features: M_j = 1/q_j, u_j
  // near 1) are lowered to t / q'_j instead of every coordinate's step, t the largest at which
  // the worst sampled row's kick fits that step. A row's kick is then still within
  // 1 / (kKickMargin eta); the common coordinates (u_j small: M_j = 1/h_j, h_j >> q_j) keep
  // their M and take the step lambda allows.
  double cap_t = 0, kick_step = kick;  // the cap (0: none), and the kick the step is held to
  uint64_t capped = 0;
  if (cap_kicks && tail && kKickMargin * kick > kMargin * lambda) {
    std::vector<double> u(sample.cols.size(), 0.0);
    for (size_t k = 0; k < sample.cols.size(); ++k) {
      const uint32_t j = sample.cols[k];
      if (!in_head(j)) u[k] = static_cast<double>(m[j]) * q_data_of[j];
    }
    const double t = kick_cap(sample, u, c, per_row, kMargin * lambda / kKickMargin);
    if (std::isfinite(t) && t > 0) {
      cap_t = t;
      for (uint64_t j = 0; j < r->dim; ++j) {
        if (in_head(j) || !(q_data_of[j] > 0)) continue;
        const double mj = t / q_data_of[j];
        if (mj < m[j]) {
          m[j] = static_cast<float>(mj);
          ++capped;
        }
      }
      kick_step = kMargin * lambda / kKickMargin;
      m_range();
    }
  }
  q_data_of = {};
  if (!step_given) {
    r->step = 1.0 / std::max(kMargin * lambda, kKickMargin * kick_step);
    r->step_rule = fmt::format("1 / max({:g} lambda, {:g} kick): lambda", kMargin, kKickMargin) +
                   " the largest eigenvalue of the preconditioned Hessian bound M^1/2 (c X'X + I/prior_var) M^1/2, by power iteration on " +
                   std::to_string(sampled) +
                   " sampled rows, kick the largest (N/batch) c sum_j M_j x_ij^2 of a sampled row; " +
                   (diag_file ? "M_j = min(sd_j^2 of --metric, 1 / (1/prior_var + c (N/batch) max_i x_ij^2))"
                              : "M_j = 1 / max(1/prior_var + c sum_i x_ij^2, 1/prior_var + c (N/batch) max_i x_ij^2)") +
                   (k_head > 0 ? " (off the dense block: its own step below)" : "") +
                   (visit_rule ? fmt::format(", then lowered by the visit rule to at most max({:g} / (c (N/batch) max_i x_ij^2), "
                                             "{:g} / (c sum_i x_ij^2 kept_iterations)) / eta",
                                             kVisitKick, kVisitRelaxations)
                               : "") +
                   (capped ? fmt::format("; where that kick would bind, each M_j is first capped at t / (c (N/batch) "
                                         "max_i x_ij^2), t = {:g} the largest at which every sampled row's kick is "
                                         "within 1 / ({:g} eta) ({} coordinates capped)",
                                         cap_t, kKickMargin, capped)
                           : "");
  }
  if (k_head > 0) {
    // The block's own step: below 1 / (kMargin lambda_B) at the curvature bound (stable wherever
    // the chains are), kVisitKick / kick_B (a row's variance-reduced kick, at the rows' l''), and
    // the bias cap of how M was found.
    const double lambda_head =
        std::max(power_lambda(sample, m, hl, &head->l, Part::kHead, c, scale, inv_s2p, mix64(power_seed ^ 0xb10c)), 1e-300);
    const double cap = model.constant_curvature() ? kHeadStepExact : at_mode ? kHeadStepMode : kHeadStepBounded;
    const std::string cap_why = model.constant_curvature() ? "the model's curvature is constant: exact there"
                                : at_mode ? "l'' varies over the posterior around the mode's"
                                          : "M at the curvature bound: 2 % in variance at most";
    if (step_given) {
      if (r->step > 1) {
        return Status::invalid_argument(fmt::format(
            "--step {:g}: the dense block's step is at most 1 (--metric {} puts {} coordinates in it; --metric diag has none)",
            r->step, r->given.metric.empty() ? "auto" : r->given.metric, k_head));
      }
      head->ld_step = head->max_step = r->step;
    } else {
      const double stable = std::min(1.0 / (kMargin * lambda_head), cap), kick_b = std::max(kick_head, 1e-300);
      head->ld_step = std::min(stable, kVisitKick / kick_b);
      const SnapshotInfo* snap = find_snapshot(r->snapshot);
      const bool raise = snap && !snap->row_memory;
      head->max_step = raise ? std::max(head->ld_step, std::min(stable, kHeadKickMax / kick_b)) : head->ld_step;
    }
    r->metric_rule += "; " + curvature_rule;
    r->metric_rule += step_given ? fmt::format("; its step a is --step's, {:g}", head->ld_step)
                                 : fmt::format("; its step a = min(1 / ({:g} lambda_B), {:g}, {:g} / kick_B) = {:g} "
                                               "(lambda_B {:.4g}, kick_B {:.4g}; the cap: {}){}",
                                               kMargin, cap, kVisitKick, head->ld_step, lambda_head, kick_head, cap_why,
                                               head->max_step > head->ld_step
                                                   ? fmt::format(", raised with the gradient-noise correction to at "
                                                                 "most min(1 / ({:g} lambda_B), {:g}, {:g} / kick_B) "
                                                                 "= {:g} while the block's measured gradient noise "
                                                                 "stands for at most {:g} of its noise",
                                                                 kMargin, cap, kHeadKickMax, head->max_step,
                                                                 kBlockNoiseTarget)
                                                   : std::string());
    if (r->underdamped) {
      r->metric_rule += "; the underdamped dynamics step it by the exact critically damped transition of a unit Gaussian over time a";
    }
    if (!tail && !step_given && !r->underdamped) {
      r->step = head->ld_step;
      r->step_rule = "the dense block's (every coordinate): " + r->metric_rule;
    }
  }
  uint64_t lowered = 0;
  if (visit_rule) {
    // M_j lowered to its bound over eta. The step, lambda and the kick stay those of the
    // statistics' M: lambda and the kick only fall as M does, so the step stays stable, and
    // deriving it again (a larger step for the coordinates the rule leaves alone) measured worse.
    for (uint64_t j = 0; j < r->dim; ++j) {
      const float cap = static_cast<float>(visit[j] / r->step);
      if (cap < m[j] && !in_head(j)) {
        m[j] = cap;
        ++lowered;
      }
    }
    m_range();
  }

  // Levels a factor 2^delta apart, M rounded down (a smaller step: never less stable); the
  // head's coordinates at the level after them, which never moves on its own.
  const double kTop = static_cast<double>(LazyState::kMaxLevels - (k_head > 0 ? 2 : 1));
  const double range_log2 = std::log2(static_cast<double>(m_max) / static_cast<double>(m_min));
  const double delta = std::max(kMinLevelRatio, range_log2 / kTop);
  p.level.resize(r->dim);
  uint32_t top = 0;
  for (uint64_t j = 0; j < r->dim; ++j) {
    if (in_head(j)) continue;
    const double lv = std::ceil(std::log2(static_cast<double>(m_max) / static_cast<double>(m[j])) / delta - 1e-9);
    const uint32_t l = static_cast<uint32_t>(std::clamp(lv, 0.0, kTop));
    p.level[j] = static_cast<uint8_t>(l);
    top = std::max(top, l);
  }
  for (uint32_t l = 0; l <= top; ++l) p.level_m.push_back(m_max * std::exp2(-delta * l));
  for (uint32_t j : head->coords) p.level[j] = static_cast<uint8_t>(p.level_m.size());
  // ld's eta M_j against the prior; the underdamped dynamics' h is checked by resolve_dynamics().
  if (tail && !r->underdamped && r->step * p.level_m.front() * inv_s2p >= 1) {
    return Status::invalid_argument("--step times the largest M_j (" + std::to_string(r->step * p.level_m.front()) +
                                    ") must be below --prior-var (the prior alone makes larger steps unstable)");
  }
  r->precondition_levels = p.level_m.size();
  r->precondition_m_min = m_min;
  r->precondition_m_max = m_max;
  r->precondition_lambda = lambda;
  r->precondition_kick = kick;
  r->precondition_visit_lowered = lowered;
  r->precondition_kick_cap = cap_t;
  r->precondition_kick_capped = capped;
  r->metric = k_head == 0 ? "diag" : k_head == r->dim ? "dense" : "block";
  r->metric_block = k_head;
  if (k_head == 0 && r->metric_rule.empty()) r->metric_rule = "a diagonal M";
  r->setup_rows = sampled + (source == FeatureStatsSource::kComputed ? meta.rows : 0);  // the sample, and a pass if the store has no statistics
  if (k_head > 0) p.head = std::move(head);
  *out = std::move(p);
  return Status::ok();
}

}  // namespace agld::sampler
