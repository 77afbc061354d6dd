// --intercept: rows with a constant feature 1 appended as the last coordinate. Internal to
// the sampler layer.
#pragma once

#include <cstdint>
#include <vector>

#include "agld/reader.hpp"

namespace agld::sampler {

// Rows with the intercept's constant feature appended (a view of b itself without one).
class Intercept {
 public:
  Intercept(bool on, uint32_t coordinate) : on_(on), j_(coordinate) {}
  // Valid until the next call.
  const Batch& operator()(const Batch& b);

 private:
  bool on_;
  uint32_t j_;
  std::vector<uint64_t> offsets_;
  std::vector<uint32_t> indices_;
  std::vector<float> values_;
  std::vector<BatchRow> views_;
  Batch out_;
};

}  // namespace agld::sampler
