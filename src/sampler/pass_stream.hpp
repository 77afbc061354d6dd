// Exact passes over a store read in stored order: take(N) visits every row exactly once,
// whatever the reader's batch size. Rows of the reader's last batch beyond the count are
// kept (copied) for the next take(), so consecutive takes continue the cyclic stream.
// Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "agld/reader.hpp"
#include "agld/sparse.hpp"

namespace agld::sampler {

class PassStream {
 public:
  // reader: opened at row `start` of its sequence (ReaderOptions::start).
  explicit PassStream(std::unique_ptr<Reader> reader, uint64_t start = 0)
      : reader_(std::move(reader)), start_(start) {}

  // Calls visit with consecutive pieces of the stream that together hold `count` rows.
  Status take(uint64_t count, const std::function<void(const Batch&)>& visit);
  const Reader& reader() const { return *reader_; }
  // Rows of the sequence visited so far (from its row 0): where a stream resumed from a
  // checkpoint starts.
  uint64_t position() const { return start_ + reader_->stats().rows - ids_.size(); }

 private:
  Batch carry_view(size_t from, size_t n);

  std::unique_ptr<Reader> reader_;
  uint64_t start_;
  // Rows delivered by the reader and not yet visited (in CSR, offsets from 0).
  std::vector<uint64_t> ids_;
  SparseRows rows_;
  std::vector<BatchRow> views_;  // of rows_, for carry_view
};

}  // namespace agld::sampler
