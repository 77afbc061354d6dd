// agld gen's shapes: the feature layout of the Criteo- and KDD Cup 2012-like data (numeric
// features as shifted Lomax counts, categorical fields with power-law category popularity),
// before any row is drawn (docs/gen.md).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "agld/gen.hpp"
#include "agld/status.hpp"

namespace agld::gen {

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

// A shape: what it looks like, its numeric features (indices 1 .. numeric) and its fields
// (after them, to d).
struct Shape {
  GenShapeInfo info;
  std::vector<NumericSpec> numeric;
  std::vector<Field> fields;
};

// The shape named "criteo" or "kdd12"; invalid_argument for another name.
Status make_shape(const std::string& name, Shape* out);

}  // namespace agld::gen
