#include "convert/field_detector.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <new>

#include "common/huge_array.hpp"

namespace agld {
namespace {

uint64_t mapping_bytes(uint64_t features) {
  return (features * FieldDetector::kBytesPerFeature + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
}

}  // namespace

void FieldDetector::release() {
  if (prev_) ::munmap(prev_, mapped_);
  prev_ = nullptr;
  size_ = 0;
  mapped_ = 0;
}

void FieldDetector::grow(uint64_t d) {
  const uint64_t bytes = mapping_bytes(d);
  void* p;
  if (prev_) {
    p = ::mremap(prev_, mapped_, bytes, MREMAP_MAYMOVE);  // new pages are zero: "none"
  } else {
    p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  }
  if (p == MAP_FAILED) throw std::bad_alloc();
#ifdef MADV_HUGEPAGE
  ::madvise(p, bytes, MADV_HUGEPAGE);
#endif
  prev_ = static_cast<uint32_t*>(p);
  mapped_ = bytes;
  size_ = bytes / kBytesPerFeature;
}

void FieldDetector::reserve(uint64_t d) {
  if (d > size_) grow(d);
}

void FieldDetector::add(const SparseRows& rows, size_t r0, size_t r1) {
  if (r0 >= r1) return;
  const uint32_t* idx = rows.indices.data();
  const float* val = rows.values.data();
  const uint64_t b = rows.offsets[r0], e = rows.offsets[r1];
  if (e > b) {
    const uint32_t top = *std::max_element(idx + b, idx + e);
    if (top >= size_) grow(std::max<uint64_t>({uint64_t{top} + 1, size_ + size_ / 2, uint64_t{1} << 16}));
  }
  constexpr uint64_t kAhead = 16;
  for (size_t r = r0; r < r1; ++r) {
    const uint64_t rb = rows.offsets[r], re = rows.offsets[r + 1];
    for (uint64_t p = rb; p < re; ++p) {
      if (p + kAhead < e) __builtin_prefetch(prev_ + idx[p + kAhead], 1);
      const uint64_t before = p > rb ? std::min<uint64_t>(uint64_t{idx[p - 1]} + 2, kPoison) : 1;
      const uint32_t code = val[p] == 1.0f ? static_cast<uint32_t>(before) : kPoison;
      uint32_t& c = prev_[idx[p]];
      c = std::max(c, code);
    }
  }
}

// Why the scan below finds the complete one-hot fields, exactly.
//
// Take the N rows, n_j the rows holding feature j, and call a range [a, b] *complete* when
// every row holds exactly one of its features, with value 1. Trimming the features no row
// holds off its ends leaves a range complete, so it is enough to find the complete ranges
// whose first and last features are held by some row ("seen ends").
//
// (1) The test. [a, b] is complete iff (i) no feature in it is poisoned, (ii) the sum of n_j
// over it is N and (iii) no row holds two of its features. (iii) ⇔ no row holds two
// consecutive features j < k (consecutive in the row) both in [a, b] ⇔ prev[k] - 2 < a for
// every k in [a, b] (prev[k] - 2 is the largest such j) ⇔ reach(b) <= a + 1, where reach(b)
// is the largest prev[k] over *all* non-poisoned k <= b: a k < a has prev[k] - 2 < k < a.
// Given (iii), (ii) says the rows holding one of the features are all N rows, so each holds
// exactly one. So a window can be tested in O(1) with a running maximum, no window minimum.
//
// (2) The scan is the two-pointer search for windows of sum N over the counts (all >= 0): b
// goes up one feature at a time; a starts only at seen features, and is dropped while the
// window's sum exceeds N, or equals N but fails (iii). A poisoned feature empties the window
// (nothing containing it can be complete). At sum N with (iii) the window is recorded and
// the scan goes on from b + 1.
//   For a start a, the window's end stops at the smallest b with sum >= N. A complete range
// with seen ends [a, b] is the only one starting at a (another end b' > b adds n_b' > 0), and
// that end is the smallest with sum >= N. So dropping a at sum > N, or at sum N with (iii)
// failing, loses nothing: no complete range starts at a. By induction, if the scan reaches
// a start a* with a complete [a*, b*], its end pointer is at most b* then (a window [a, b]
// with a < a* and b > b* would have passed sum N at or before b*: sum over [a, b*] >= sum
// over [a*, b*] = N), it stops exactly at b*, and (iii) holds: [a*, b*] is recorded.
//   So every complete range with seen ends is recorded unless it overlaps one recorded
// before it. Complete ranges can overlap only when the rows allow two ways of cutting them
// ({0, 2} and {1} make both [0, 1] and [1, 2] complete); then the scan records the first and
// every record is still true. When the fields are disjoint, as the categorical fields of a
// data set are, it records each of them. A constant column of 1 (n_j = N) is one of them.
//
// O(d) time (each feature enters and leaves the window once) and no memory besides the two
// per-feature arrays.
std::vector<FeatureField> FieldDetector::fields(const FeatureAccumulator& counts, uint64_t d,
                                                uint64_t rows) const {
  std::vector<FeatureField> out;
  if (rows == 0) return out;
  uint64_t a = 0, sum = 0, reach = 0;
  for (uint64_t b = 0; b < d; ++b) {
    const uint32_t code = prev(b);
    if (code == kPoison) {
      a = b + 1;
      sum = 0;
      continue;
    }
    reach = std::max<uint64_t>(reach, code);
    if (code == 0) {  // no row holds b: its count is 0; a window starts at a seen feature
      if (sum == 0) a = b + 1;
      continue;
    }
    sum += counts.count(b);
    while (sum > rows || (sum == rows && reach > a + 1)) {
      sum -= counts.count(a);
      ++a;
      while (a <= b && prev(a) == 0) ++a;
    }
    if (sum == rows) {
      out.push_back({a, b - a + 1});
      a = b + 1;
      sum = 0;
    }
  }
  return out;
}

}  // namespace agld
