// FeatureAccumulator: the per-feature statistics of rows as they are added (docs/format.md,
// "Feature statistics"): for each feature j the entries where it is stored, the sum of their
// squared values and the largest |value|. `agld convert` adds each output's rows in their
// stored order as it writes them, and scan_feature_stats adds a store's chunks in the same
// order when the store has no record: the same additions in the same order, so the two give
// the same doubles, bit for bit.
//
// 16 bytes a feature (u32 count, f32 largest |x|, f64 sum of x^2), in one anonymous mapping
// on transparent huge pages that grows in place (mremap) as larger indices come, so growing
// never holds two copies. A page is resident only once a feature on it has been counted.
// A count that passes 2^32 - 1 (a feature in more than 4.29 billion rows) carries into a
// small map of high words: exact at any size, free while no count gets there.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>

namespace agld {

class FeatureAccumulator {
 public:
  static constexpr uint64_t kBytesPerFeature = 16;

  FeatureAccumulator() = default;
  FeatureAccumulator(const FeatureAccumulator&) = delete;
  FeatureAccumulator& operator=(const FeatureAccumulator&) = delete;
  FeatureAccumulator(FeatureAccumulator&& o) noexcept { swap(o); }
  FeatureAccumulator& operator=(FeatureAccumulator&& o) noexcept {
    FeatureAccumulator(std::move(o)).swap(*this);
    return *this;
  }
  ~FeatureAccumulator() { release(); }

  // Room for features 0 .. d - 1 (zero where nothing was added). Throws std::bad_alloc.
  void reserve(uint64_t d);
  // Adds n entries: feature idx[p] with value val[p] (val null: every value 1), in order.
  // Grows as needed for an index past the room reserved.
  void add(const uint32_t* idx, const float* val, uint64_t n);
  // Features 0 .. size() - 1 have room (a larger one has been counted in no row).
  uint64_t size() const { return size_; }
  // Bytes mapped (the most that can be resident).
  uint64_t mapped_bytes() const { return mapped_; }
  // Rows feature j is stored in (0 past size()).
  uint64_t count(uint64_t j) const {
    if (j >= size_) return 0;
    uint64_t c = cells_[j].count;
    if (!high_.empty()) {
      if (auto it = high_.find(static_cast<uint32_t>(j)); it != high_.end()) c += it->second << 32;
    }
    return c;
  }
  // The statistics of features first .. first + n - 1 (past size(): zeros).
  void fill(uint64_t first, uint64_t n, uint64_t* count, double* sum_sq, float* max_abs) const;
  // Frees the memory; size() is 0 again.
  void release();

 private:
  struct Cell {
    uint32_t count;
    float max_abs;
    double sum_sq;
  };
  static_assert(sizeof(Cell) == kBytesPerFeature);
  void grow(uint64_t d);
  void swap(FeatureAccumulator& o) noexcept {
    std::swap(cells_, o.cells_);
    std::swap(size_, o.size_);
    std::swap(mapped_, o.mapped_);
    high_.swap(o.high_);
  }

  Cell* cells_ = nullptr;
  uint64_t size_ = 0;    // features with room
  uint64_t mapped_ = 0;  // bytes mapped
  std::unordered_map<uint32_t, uint64_t> high_;  // count >> 32, where not 0
};

}  // namespace agld
