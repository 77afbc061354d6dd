#include "store/feature_accumulator.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <cmath>
#include <new>

#include "common/huge_array.hpp"

namespace agld {
namespace {

uint64_t mapping_bytes(uint64_t features) {
  return (features * FeatureAccumulator::kBytesPerFeature + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void FeatureAccumulator::release() {
  if (cells_) ::munmap(cells_, mapped_);
  cells_ = nullptr;
  size_ = 0;
  mapped_ = 0;
  high_.clear();
}

void FeatureAccumulator::grow(uint64_t d) {
  const uint64_t bytes = mapping_bytes(d);
  void* p;
  if (cells_) {
    // The pages move with their contents; the new ones are zero, as a fresh mapping's are.
    p = ::mremap(cells_, mapped_, bytes, MREMAP_MAYMOVE);
  } else {
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);  // a hint: features are counted at random places
#endif
  cells_ = static_cast<Cell*>(p);
  mapped_ = bytes;
  size_ = bytes / kBytesPerFeature;
}

void FeatureAccumulator::reserve(uint64_t d) {
  if (d > size_) grow(d);
}

void FeatureAccumulator::add(const uint32_t* idx, const float* val, uint64_t n) {
  // The cells are read at random: ask for the one 16 entries ahead while this one is done.
  constexpr uint64_t kAhead = 16;
  for (uint64_t p = 0; p < n; ++p) {
    const uint32_t j = idx[p];
    if (j >= size_) {
      // Half as much again at least: each step is a system call (mremap copies nothing).
      grow(std::max<uint64_t>({uint64_t{j} + 1, size_ + size_ / 2, uint64_t{1} << 16}));
    }
    if (p + kAhead < n) __builtin_prefetch(cells_ + idx[p + kAhead], 1);
    Cell& c = cells_[j];
    if (++c.count == 0) ++high_[j];
    const float v = val ? val[p] : 1.0f;
    const double x = v;
    c.sum_sq += x * x;
    c.max_abs = std::max(c.max_abs, std::fabs(v));
  }
}

void FeatureAccumulator::fill(uint64_t first, uint64_t n, uint64_t* count, double* sum_sq,
                              float* max_abs) const {
  const uint64_t have = first < size_ ? std::min(n, size_ - first) : 0;
  for (uint64_t i = 0; i < have; ++i) {
    const Cell& c = cells_[first + i];
    count[i] = c.count;
    sum_sq[i] = c.sum_sq;
    max_abs[i] = c.max_abs;
  }
  std::fill(count + have, count + n, uint64_t{0});
  std::fill(sum_sq + have, sum_sq + n, 0.0);
  std::fill(max_abs + have, max_abs + n, 0.0f);
  for (const auto& [j, hi] : high_) {
    if (j >= first && j - first < n) count[j - first] += hi << 32;
  }
}

}  // namespace agld
