// agld gen's planted model: the weights (a hash of seed and feature, scaled by tau), tau and
// the intercept calibrated on a pilot sample, and each row drawn and formatted as a LIBSVM
// line; the features that occur, and the weights CSV of those (docs/gen.md).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "gen/det_math.hpp"
#include "gen/row_rng.hpp"
#include "gen/shapes.hpp"

namespace agld::gen {

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

class PlantedModel {
 public:
  PlantedModel(Shape shape, uint64_t seed, bool binary);

  // The weight of feature j (1-based): tau times a standard normal drawn from hash(seed, j).
  double weight(uint64_t j) const { return tau_ * inv_normal(to_unit(hash2(weight_key_, j))); }
  double tau() const { return tau_; }
  double intercept() const { return intercept_; }
  bool binary() const { return binary_; }

  // Draws the pilot, scales tau so that sd(x.w) = kLogitSd on it and, for the binary task,
  // bisects the intercept so that the pilot's mean of sigmoid(x.w + b) is the target.
  void calibrate();

  // Draws one row's features from rng into d: the text " j:v ...", the indices, and the
  // dot with the weights. Numeric values are rounded to 6 significant digits first, so the
  // value printed is the value the label was drawn from.
  void draw_features(RowRng& rng, RowDraw* d) const;

  struct RowResult {
    uint32_t nnz;
    bool positive;
    double probability;
  };
  // Draws row i and writes its line to out, which has room for kMaxLabelChars +
  // kRowTextCap + 1 bytes; *len is its length.
  RowResult write_row(uint64_t i, RowDraw* d, char* out, size_t* len) const;

 private:
  struct NumericText {
    char text[16] = {};
    uint8_t len = 0;
    double value = 0;
  };
  static constexpr uint64_t kCountCache = 4096;  // counts below it have their text cached

  // Writes value with 6 significant digits at p; *parsed is what a reader gets back.
  static char* format_value(double value, char* p, double* parsed);

  // Caches the weights of the numeric features and of the most popular categories of
  // each field: the same values weight() computes, without the normal quantile per entry.
  void set_tau(double tau);

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

// "feature,weight", "intercept,b", then "j,w_j" for every feature that occurs.
Status write_weights(const PlantedModel& model, const Occurrence& occ, WritableFile* file,
                     uint64_t* count);

}  // namespace agld::gen
