// FieldDetector: finds the complete one-hot fields of an output's rows as `agld convert`
// writes them (`--fields auto`; ALGORITHMS.md section 8, docs/design.md "One-hot fields").
// A complete one-hot field is a range of features [a, b] such that every row holds exactly
// one of them, with value 1.
//
// The rows are seen once, in any order. Besides the rows each feature is in (the output's
// FeatureAccumulator counts them already), the detector keeps one u32 a feature:
//
//   prev[k] = 0            no row holds k
//           = 1            k comes first in every row that holds it
//           = p + 2        p is the largest feature that comes just before k in some row
//           = kPoison      some row holds k with a value other than 1
//
// One max() an entry: kPoison is the largest code, so a poisoned feature stays poisoned.
// (A feature right after 2^32 - 3 or above reads as poisoned too: it is then never in a
// field, which is conservative: a field recorded is still complete.) A feature no row holds
// is told by its code, so the scan reads the counts of the features seen only: at kdd12's d
// with few rows, most of the counts' pages are never touched.
//
// The same anonymous, growable mapping as FeatureAccumulator's, so d need not be known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "agld/sparse.hpp"
#include "agld/store.hpp"
#include "store/feature_accumulator.hpp"

namespace agld {

class FieldDetector {
 public:
  static constexpr uint64_t kBytesPerFeature = 4;
  static constexpr uint32_t kPoison = UINT32_MAX;

  FieldDetector() = default;
  FieldDetector(const FieldDetector&) = delete;
  FieldDetector& operator=(const FieldDetector&) = delete;
  FieldDetector(FieldDetector&& o) noexcept { swap(o); }
  FieldDetector& operator=(FieldDetector&& o) noexcept {
    FieldDetector(std::move(o)).swap(*this);
    return *this;
  }
  ~FieldDetector() { release(); }

  // Room for features 0 .. d - 1. Throws std::bad_alloc.
  void reserve(uint64_t d);
  // Adds rows [r0, r1) of rows (indices strictly increasing within a row, as parsed).
  // Throws std::bad_alloc when growing fails.
  void add(const SparseRows& rows, size_t r0, size_t r1);
  // The code of feature k (0 past the room reserved).
  uint32_t prev(uint64_t k) const { return k < size_ ? prev_[k] : 0; }
  uint64_t mapped_bytes() const { return mapped_; }
  void release();

  // The complete one-hot fields of the `rows` rows added, among features [0, d), in
  // increasing order and disjoint, with counts(j) the rows holding feature j (the same rows'
  // FeatureAccumulator). A field starts and ends at a feature some row holds; features no
  // row holds inside it are its unseen levels. See field_detector.cpp for why it is exact.
  std::vector<FeatureField> fields(const FeatureAccumulator& counts, uint64_t d,
                                   uint64_t rows) const;

 private:
  void grow(uint64_t d);
  void swap(FieldDetector& o) noexcept {
    std::swap(prev_, o.prev_);
    std::swap(size_, o.size_);
    std::swap(mapped_, o.mapped_);
  }

  uint32_t* prev_ = nullptr;
  uint64_t size_ = 0;    // features with room
  uint64_t mapped_ = 0;  // bytes mapped
};

}  // namespace agld
