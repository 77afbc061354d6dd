// agld gen: synthetic LIBSVM rows from a planted GLM (docs/gen.md).
//
// Rows are drawn in blocks by a oneTBB pipeline: a serial input stage hands out block
// numbers, a parallel stage draws and formats the rows of a block into its own buffer, and
// a serial in-order stage writes the buffers (through zstd for .zst). Each row draws from a
// splitmix64 stream keyed by (seed, row index), so the bytes do not depend on the blocks'
// schedule or the number of threads.
#include "agld/gen.hpp"

#include <oneapi/tbb/global_control.h>
#include <oneapi/tbb/parallel_pipeline.h>
#include <oneapi/tbb/task_arena.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <numeric>
#include <string_view>
#include <vector>

#include "agld/file.hpp"
#include "common/mix.hpp"

namespace agld {
namespace {

// ---------------------------------------------------------------------------------------
// Counter-based randomness

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ULL;


// Independent keys for the streams derived from one seed. Persistent: changing a tag
// changes every generated file.
constexpr uint64_t kRowsTag = 0x524f5753;     // "ROWS"
constexpr uint64_t kPilotTag = 0x50494c54;    // "PILT"
constexpr uint64_t kWeightsTag = 0x57474854;  // "WGHT"

inline uint64_t stream_key(uint64_t seed, uint64_t tag) {
  return fmix64(fmix64(seed + kGolden) ^ (tag * kGolden));
}
inline uint64_t hash2(uint64_t key, uint64_t i) { return fmix64(key ^ fmix64((i + 1) * kGolden)); }

// (0, 1), never 0 or 1, from the top 53 bits.
inline double to_unit(uint64_t x) { return (static_cast<double>(x >> 11) + 0.5) * 0x1.0p-53; }

// splitmix64: one stream per row, started at hash2(key, row).
class RowRng {
 public:
  explicit RowRng(uint64_t state) : s_(state) {}
  uint64_t next() {
    s_ += kGolden;
    return fmix64(s_);
  }
  double uniform() { return to_unit(next()); }

 private:
  uint64_t s_;
};

// exp and log from IEEE double arithmetic alone, so that the output does not depend on
// which libm (or which of its CPU-specific variants) the binary runs with: +, -, *, /,
// sqrt, floor, frexp and ldexp are exactly rounded everywhere; libm's exp, log and pow
// are not, and one differing last bit in the pilot would change tau and every weight.
// Accurate to a few units in the last place.
constexpr double kLn2Hi = 6.93147180369123816490e-01;  // ln 2 to 32 bits: k kLn2Hi is exact
constexpr double kLn2Lo = 1.90821492927058770002e-10;  // ln 2 - kLn2Hi

// Series coefficients, computed (and rounded) once, at compile time.
struct SeriesTables {
  double inv_odd[12];   // 1 / (2k + 1), k = 0..11
  double inv_fact[15];  // 1 / n!, n = 0..14
};
constexpr SeriesTables make_series_tables() {
  SeriesTables t{};
  for (int k = 0; k < 12; ++k) t.inv_odd[k] = 1.0 / (2 * k + 1);
  double fact = 1;
  for (int n = 0; n < 15; ++n) {
    if (n > 0) fact *= n;  // exact: 14! < 2^53
    t.inv_fact[n] = 1.0 / fact;
  }
  return t;
}
constexpr SeriesTables kSeries = make_series_tables();

double det_log(double x) {  // x > 0, finite
  int e = 0;
  double m = std::frexp(x, &e);  // x = m 2^e, m in [0.5, 1)
  if (m < 0.70710678118654752440) {
    m *= 2;
    --e;
  }
  // ln m = 2 atanh(f) = 2 (f + f^3/3 + f^5/5 + ...), |f| < 0.1716; 12 terms reach 1e-18.
  double f = (m - 1) / (m + 1), f2 = f * f;
  double t = kSeries.inv_odd[11];
  for (int k = 10; k >= 0; --k) t = kSeries.inv_odd[k] + f2 * t;
  double ed = e;
  return ed * kLn2Hi + (2 * f * t + ed * kLn2Lo);
}

double det_exp(double x) {
  if (x > 709.0) return HUGE_VAL;
  if (x < -745.0) return 0;
  double k = std::floor(x * 1.44269504088896340736 + 0.5);  // x / ln 2, rounded
  double r = (x - k * kLn2Hi) - k * kLn2Lo;                 // |r| <= 0.35
  // e^r by its Taylor series to r^14 / 14! (below 1e-18 for |r| <= 0.35).
  double p = kSeries.inv_fact[14];
  for (int n = 13; n >= 0; --n) p = kSeries.inv_fact[n] + r * p;
  return std::ldexp(p, static_cast<int>(k));
}

// The standard normal quantile, by P. J. Acklam's rational approximation (relative error
// below 1.2e-9): no tables and, in the central 95%, no transcendental functions.
double inv_normal(double p) {
  static constexpr double kA[] = {-3.969683028665376e+01, 2.209460984245205e+02,
                                  -2.759285104469687e+02, 1.383577518672690e+02,
                                  -3.066479806614716e+01, 2.506628277459239e+00};
  static constexpr double kB[] = {-5.447609879822406e+01, 1.615858368580409e+02,
                                  -1.556989798598866e+02, 6.680131188771972e+01,
                                  -1.328068155288572e+01};
  static constexpr double kC[] = {-7.784894002430293e-03, -3.223964580411365e-01,
                                  -2.400758277161838e+00, -2.549732539343734e+00,
                                  4.374664141464968e+00,  2.938163982698783e+00};
  static constexpr double kD[] = {7.784695709041462e-03, 3.224671290700398e-01,
                                  2.445134137142996e+00, 3.754408661907416e+00};
  constexpr double kLow = 0.02425;
  auto tail = [&](double q) {
    return (((((kC[0] * q + kC[1]) * q + kC[2]) * q + kC[3]) * q + kC[4]) * q + kC[5]) /
           ((((kD[0] * q + kD[1]) * q + kD[2]) * q + kD[3]) * q + 1);
  };
  if (p < kLow) return tail(std::sqrt(-2 * det_log(p)));
  if (p > 1 - kLow) return -tail(std::sqrt(-2 * det_log(1 - p)));  // 1 - p is exact
  double q = p - 0.5, r = q * q;
  return (((((kA[0] * r + kA[1]) * r + kA[2]) * r + kA[3]) * r + kA[4]) * r + kA[5]) * q /
         (((((kB[0] * r + kB[1]) * r + kB[2]) * r + kB[3]) * r + kB[4]) * r + 1);
}

inline double sigmoid(double t) { return 1 / (1 + det_exp(-t)); }

// ---------------------------------------------------------------------------------------
// Shapes

constexpr double kZipfExponent = 1.1;
constexpr double kMissing = 0.2;   // chance that a numeric feature is absent
constexpr double kLogitSd = 1.25;  // sd of x.w over the pilot; tau is scaled to it
constexpr uint64_t kPilotRows = 20000;

// A numeric feature: log1p(count), count = 1 + floor(scale * (U^(-1/alpha) - 1)), a
// Lomax (Pareto II) count shifted to start at 1, so that the value is never 0.
struct NumericSpec {
  double scale;
  double alpha;
};

// A categorical field: indices [begin, begin + size). Category rank r (0-based, 0 the most
// popular) is drawn from a continuous power law and mapped to begin + (mult r + shift) mod
// size, a fixed permutation that scatters the popular categories over the range.
struct Field {
  uint32_t begin = 0;
  uint32_t size = 0;
  uint64_t mult = 1;
  uint64_t shift = 0;
  double inv_size = 1;
  double zipf_c = 0;                // (size + 1)^(1 - s) - 1
  std::vector<double> top_weights;  // the weights of ranks 0 .. kTopCategories - 1

  // (mult r + shift) mod size, for r < size <= 2^26 (so mult r + shift < 2^53): the
  // quotient from a double product is off by at most one, which the fix-up corrects.
  uint64_t permute(uint64_t r) const {
    uint64_t x = mult * r + shift;
    auto q = static_cast<uint64_t>(static_cast<double>(x) * inv_size);
    auto m = static_cast<int64_t>(x - q * size);
    if (m < 0) m += size;
    if (m >= static_cast<int64_t>(size)) m -= size;
    return static_cast<uint64_t>(m);
  }
};
constexpr uint64_t kTopCategories = 1024;

struct Shape {
  GenShapeInfo info;
  std::vector<NumericSpec> numeric;
  std::vector<Field> fields;
};

// Criteo (Kaggle display advertising): 13 counts, 26 categorical fields whose sizes are the
// Kaggle cardinalities capped so that they fill [14, 1,000,000] exactly.
constexpr NumericSpec kCriteoNumeric[] = {
    {1.0, 1.1}, {3.0, 1.2},  {6.0, 1.0}, {2.0, 1.3}, {40.0, 0.9}, {8.0, 1.1}, {3.0, 1.2},
    {6.0, 1.4}, {20.0, 1.0}, {0.5, 1.5}, {1.5, 1.2}, {0.5, 1.6},  {4.0, 1.1}};
constexpr uint32_t kCriteoFields[] = {1460,  583,  122778, 122778, 305, 24,     12517,  633,   3,
                                      93145, 5683, 122778, 3194,   27,  14992,  122778, 10,    5652,
                                      2173,  4,    122778, 18,     15,  122777, 105,    122777};
constexpr uint64_t kCriteoFeatures = 1000000;

// KDD Cup 2012 track 2: display URL, ad, advertiser, depth, position, query, keyword,
// title, description, user, age; the user field is sized so that they fill d exactly.
constexpr uint32_t kKdd12Fields[] = {26273,   641707,  14847,   3,        3, 26243606,
                                     1249785, 4051441, 3171830, 19286951, 6};
constexpr uint64_t kKdd12Features = 54686452;

Field make_field(uint32_t begin, uint32_t size) {
  Field f;
  f.begin = begin;
  f.size = size;
  uint64_t n = size;
  uint64_t a = static_cast<uint64_t>(static_cast<double>(n) * 0.6180339887498949) | 1;
  while (n > 1 && std::gcd(a % n, n) != 1) ++a;
  f.mult = n > 1 ? a % n : 0;
  f.shift = static_cast<uint64_t>(static_cast<double>(n) * 0.4142135623730950) % n;
  f.inv_size = 1 / static_cast<double>(n);
  f.zipf_c = det_exp((1 - kZipfExponent) * det_log(static_cast<double>(n) + 1)) - 1;
  return f;
}

Status make_shape(const std::string& name, Shape* out) {
  Shape s;
  s.info.name = name;
  uint64_t next = 1;
  auto add_fields = [&](const uint32_t* sizes, size_t count) {
    for (size_t k = 0; k < count; ++k) {
      s.fields.push_back(make_field(static_cast<uint32_t>(next), sizes[k]));
      next += sizes[k];
    }
  };
  if (name == "criteo") {
    s.numeric.assign(std::begin(kCriteoNumeric), std::end(kCriteoNumeric));
    next += s.numeric.size();
    add_fields(kCriteoFields, std::size(kCriteoFields));
    s.info.features = kCriteoFeatures;
    s.info.target_positive_rate = 0.25;
  } else if (name == "kdd12") {
    add_fields(kKdd12Fields, std::size(kKdd12Fields));
    s.info.features = kKdd12Features;
    s.info.target_positive_rate = 0.04;
  } else {
    return Status::invalid_argument("unknown shape '" + name + "' (expected criteo or kdd12)");
  }
  if (next - 1 != s.info.features) {
    return Status::internal("shape " + name + ": the fields do not fill the feature range");
  }
  s.info.numeric = static_cast<uint32_t>(s.numeric.size());
  s.info.fields = static_cast<uint32_t>(s.fields.size());
  *out = std::move(s);
  return Status::ok();
}

// ---------------------------------------------------------------------------------------
// Rows

constexpr size_t kMaxLabelChars = 32;
constexpr size_t kRowTextCap = 4096;  // far above the longest row of either shape

// One row's features, formatted as " j:v ..." (no label), and their dot with the weights.
struct RowDraw {
  char text[kRowTextCap];
  size_t text_len = 0;
  uint32_t nnz = 0;
  uint32_t indices[64];
  double dot = 0;
};

class Model {
 public:
  Model(Shape shape, uint64_t seed, bool binary)
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

  // The weight of feature j (1-based): tau times a standard normal drawn from hash(seed, j).
  double weight(uint64_t j) const { return tau_ * inv_normal(to_unit(hash2(weight_key_, j))); }
  double tau() const { return tau_; }
  double intercept() const { return intercept_; }
  bool binary() const { return binary_; }

  // Draws the pilot, scales tau so that sd(x.w) = kLogitSd on it and, for the binary task,
  // bisects the intercept so that the pilot's mean of sigmoid(x.w + b) is the target.
  void calibrate() {
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

  // Draws one row's features from rng into d: the text " j:v ...", the indices, and the
  // dot with the weights. Numeric values are rounded to 6 significant digits first, so the
  // value printed is the value the label was drawn from.
  void draw_features(RowRng& rng, RowDraw* d) const {
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

  struct RowResult {
    uint32_t nnz;
    bool positive;
    double probability;
  };
  // Draws row i and writes its line to out, which has room for kMaxLabelChars +
  // kRowTextCap + 1 bytes; *len is its length.
  RowResult write_row(uint64_t i, RowDraw* d, char* out, size_t* len) const {
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

 private:
  struct NumericText {
    char text[16] = {};
    uint8_t len = 0;
    double value = 0;
  };
  static constexpr uint64_t kCountCache = 4096;  // counts below it have their text cached

  // Writes value with 6 significant digits at p; *parsed is what a reader gets back.
  static char* format_value(double value, char* p, double* parsed) {
    char* q = std::to_chars(p, p + 16, value, std::chars_format::general, 6).ptr;
    std::from_chars(p, q, *parsed);
    return q;
  }

  // Caches the weights of the numeric features and of the most popular categories of
  // each field: the same values weight() computes, without the normal quantile per entry.
  void set_tau(double tau) {
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

  Shape shape_;
  bool binary_;
  uint64_t row_key_, pilot_key_, weight_key_;
  double tau_ = 1;
  double intercept_ = 0;
  std::vector<double> numeric_weight_;
  std::vector<NumericText> count_text_;
};

// A bitset of the feature indices that occur, set from many threads at once. Popular
// features are set early; later rows find the bit set with a plain load and never write.
class Occurrence {
 public:
  explicit Occurrence(uint64_t bits) : words_((bits + 64) / 64, 0) {}
  void mark(uint32_t j) {
    std::atomic_ref<uint64_t> w(words_[j >> 6]);
    uint64_t bit = uint64_t{1} << (j & 63);
    if ((w.load(std::memory_order_relaxed) & bit) == 0) w.fetch_or(bit, std::memory_order_relaxed);
  }
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  std::vector<uint64_t> words_;
};

// ---------------------------------------------------------------------------------------
// Output

class Sink {
 public:
  virtual ~Sink() = default;
  virtual Status write(const char* data, size_t n) = 0;
  // Writes whatever is buffered (the end of a zstd frame). The bytes are not yet in place.
  virtual Status finish() { return Status::ok(); }
  uint64_t bytes() const { return bytes_; }

 protected:
  uint64_t bytes_ = 0;
};

class StdoutSink final : public Sink {
 public:
  Status write(const char* data, size_t n) override {
    while (n > 0) {
      ssize_t w = ::write(STDOUT_FILENO, data, n);
      if (w < 0) {
        if (errno == EINTR) continue;
        return Status::io_error(std::string("<stdout>: write failed: ") + std::strerror(errno));
      }
      data += w;
      n -= static_cast<size_t>(w);
      bytes_ += static_cast<uint64_t>(w);
    }
    return Status::ok();
  }
};

class FileSink final : public Sink {
 public:
  explicit FileSink(WritableFile* file) : file_(file) {}
  Status write(const char* data, size_t n) override {
    AGLD_RETURN_IF_ERROR(file_->append(ByteSpan(reinterpret_cast<const std::byte*>(data), n)));
    bytes_ += n;
    return Status::ok();
  }

 private:
  WritableFile* file_;
};

// One zstd frame through the streaming API; with workers, zstd compresses on its own
// threads while the pipeline draws the next rows.
class ZstdSink final : public Sink {
 public:
  explicit ZstdSink(Sink* inner, std::string name) : inner_(inner), name_(std::move(name)) {}
  ~ZstdSink() override { ZSTD_freeCCtx(cctx_); }

  Status open(int level, int workers) {
    cctx_ = ZSTD_createCCtx();
    if (cctx_ == nullptr) return Status::internal("cannot create a zstd context");
    AGLD_RETURN_IF_ERROR(check(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_compressionLevel, level)));
    AGLD_RETURN_IF_ERROR(check(ZSTD_CCtx_setParameter(cctx_, ZSTD_c_checksumFlag, 1)));
    if (workers > 0) {
      // A zstd built without threads refuses; compress on the calling thread then.
      ZSTD_CCtx_setParameter(cctx_, ZSTD_c_nbWorkers, workers);
    }
    out_.resize(ZSTD_CStreamOutSize());
    return Status::ok();
  }

  Status write(const char* data, size_t n) override {
    ZSTD_inBuffer in{data, n, 0};
    while (in.pos < in.size) {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      AGLD_RETURN_IF_ERROR(check(ZSTD_compressStream2(cctx_, &out, &in, ZSTD_e_continue)));
      AGLD_RETURN_IF_ERROR(drain(out));
    }
    return Status::ok();
  }

  Status finish() override {
    ZSTD_inBuffer in{nullptr, 0, 0};
    for (;;) {
      ZSTD_outBuffer out{out_.data(), out_.size(), 0};
      size_t left = ZSTD_compressStream2(cctx_, &out, &in, ZSTD_e_end);
      AGLD_RETURN_IF_ERROR(check(left));
      AGLD_RETURN_IF_ERROR(drain(out));
      if (left == 0) break;
    }
    return inner_->finish();
  }

 private:
  Status check(size_t r) const {
    if (ZSTD_isError(r)) return Status::internal(name_ + ": zstd: " + ZSTD_getErrorName(r));
    return Status::ok();
  }
  Status drain(const ZSTD_outBuffer& out) {
    if (out.pos == 0) return Status::ok();
    bytes_ += out.pos;
    return inner_->write(out_.data(), out.pos);
  }

  Sink* inner_;
  std::string name_;
  ZSTD_CCtx* cctx_ = nullptr;
  std::vector<char> out_;
};

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// "feature,weight", "intercept,b", then "j,w_j" for every feature that occurs.
Status write_weights(const Model& model, const Occurrence& occ, WritableFile* file,
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

// ---------------------------------------------------------------------------------------
// The pipeline

constexpr uint64_t kBlockRows = 4096;

struct Block {
  uint64_t first_row = 0;
  uint64_t rows = 0;
  std::vector<char> text;
  size_t len = 0;
  uint64_t nnz = 0;
  uint64_t positives = 0;
  double probability_sum = 0;
};

void fill_block(const Model& model, Occurrence* occ, Block* b) {
  RowDraw draw;
  const size_t row_max = kMaxLabelChars + kRowTextCap + 1;
  b->len = 0;
  b->nnz = 0;
  b->positives = 0;
  b->probability_sum = 0;
  for (uint64_t i = b->first_row; i < b->first_row + b->rows; ++i) {
    if (b->text.size() < b->len + row_max) {
      b->text.resize(std::max(2 * b->text.size(), b->len + row_max));
    }
    size_t n = 0;
    Model::RowResult r = model.write_row(i, &draw, b->text.data() + b->len, &n);
    b->len += n;
    b->nnz += r.nnz;
    b->positives += r.positive ? 1 : 0;
    b->probability_sum += r.probability;
    if (occ != nullptr) {
      for (uint32_t k = 0; k < draw.nnz; ++k) occ->mark(draw.indices[k]);
    }
  }
}

struct Totals {
  uint64_t rows = 0, nnz = 0, text_bytes = 0, positives = 0;
  double probability_sum = 0;
};

Status run_pipeline(const GenOptions& opt, const Model& model, Occurrence* occ, Sink* sink,
                    int threads, std::chrono::steady_clock::time_point start, Totals* totals) {
  const uint64_t blocks = (opt.rows + kBlockRows - 1) / kBlockRows;
  const size_t tokens = 2 * static_cast<size_t>(threads) + 2;
  // At most `tokens` blocks are in flight, and they are consecutive, so block k can use
  // slot k mod tokens.
  std::vector<Block> slots(tokens);
  uint64_t next = 0;
  std::atomic<bool> stop{false};
  Status status;
  auto hand_out = [&](tbb::flow_control& fc) -> Block* {
    if (next == blocks || stop.load(std::memory_order_relaxed)) {
      fc.stop();
      return nullptr;
    }
    Block* b = &slots[next % tokens];
    b->first_row = next * kBlockRows;
    b->rows = std::min(kBlockRows, opt.rows - b->first_row);
    ++next;
    return b;
  };
  auto draw = [&](Block* b) {
    if (!stop.load(std::memory_order_relaxed)) fill_block(model, occ, b);
    return b;
  };
  auto write = [&](Block* b) {
    if (stop.load(std::memory_order_relaxed)) return;
    Status s = sink->write(b->text.data(), b->len);
    if (!s.is_ok()) {
      status = s;
      stop.store(true);
      return;
    }
    totals->rows += b->rows;
    totals->nnz += b->nnz;
    totals->text_bytes += b->len;
    totals->positives += b->positives;
    totals->probability_sum += b->probability_sum;
    if (opt.progress) {
      GenProgress p;
      p.rows = totals->rows;
      p.rows_total = opt.rows;
      p.text_bytes = totals->text_bytes;
      p.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      opt.progress(p);
    }
  };
  tbb::parallel_pipeline(
      tokens, tbb::make_filter<void, Block*>(tbb::filter_mode::serial_in_order, hand_out) &
                  tbb::make_filter<Block*, Block*>(tbb::filter_mode::parallel, draw) &
                  tbb::make_filter<Block*, void>(tbb::filter_mode::serial_in_order, write));
  return status;
}

Status generate_impl(const GenOptions& opt, GenReport* report, FileSystem& fs) {
  const auto start = std::chrono::steady_clock::now();
  Shape shape;
  AGLD_RETURN_IF_ERROR(make_shape(opt.shape, &shape));
  if (opt.task != "binary" && opt.task != "regression") {
    return Status::invalid_argument("unknown task '" + opt.task +
                                    "' (expected binary or regression)");
  }
  if (opt.rows == 0) return Status::invalid_argument("--rows must be at least 1");
  if (opt.threads < 0) return Status::invalid_argument("--threads must be 0 (all cores) or more");
  if (opt.output.empty()) return Status::invalid_argument("empty output path");
  const bool to_stdout = opt.output == "-";
  std::string weights_path = opt.weights;
  if (weights_path.empty() && !to_stdout) weights_path = opt.output + ".weights.csv";
  if (!weights_path.empty() && weights_path == opt.output) {
    return Status::invalid_argument(weights_path + ": the weights would overwrite the data");
  }
  if (weights_path == "-") {
    return Status::invalid_argument("the weights cannot go to stdout; give --weights a path");
  }

  std::unique_ptr<tbb::global_control> allow;
  std::unique_ptr<tbb::task_arena> arena;
  int threads = opt.threads;
  if (threads > 0) {
    // More threads than cores is allowed (and pointless); without this TBB warns.
    if (threads > tbb::this_task_arena::max_concurrency()) {
      allow = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                    static_cast<size_t>(threads));
    }
    arena = std::make_unique<tbb::task_arena>(threads);
  } else {
    threads = tbb::this_task_arena::max_concurrency();
  }

  // Open both outputs first: a bad weights path fails before any row is drawn.
  std::unique_ptr<WritableFile> data_file, weights_file;
  if (!to_stdout) AGLD_RETURN_IF_ERROR(fs.create_atomic(opt.output, &data_file));
  if (!weights_path.empty()) {
    AGLD_RETURN_IF_ERROR(fs.create_atomic(weights_path, &weights_file));
  }
  std::unique_ptr<Sink> base;
  if (to_stdout) {
    base = std::make_unique<StdoutSink>();
  } else {
    base = std::make_unique<FileSink>(data_file.get());
  }
  std::unique_ptr<ZstdSink> zstd;
  Sink* sink = base.get();
  if (!to_stdout && ends_with(opt.output, ".zst")) {
    zstd = std::make_unique<ZstdSink>(base.get(), opt.output);
    // zstd compresses on its own workers, beside the pipeline's threads. Always at least
    // one: zstd's output is the same for any number of workers >= 1 (but not for 0), so
    // the .zst bytes, not only the text, do not depend on --threads.
    AGLD_RETURN_IF_ERROR(zstd->open(opt.zstd_level, threads));
    sink = zstd.get();
  }

  Model model(shape, opt.seed, opt.task == "binary");
  std::unique_ptr<Occurrence> occ;
  if (weights_file) occ = std::make_unique<Occurrence>(shape.info.features + 1);
  Totals totals;
  Status status;
  auto body = [&] {
    model.calibrate();
    status = run_pipeline(opt, model, occ.get(), sink, threads, start, &totals);
  };
  if (arena) {
    arena->execute(body);
  } else {
    body();
  }
  AGLD_RETURN_IF_ERROR(status);
  AGLD_RETURN_IF_ERROR(sink->finish());

  GenReport r;
  if (weights_file) {
    AGLD_RETURN_IF_ERROR(write_weights(model, *occ, weights_file.get(), &r.features_used));
  }
  if (data_file) AGLD_RETURN_IF_ERROR(data_file->commit());
  if (weights_file) AGLD_RETURN_IF_ERROR(weights_file->commit());

  r.rows = totals.rows;
  r.features = shape.info.features;
  r.nnz = totals.nnz;
  r.text_bytes = totals.text_bytes;
  r.output_bytes = base->bytes();
  r.positives = model.binary() ? totals.positives : 0;
  r.intercept = model.intercept();
  r.tau = model.tau();
  r.mean_probability =
      model.binary() ? totals.probability_sum / static_cast<double>(totals.rows) : 0;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  r.output = opt.output;
  r.weights = weights_path;
  *report = std::move(r);
  return Status::ok();
}

}  // namespace

Status gen_shape_info(const std::string& shape, GenShapeInfo* out) {
  Shape s;
  AGLD_RETURN_IF_ERROR(make_shape(shape, &s));
  *out = s.info;
  return Status::ok();
}

Status generate(const GenOptions& options, GenReport* report, FileSystem& fs) {
  try {
    return generate_impl(options, report, fs);
  } catch (const std::exception& e) {
    return Status::internal(std::string("gen: ") + e.what());
  }
}

}  // namespace agld
