#include "agld/sparse.hpp"

#include <ostream>

namespace agld {

void SparseRows::append(const SparseRows& other, size_t r0, size_t r1) {
  if (r0 >= r1) return;
  labels.insert(labels.end(), other.labels.begin() + r0, other.labels.begin() + r1);
  const uint64_t b = other.offsets[r0], e = other.offsets[r1];
  const uint64_t base = indices.size();
  indices.insert(indices.end(), other.indices.begin() + b, other.indices.begin() + e);
  values.insert(values.end(), other.values.begin() + b, other.values.begin() + e);
  for (size_t r = r0 + 1; r <= r1; ++r) offsets.push_back(base + other.offsets[r] - b);
}

void PrintTo(const SparseRows& rows, std::ostream* os) {
  *os << "SparseRows{" << rows.rows() << " rows, " << rows.nnz() << " nnz";
  for (size_t r = 0; r < std::min<size_t>(rows.rows(), 3); ++r) {
    *os << "; row " << r << ": " << rows.labels[r];
    for (uint64_t p = rows.offsets[r]; p < rows.offsets[r + 1] && p < rows.offsets[r] + 4; ++p) {
      *os << " " << rows.indices[p] << ":" << rows.values[p];
    }
  }
  *os << "}";
}

}  // namespace agld
