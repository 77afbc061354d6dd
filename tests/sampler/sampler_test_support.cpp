#include "sampler_test_support.hpp"

#include "agld/convert.hpp"
#include "agld/reader.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/snapshot.hpp"

#include <Eigen/Dense>
#include <algorithm>

namespace agld::test {

StoreMeta sampler_meta(const SparseRows& rows, uint64_t features, bool binary) {
  StoreMeta meta;
  meta.features = features;
  meta.label_kind = binary ? LabelKind::kBinary : LabelKind::kReal;
  // The tests' rows are independent draws, in no order with a trend: say so, as a shuffled
  // conversion would (the default method then reads them cyclically, as on a converted store).
  meta.options.shuffle = true;
  if (!binary && rows.rows() > 0) {
    const auto [lo, hi] = std::minmax_element(rows.labels.begin(), rows.labels.end());
    meta.label_min = *lo;
    meta.label_max = *hi;
  }
  for (size_t r = 0; r < rows.rows(); ++r) {
    double sq = 0;
    for (float v : rows.row_values(r)) sq += double{v} * v;
    meta.row_sq_norm_sum += sq;
    meta.row_sq_norm_max = std::max(meta.row_sq_norm_max, sq);
  }
  return meta;
}

std::unique_ptr<Store> make_store(const std::string& path, const SparseRows& rows, uint64_t features,
                                  bool binary, size_t chunk_rows, bool stats, const std::vector<FeatureField>& fields) {
  StoreMeta meta = sampler_meta(rows, features, binary);
  meta.fields = fields;
  ChunkCodec codec;
  if (stats) {
    EXPECT_TRUE(write_store_with_stats(path, rows, chunk_rows, codec, meta, 64).is_ok());
  } else {
    EXPECT_TRUE(write_store(path, rows, chunk_rows, codec, meta).is_ok());
  }
  std::unique_ptr<Store> store;
  Status st = Store::open(path, &store);
  EXPECT_TRUE(st.is_ok()) << st.message();
  return store;
}

SparseRows dense_binary_rows(uint64_t seed, size_t n, uint32_t d, double weight) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  SparseRows rows;
  std::vector<uint32_t> idx(d);
  std::vector<float> val(d);
  for (size_t r = 0; r < n; ++r) {
    double m = 0;
    for (uint32_t j = 0; j < d; ++j) {
      idx[j] = j;
      val[j] = static_cast<float>(n01(rng));
      m += weight * val[j];
    }
    rows.add_row(m + n01(rng) > 0 ? 1.0 : -1.0, idx, val);
  }
  return rows;
}

ExactLinear exact_linear(uint64_t seed, size_t n, const std::vector<double>& beta, double noise_var,
                         double presence) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::bernoulli_distribution present(presence);
  const auto d = static_cast<Eigen::Index>(beta.size());
  ExactLinear p;
  Eigen::MatrixXd x = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), d);
  Eigen::VectorXd y(static_cast<Eigen::Index>(n));
  for (size_t r = 0; r < n; ++r) {
    const auto i = static_cast<Eigen::Index>(r);
    std::vector<uint32_t> idx;
    std::vector<float> val;
    double m = 0;
    for (uint32_t j = 0; j < beta.size(); ++j) {
      if (!present(rng)) continue;
      const float v = static_cast<float>(n01(rng));
      idx.push_back(j);
      val.push_back(v);
      x(i, j) = v;
      m += beta[j] * v;
    }
    y(i) = m + std::sqrt(noise_var) * n01(rng);
    p.rows.add_row(y(i), idx, val);
  }
  const Eigen::MatrixXd precision = x.transpose() * x / noise_var + Eigen::MatrixXd::Identity(d, d);
  const Eigen::MatrixXd cov = precision.inverse();
  p.mean = cov * x.transpose() * y / noise_var;
  p.sd = cov.diagonal().array().sqrt();
  p.trace = cov.trace();
  p.lambda_max = Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd>(precision).eigenvalues().maxCoeff();
  return p;
}

std::unique_ptr<Store> convert_to_store(const std::string& svm, const std::string& path) {
  ConvertOptions co;
  co.inputs = {svm};
  co.output = path;
  ConvertReport rep;
  Status st = convert(co, &rep);
  EXPECT_TRUE(st.is_ok()) << svm << ": " << st.message();
  std::unique_ptr<Store> store;
  if (st.is_ok()) st = Store::open(path, &store);
  EXPECT_TRUE(st.is_ok()) << path << ": " << st.message();
  return store;
}

std::unique_ptr<Store> dummy_logistic_store(const std::string& path) {
  return convert_to_store(std::string(AGLD_SOURCE_DIR) + "/datasets/dummy_logistic.svm", path);
}

SampleOptions dummy_logistic_options(uint64_t seed) {
  SampleOptions o;
  o.model = "logistic";
  o.intercept = true;
  o.seed = seed;
  o.evaluations = 0;
  o.memory = uint64_t{1} << 30;
  o.until_mixed = "off";  // one stage of the default length (the stages: stages_test.cpp)
  return o;
}

StanReference read_heart_scale_reference() { return read_reference("heart_scale.ref.csv"); }

StanReference read_reference(const std::string& name) {
  StanReference r;
  std::ifstream in(std::string(AGLD_SOURCE_DIR) + "/datasets/" + name);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::stringstream ss(line);
    std::string coord, mean, sd;
    std::getline(ss, coord, ',');
    std::getline(ss, mean, ',');
    std::getline(ss, sd, ',');
    r.mean.push_back(std::stod(mean));
    r.sd.push_back(std::stod(sd));
  }
  return r;
}

Summary summarize(const std::vector<std::vector<double>>& draws, size_t t, size_t batches) {
  Summary s;
  const size_t n = draws.size();
  if (n < 2 * batches) return s;
  double sum = 0, sq = 0;
  for (const auto& d : draws) sum += d[t];
  s.mean = sum / static_cast<double>(n);
  for (const auto& d : draws) sq += (d[t] - s.mean) * (d[t] - s.mean);
  s.sd = std::sqrt(sq / static_cast<double>(n - 1));
  const size_t per = n / batches;
  double bv = 0;
  for (size_t b = 0; b < batches; ++b) {
    double m = 0;
    for (size_t i = b * per; i < (b + 1) * per; ++i) m += draws[i][t];
    m /= static_cast<double>(per);
    bv += (m - s.mean) * (m - s.mean);
  }
  s.mcse = std::sqrt(bv / static_cast<double>(batches - 1) / static_cast<double>(batches));
  return s;
}

std::string MethodParts::method() const {
  return snapshot + "-" + access + (dynamics == sampler::default_dynamics().name ? "" : "-" + dynamics);
}

std::string MethodParts::test_name() const {
  return (snapshot == "ptu+" ? std::string("ptuplus") : snapshot) + "_" + access + "_" + dynamics;
}

void PrintTo(const MethodParts& m, std::ostream* os) { *os << m.method(); }

namespace {
// Every case of the cross product, each marked whether method_pairs takes it.
std::vector<std::pair<MethodParts, bool>> cross_product() {
  const auto snapshots = sampler::registered_snapshots();
  const auto dynamics = sampler::registered_dynamics();
  const std::vector<ReaderOrderInfo> orders = reader_orders();
  std::vector<std::pair<MethodParts, bool>> out;
  for (size_t d = 0; d < dynamics.size(); ++d) {
    for (size_t s = 0; s < snapshots.size(); ++s) {
      for (size_t a = 0; a < orders.size(); ++a) {
        // The first dynamics: every snapshot x order. Another: each snapshot with one order,
        // turning with the snapshot (and offset by the dynamics), which covers every order when
        // there are at least as many snapshots as orders (else the snapshots are taken again).
        bool pair = d == 0;
        for (size_t i = s; !pair && i < std::max(snapshots.size(), orders.size()); i += snapshots.size()) {
          pair = (i + d) % orders.size() == a;
        }
        out.push_back({{std::string(snapshots[s].name), orders[a].name, std::string(dynamics[d].name)}, pair});
      }
    }
  }
  return out;
}
}  // namespace

std::vector<MethodParts> method_pairs() {
  std::vector<MethodParts> out;
  for (auto& [m, pair] : cross_product()) {
    if (pair) out.push_back(m);
  }
  return out;
}

std::vector<MethodParts> method_each() {
  const auto snapshots = sampler::registered_snapshots();
  const auto dynamics = sampler::registered_dynamics();
  const std::vector<ReaderOrderInfo> orders = reader_orders();
  std::vector<MethodParts> out;
  for (size_t i = 0; i < std::max({snapshots.size(), orders.size(), dynamics.size()}); ++i) {
    out.push_back({std::string(snapshots[i % snapshots.size()].name), orders[i % orders.size()].name,
                   std::string(dynamics[i % dynamics.size()].name)});
  }
  return out;
}

std::vector<MethodParts> method_rest() {
  std::vector<MethodParts> out;
  for (auto& [m, pair] : cross_product()) {
    if (!pair) out.push_back(m);
  }
  return out;
}

}  // namespace agld::test
