#include "sampler/preconditioner.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>

#include <fmt/format.h>

#include "agld/feature_stats.hpp"
#include "agld/reader.hpp"
#include "common/mix.hpp"
#include "sampler/coordinate_file.hpp"
#include "sampler/lazy_state.hpp"
#include "sampler/plan.hpp"

namespace agld::sampler {
namespace {

constexpr uint64_t kSampleRows = 65536;         // rows of the power iteration's sample, at most
constexpr uint64_t kSampleNnz = uint64_t{1} << 22;  // and their nonzeros, at most
constexpr int kPowerIterations = 60;
// The estimate comes from a sample and from below (power iteration): eta = 1 / (kMargin lambda).
constexpr double kMargin = 1.25;
// One row's kick in M's metric, times the step, is kept at 1 / kKickMargin at most: a variance-
// reduced estimate carries a row's difference scaled by N/n, and its step is unstable past ~1.
constexpr double kKickMargin = 4.0;
constexpr double kMinLevelRatio = 0.25;  // log2 of the factor between levels, at least

// The visit rule (sampling only): a row's visit moves coordinate j by eta M_j (N/n) c x_ij^2 of
// its distance to the snapshot's, at random iterations, which inflates its stationary
// variance by about half that (docs/samplers.md, "The visit rule"). M_j is lowered until that
// kick is kVisitKick, but never below what leaves j kVisitRelaxations relaxation times
// (eta M_j h_j each an iteration) in the kept iterations: a coordinate whose visits are too
// few to afford it keeps its M.
constexpr double kVisitKick = 0.03;
constexpr double kVisitRelaxations = 200;

// A sample of rows, its columns renumbered 0 .. cols - 1 and its values scaled by sqrt(M_j).
struct Sample {
  std::vector<uint64_t> offsets{0};
  std::vector<uint32_t> local;
  std::vector<double> values;
  std::vector<uint32_t> cols;  // local -> coordinate
  uint64_t rows() const { return offsets.size() - 1; }
};

Status read_sample(const Store& train, const ResolvedSample& r, const std::vector<float>& m, Sample* out,
                   uint64_t* rows_read) {
  const uint64_t want = std::min<uint64_t>(kSampleRows, train.meta().rows);
  ReaderOptions o;
  o.order = "br";  // whole chunks in a random order: a sample of the store, whatever its order
  o.seed = mix64(r.given.seed ^ 0x9e3779b9u);
  o.batch_size = static_cast<size_t>(std::min<uint64_t>(want, 4096));
  o.memory = std::max(reader_min_memory(train, o), std::min<uint64_t>(r.given.memory / 4, uint64_t{256} << 20));
  std::unique_ptr<Reader> reader;
  Status st = Reader::open(train, o, &reader);
  if (!st.is_ok()) return st;
  std::vector<uint32_t> idx;
  std::vector<double> val;
  std::vector<uint64_t> offsets{0};
  const bool intercept = r.given.intercept;
  const uint32_t icpt = static_cast<uint32_t>(r.dim - 1);
  uint64_t got = 0;
  while (got < want && idx.size() < kSampleNnz) {
    Batch b;
    st = reader->next(&b);
    if (!st.is_ok()) return st;
    for (size_t i = 0; i < b.size() && got < want; ++i, ++got) {
      const auto ri = b.row_indices(i);
      const auto rv = b.row_values(i);
      for (size_t e = 0; e < ri.size(); ++e) {
        idx.push_back(ri[e]);
        val.push_back(std::sqrt(static_cast<double>(m[ri[e]])) * rv[e]);
      }
      if (intercept) {
        idx.push_back(icpt);
        val.push_back(std::sqrt(static_cast<double>(m[icpt])));
      }
      offsets.push_back(idx.size());
    }
  }
  *rows_read = got;
  out->cols = idx;
  std::sort(out->cols.begin(), out->cols.end());
  out->cols.erase(std::unique(out->cols.begin(), out->cols.end()), out->cols.end());
  out->local.resize(idx.size());
  for (size_t e = 0; e < idx.size(); ++e) {
    out->local[e] = static_cast<uint32_t>(std::lower_bound(out->cols.begin(), out->cols.end(), idx[e]) - out->cols.begin());
  }
  out->values = std::move(val);
  out->offsets = std::move(offsets);
  return Status::ok();
}

// lambda_max of M^1/2 (c (N/S) X_S' X_S + I/s2p) M^1/2 on the sample's columns, by power
// iteration from a seeded start.
double power_lambda(const Sample& s, const std::vector<float>& m, double c, double scale, double inv_s2p, uint64_t seed) {
  const size_t k = s.cols.size();
  if (k == 0) return 0;
  std::vector<double> v(k), w(k);
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  for (double& x : v) x = n01(rng);
  double lambda = 0;
  for (int it = 0; it < kPowerIterations; ++it) {
    double norm = 0;
    for (double x : v) norm += x * x;
    norm = std::sqrt(norm);
    if (!(norm > 0)) break;
    for (double& x : v) x /= norm;
    for (size_t j = 0; j < k; ++j) w[j] = static_cast<double>(m[s.cols[j]]) * inv_s2p * v[j];
    for (uint64_t i = 0; i < s.rows(); ++i) {
      double dot = 0;
      for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) dot += s.values[e] * v[s.local[e]];
      dot *= c * scale;
      for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) w[s.local[e]] += dot * s.values[e];
    }
    double rq = 0;
    for (size_t j = 0; j < k; ++j) rq += v[j] * w[j];
    lambda = rq;
    v.swap(w);
  }
  return lambda;
}

// The largest kick one row gives a step in M's metric: (N/n) c sum_j M_j x_ij^2 over the
// sample's rows (its values are already scaled by sqrt(M_j)).
double row_kick(const Sample& s, double c, double per_row) {
  double best = 0;
  for (uint64_t i = 0; i < s.rows(); ++i) {
    double sq = 0;
    for (uint64_t e = s.offsets[i]; e < s.offsets[i + 1]; ++e) sq += s.values[e] * s.values[e];
    best = std::max(best, sq);
  }
  return c * per_row * best;
}

// M_j = min(sd_j^2, cap_j) with sd_j column 1 of the .npy at path, cap_j what *m holds (1/q_j,
// or 0 for a coordinate with neither data nor prior: then sd_j^2).
Status apply_metric(const std::string& path, uint64_t dim, std::vector<float>* m) {
  std::unique_ptr<CoordinateFile> file;
  Status st = CoordinateFile::open("--metric", path, dim, 2, &file);
  if (st.is_ok()) st = file->check_column(1, true);
  if (!st.is_ok()) return st;
  for (uint64_t j = 0; j < dim; ++j) {
    const double sd = file->at(j, 1);
    const float var = static_cast<float>(sd * sd);
    float& mj = (*m)[j];
    mj = mj > 0 ? std::min(mj, var) : var;
  }
  file->release(dim);
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
  Preconditioner p;
  // M_j = 1 / max(h_j, q_j); 0 marks a coordinate with neither data nor prior (set below).
  std::vector<float> m(r->dim, 0.0f);
  // The visit rule's bound on eta M_j: max(kVisitKick / q'_j, kVisitRelaxations / (h_j kept)),
  // q'_j the data's part of q_j; infinite for a coordinate in no row (the prior's pull is no visit).
  std::vector<float> visit;
  if (visit_rule) visit.assign(r->dim, std::numeric_limits<float>::infinity());
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
      const double dj = r->given.metric.empty() ? std::max(h, q) : q;
      m[b.first + i] = dj > 0 ? static_cast<float>(1.0 / dj) : 0.0f;
      if (visit_rule && q_data > 0) visit[b.first + i] = visit_bound(h, q_data);
    }
    return Status::ok();
  }, &source);
  if (!st.is_ok()) return st;
  if (r->given.intercept) {  // x = 1 in every row: h = 1/s2p + c N, q = 1/s2p + c N/n
    in_rows(r->dim - 1);
    const double rows_term = r->given.metric.empty() ? std::max(n_rows, per_row) : per_row;
    m[r->dim - 1] = static_cast<float>(1.0 / (inv_s2p + c * rows_term));
    if (visit_rule) visit[r->dim - 1] = visit_bound(inv_s2p + c * n_rows, c * per_row);
  }
  if (!r->given.metric.empty()) {
    st = apply_metric(r->given.metric, r->dim, &m);
    if (!st.is_ok()) return st;
  }
  float m_max = 0, m_min = std::numeric_limits<float>::infinity();
  auto m_range = [&] {  // M's range over the coordinates that have one (M_j > 0)
    m_max = 0;
    m_min = std::numeric_limits<float>::infinity();
    for (float v : m) {
      if (v > 0) {
        m_max = std::max(m_max, v);
        m_min = std::min(m_min, v);
      }
    }
  };
  m_range();
  if (!(m_max > 0)) m_max = m_min = 1;  // no data and a flat prior: nothing to precondition
  for (float& v : m) {
    if (!(v > 0)) v = m_max;  // a flat prior's coordinate in no row: a random walk at the largest step
  }

  Sample sample;
  uint64_t sampled = 0;
  st = read_sample(train, *r, m, &sample, &sampled);
  if (!st.is_ok()) return st;
  const double lambda_data =
      power_lambda(sample, m, c, n_rows / static_cast<double>(std::max<uint64_t>(sampled, 1)), inv_s2p,
                   mix64(r->given.seed ^ 0x70e3u));
  const double lambda = std::max({lambda_data, static_cast<double>(m_max) * inv_s2p, 1e-300});
  const double kick = row_kick(sample, c, per_row);
  if (!step_given) {
    r->step = 1.0 / std::max(kMargin * lambda, kKickMargin * kick);
    r->step_rule = fmt::format("1 / max({:g} lambda, {:g} kick): lambda", kMargin, kKickMargin) +
                   " the largest eigenvalue of the preconditioned Hessian bound M^1/2 (c X'X + I/prior_var) M^1/2, by power iteration on " +
                   std::to_string(sampled) +
                   " sampled rows, kick the largest (N/batch) c sum_j M_j x_ij^2 of a sampled row; " +
                   (r->given.metric.empty()
                        ? "M_j = 1 / max(1/prior_var + c sum_i x_ij^2, 1/prior_var + c (N/batch) max_i x_ij^2)"
                        : "M_j = min(sd_j^2 of --metric, 1 / (1/prior_var + c (N/batch) max_i x_ij^2))") +
                   (visit_rule ? fmt::format(", then lowered by the visit rule to at most max({:g} / (c (N/batch) max_i x_ij^2), "
                                             "{:g} / (c sum_i x_ij^2 kept_iterations)) / eta",
                                             kVisitKick, kVisitRelaxations)
                               : "");
  }
  uint64_t lowered = 0;
  if (visit_rule) {
    // M_j lowered to its bound over eta. The step, lambda and the kick stay those of the
    // statistics' M: lambda and the kick only fall as M does, so the step stays stable, and
    // deriving it again (a larger step for the coordinates the rule leaves alone) measured worse.
    for (uint64_t j = 0; j < r->dim; ++j) {
      const float cap = static_cast<float>(visit[j] / r->step);
      if (cap < m[j]) {
        m[j] = cap;
        ++lowered;
      }
    }
    m_range();
  }

  // Levels a factor 2^delta apart, M rounded down (a smaller step: never less stable).
  constexpr double kTop = static_cast<double>(LazyState::kMaxLevels - 1);
  const double range_log2 = std::log2(static_cast<double>(m_max) / static_cast<double>(m_min));
  const double delta = std::max(kMinLevelRatio, range_log2 / kTop);
  p.level.resize(r->dim);
  uint32_t top = 0;
  for (uint64_t j = 0; j < r->dim; ++j) {
    const double lv = std::ceil(std::log2(static_cast<double>(m_max) / static_cast<double>(m[j])) / delta - 1e-9);
    const uint32_t l = static_cast<uint32_t>(std::clamp(lv, 0.0, kTop));
    p.level[j] = static_cast<uint8_t>(l);
    top = std::max(top, l);
  }
  for (uint32_t l = 0; l <= top; ++l) p.level_m.push_back(m_max * std::exp2(-delta * l));
  // ld's eta M_j against the prior; the underdamped dynamics' h is checked by resolve_dynamics().
  if (!r->underdamped && r->step * p.level_m.front() * inv_s2p >= 1) {
    return Status::invalid_argument("--step times the largest M_j (" + std::to_string(r->step * p.level_m.front()) +
                                    ") must be below --prior-var (the prior alone makes larger steps unstable)");
  }
  r->precondition_levels = p.level_m.size();
  r->precondition_m_min = m_min;
  r->precondition_m_max = m_max;
  r->precondition_lambda = lambda;
  r->precondition_kick = kick;
  r->precondition_visit_lowered = lowered;
  r->setup_rows = sampled + (source == FeatureStatsSource::kComputed ? meta.rows : 0);  // the sample, and a pass if the store has no statistics
  *out = std::move(p);
  return Status::ok();
}

}  // namespace agld::sampler
