// ExternalShuffler: puts rows in a seeded uniformly random order within a memory bound,
// for inputs larger than memory. Each row gets a random 64-bit key (a hash of the seed and
// its row number, so the order does not depend on threads or timing); rows are sorted by
// key in memory and, when the buffer is full, spilled as sorted runs to unnamed temporary
// files that are merged at the end. Sorting by independent uniform keys is a uniform
// random permutation.
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "agld/sparse.hpp"
#include "agld/status.hpp"

namespace agld {

class ExternalShuffler {
 public:
  // memory: the bound on this shuffler's buffers; temp_dir: where runs go.
  ExternalShuffler(uint64_t seed, uint64_t memory, std::string temp_dir);
  ~ExternalShuffler();

  // Adds row r of src, whose number in the input is global_row.
  Status add(const SparseRows& src, size_t r, uint64_t global_row);
  // Ends the input; rows then come out in key order through next().
  Status finish();
  // Appends up to max_rows rows (and about max_bytes raw bytes) in shuffled order to out;
  // *done when all rows are out.
  Status next(SparseRows* out, uint64_t max_rows, uint64_t max_bytes, bool* done);

  uint64_t runs() const { return runs_.size(); }
  uint64_t memory_limit() const { return limit_; }

 private:
  struct Run;
  Status spill();
  uint64_t buffer_bytes() const;
  void sort_buffer();

  uint64_t seed_;
  uint64_t limit_;
  std::string temp_dir_;
  SparseRows buf_;
  std::vector<uint64_t> keys_;
  std::vector<uint32_t> order_;  // buffer rows in key order (after sort_buffer)
  size_t emitted_ = 0;           // in-memory mode: rows of order_ already emitted
  std::vector<std::unique_ptr<Run>> runs_;
  struct HeapItem {
    uint64_t key;
    size_t run;
    bool operator>(const HeapItem& o) const { return key != o.key ? key > o.key : run > o.run; }
  };
  std::priority_queue<HeapItem, std::vector<HeapItem>, std::greater<HeapItem>> heap_;
  bool finished_ = false;
};

}  // namespace agld
