// SparseRows: labelled CSR rows in memory. The unit that parsing produces, chunks are built
// from, and tests use as the in-memory reference for the store.
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <span>
#include <vector>

namespace agld {

struct SparseRows {
  std::vector<double> labels;
  std::vector<uint64_t> offsets{0};  // rows() + 1 entries
  std::vector<uint32_t> indices;     // 0-based, strictly increasing within a row
  std::vector<float> values;         // one per index

  size_t rows() const { return labels.size(); }
  uint64_t nnz() const { return indices.size(); }
  std::span<const uint32_t> row_indices(size_t r) const {
    return {indices.data() + offsets[r], static_cast<size_t>(offsets[r + 1] - offsets[r])};
  }
  std::span<const float> row_values(size_t r) const {
    return {values.data() + offsets[r], static_cast<size_t>(offsets[r + 1] - offsets[r])};
  }
  void add_row(double label, std::span<const uint32_t> idx, std::span<const float> val) {
    labels.push_back(label);
    indices.insert(indices.end(), idx.begin(), idx.end());
    values.insert(values.end(), val.begin(), val.end());
    offsets.push_back(indices.size());
  }
  // Appends rows [r0, r1) of other.
  void append(const SparseRows& other, size_t r0, size_t r1);
  void clear() {
    labels.clear();
    offsets.assign(1, 0);
    indices.clear();
    values.clear();
  }
  bool operator==(const SparseRows&) const = default;
};

// For test failure messages: the shape, and the first row that differs is easy to find.
void PrintTo(const SparseRows& rows, std::ostream* os);

}  // namespace agld
