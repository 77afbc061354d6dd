#include "sampler/pass_stream.hpp"

#include <algorithm>

namespace agld::sampler {

Batch PassStream::carry_view(size_t from, size_t n) {
  views_.clear();
  append_row_views(rows_.offsets, rows_.indices.data(), rows_.values.data(), &views_);
  return Batch{ids_, rows_.labels, views_}.slice(from, n);
}

Status PassStream::take(uint64_t count, const std::function<void(const Batch&)>& visit) {
  uint64_t left = count;
  if (!ids_.empty()) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, ids_.size()));
    visit(carry_view(0, n));
    left -= n;
    if (n == ids_.size()) {
      ids_.clear();
      rows_.clear();
    } else {  // drop the visited front (only when a take is shorter than a batch)
      SparseRows rest;
      rest.append(rows_, n, ids_.size());
      rows_ = std::move(rest);
      ids_.erase(ids_.begin(), ids_.begin() + static_cast<std::ptrdiff_t>(n));
    }
  }
  while (left > 0) {
    Batch b;
    Status st = reader_->next(&b);
    if (!st.is_ok()) return st;
    const size_t n = static_cast<size_t>(std::min<uint64_t>(left, b.size()));
    visit(n == b.size() ? b : b.slice(0, n));
    left -= n;
    if (n < b.size()) {  // keep the rest for the next take
      ids_.assign(b.row_ids.begin() + static_cast<std::ptrdiff_t>(n), b.row_ids.end());
      rows_.clear();
      for (size_t i = n; i < b.size(); ++i) rows_.add_row(b.labels[i], b.row_indices(i), b.row_values(i));
    }
  }
  return Status::ok();
}

}  // namespace agld::sampler
