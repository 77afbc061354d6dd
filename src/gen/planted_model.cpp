// agld gen's planted model (planted_model.hpp): its calibration, a row's draw, and the
// weights CSV.
#include "gen/planted_model.hpp"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string_view>
#include <utility>

namespace agld::gen {
namespace {

constexpr double kMissing = 0.2;   // chance that a numeric feature is absent
constexpr double kLogitSd = 1.25;  // sd of x.w over the pilot; tau is scaled to it
constexpr uint64_t kPilotRows = 20000;

}  // namespace

PlantedModel::PlantedModel(Shape shape, uint64_t seed, bool binary)
    : shape_(std::move(shape)),
      binary_(binary),
      row_key_(stream_key(seed, kRowsTag)),
      pilot_key_(stream_key(seed, kPilotTag)),
      weight_key_(stream_key(seed, kWeightsTag)),
      count_text_(kCountCache) {
  for (uint64_t c = 1; c < kCountCache; ++c) {
    NumericText& t = count_text_[c];
    double value = det_log(static_cast<double>(c) + 1);
    t.len = static_cast<uint8_t>(format_value(value, t.text, &t.value) - t.text);
  }
  set_tau(1);
}

void PlantedModel::calibrate() {
  std::vector<double> z(kPilotRows);
  RowDraw draw;
  set_tau(1);
  for (uint64_t i = 0; i < kPilotRows; ++i) {
    RowRng rng(hash2(pilot_key_, i));
    draw_features(rng, &draw);
    z[i] = draw.dot;
  }
  double mean = std::accumulate(z.begin(), z.end(), 0.0) / static_cast<double>(z.size());
  double ss = 0;
  for (double v : z) ss += (v - mean) * (v - mean);
  double sd = std::sqrt(ss / static_cast<double>(z.size()));
  set_tau(sd > 0 ? kLogitSd / sd : 1);
  intercept_ = 0;
  if (!binary_) return;
  const double target = shape_.info.target_positive_rate;
  double lo = -40, hi = 40;
  for (int it = 0; it < 100 && hi - lo > 1e-13; ++it) {
    double mid = 0.5 * (lo + hi), sum = 0;
    for (double v : z) sum += sigmoid(tau_ * v + mid);
    (sum / static_cast<double>(z.size()) < target ? lo : hi) = mid;
  }
  intercept_ = 0.5 * (lo + hi);
}

void PlantedModel::draw_features(RowRng& rng, RowDraw* d) const {
  char* p = d->text;
  char* const end = d->text + kRowTextCap;
  uint32_t n = 0;
  double dot = 0;
  for (size_t k = 0; k < shape_.numeric.size(); ++k) {
    double u_missing = rng.uniform();
    double u = rng.uniform();
    if (u_missing < kMissing) continue;
    const NumericSpec& spec = shape_.numeric[k];
    double count = 1 + std::floor(spec.scale * (det_exp(-det_log(u) / spec.alpha) - 1));
    auto j = static_cast<uint32_t>(k + 1);
    *p++ = ' ';
    p = std::to_chars(p, end, j).ptr;
    *p++ = ':';
    double value;
    if (count < static_cast<double>(kCountCache)) {
      const NumericText& t = count_text_[static_cast<size_t>(count)];
      std::memcpy(p, t.text, sizeof t.text);  // fixed size: one move; len says what counts
      p += t.len;
      value = t.value;
    } else {
      p = format_value(det_log(count + 1), p, &value);
    }
    d->indices[n++] = j;
    dot += value * numeric_weight_[k];
  }
  for (const Field& f : shape_.fields) {
    // Continuous power law on [1, size + 1) by inverse CDF: x = (1 + u c)^(1 / (1 - s)),
    // and 1 / (1 - s) = -10 for s = 1.1, taken by squaring.
    double y = 1 + rng.uniform() * f.zipf_c;
    double y2 = y * y, y4 = y2 * y2, y8 = y4 * y4;
    double x = 1 / (y8 * y2);
    uint64_t rank = std::min<uint64_t>(static_cast<uint64_t>(x), f.size) - 1;
    auto j = static_cast<uint32_t>(f.begin + f.permute(rank));
    *p++ = ' ';
    p = std::to_chars(p, end, j).ptr;
    *p++ = ':';
    *p++ = '1';
    d->indices[n++] = j;
    dot += rank < f.top_weights.size() ? f.top_weights[rank] : weight(j);
  }
  d->text_len = static_cast<size_t>(p - d->text);
  d->nnz = n;
  d->dot = dot;
}

PlantedModel::RowResult PlantedModel::write_row(uint64_t i, RowDraw* d, char* out, size_t* len) const {
  RowRng rng(hash2(row_key_, i));
  draw_features(rng, d);
  double eta = d->dot + intercept_;
  double u = rng.uniform();
  char* p = out;
  RowResult r{d->nnz, false, 0};
  if (binary_) {
    r.probability = sigmoid(eta);
    r.positive = u < r.probability;
    *p++ = r.positive ? '1' : '0';
  } else {
    double y = eta + inv_normal(u);
    p = std::to_chars(p, out + kMaxLabelChars, y).ptr;
  }
  std::memcpy(p, d->text, d->text_len);
  p += d->text_len;
  *p++ = '\n';
  *len = static_cast<size_t>(p - out);
  return r;
}

char* PlantedModel::format_value(double value, char* p, double* parsed) {
  char* q = std::to_chars(p, p + 16, value, std::chars_format::general, 6).ptr;
  std::from_chars(p, q, *parsed);
  return q;
}

void PlantedModel::set_tau(double tau) {
  tau_ = tau;
  numeric_weight_.resize(shape_.numeric.size());
  for (size_t k = 0; k < numeric_weight_.size(); ++k) numeric_weight_[k] = weight(k + 1);
  for (Field& f : shape_.fields) {
    f.top_weights.resize(std::min<uint64_t>(f.size, kTopCategories));
    for (uint64_t r = 0; r < f.top_weights.size(); ++r) {
      f.top_weights[r] = weight(f.begin + f.permute(r));
    }
  }
}

// "feature,weight", "intercept,b", then "j,w_j" for every feature that occurs.
Status write_weights(const PlantedModel& model, const Occurrence& occ, WritableFile* file,
                     uint64_t* count) {
  std::vector<char> buf(1 << 20);
  size_t len = 0;
  auto flush = [&]() {
    Status s = file->append(ByteSpan(reinterpret_cast<const std::byte*>(buf.data()), len));
    len = 0;
    return s;
  };
  auto put = [&](std::string_view s) {
    std::memcpy(buf.data() + len, s.data(), s.size());
    len += s.size();
  };
  auto put_double = [&](double v) {
    len = static_cast<size_t>(std::to_chars(buf.data() + len, buf.data() + buf.size(), v).ptr -
                              buf.data());
  };
  put("feature,weight\nintercept,");
  put_double(model.intercept());
  put("\n");
  uint64_t n = 0;
  const auto& words = occ.words();
  for (size_t w = 0; w < words.size(); ++w) {
    for (uint64_t bits = words[w]; bits != 0; bits &= bits - 1) {
      uint64_t j = w * 64 + static_cast<uint64_t>(std::countr_zero(bits));
      if (len + 64 > buf.size()) AGLD_RETURN_IF_ERROR(flush());
      len = static_cast<size_t>(std::to_chars(buf.data() + len, buf.data() + buf.size(), j).ptr -
                                buf.data());
      put(",");
      put_double(model.weight(j));
      put("\n");
      ++n;
    }
  }
  AGLD_RETURN_IF_ERROR(flush());
  *count = n;
  return Status::ok();
}

}  // namespace agld::gen
