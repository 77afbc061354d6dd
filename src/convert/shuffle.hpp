// ExternalShuffler: puts rows in a seeded uniformly random order within a memory bound,
// for inputs larger than memory. Each row gets a random 64-bit key (a bijective hash of the
// seed and its row number: distinct for distinct rows, and the order does not depend on
// threads or timing); rows are sorted by key in memory and, when the buffer is full, spilled
// as sorted runs to anonymous temporary files (FileSystem::create_scratch) that are merged at
// the end. Sorting by
// independent uniform keys is a uniform random permutation.
//
// The buffer is half the memory: each row a record in large blocks (on huge pages where the
// kernel gives them), written once and kept from one run to the next, and a slot (key,
// record) a row, which is what is sorted. So a row is copied in once and out once, and
// neither growing arrays nor page faults are paid again for every run.
//
// At most fan_in() runs are merged at once (each needs a read buffer and a descriptor):
// when fan_in() runs of one level have been spilled, they are merged into one run of the
// next level, as in a log-structured merge, so a small --memory on a large input costs
// another pass over the spilled rows a level rather than running out of memory or
// descriptors. Runs are read from the front and the part already read is released to the
// file system (a hole punched), so the temporary files take about the spilled rows' size
// on disk, not twice that, while runs are merged into others or into the store.
#pragma once

#include <cstdint>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "agld/file.hpp"
#include "agld/sparse.hpp"
#include "agld/status.hpp"

namespace agld {

class ExternalShuffler {
 public:
  // memory: the bound on this shuffler's buffers; temp_dir: where runs go, through fs.
  ExternalShuffler(uint64_t seed, uint64_t memory, std::string temp_dir,
                   FileSystem& fs = FileSystem::local());
  ~ExternalShuffler();

  // Adds row r of src, whose number in the input is global_row.
  Status add(const SparseRows& src, size_t r, uint64_t global_row);
  // Ends the input; rows then come out in key order through next().
  Status finish();
  // Appends up to max_rows rows (and about max_bytes raw bytes) in shuffled order to out;
  // *done when all rows are out.
  Status next(SparseRows* out, uint64_t max_rows, uint64_t max_bytes, bool* done);

  uint64_t runs() const { return spilled_; }   // sorted runs spilled from memory
  uint64_t merges() const { return merges_; }  // runs written by merging others
  size_t open_runs() const { return runs_.size(); }
  size_t fan_in() const { return fan_in_; }
  // The most bytes the temporary runs held on disk at once.
  uint64_t peak_disk_bytes() const { return peak_disk_; }
  uint64_t memory_limit() const { return limit_; }

 private:
  struct Run;
  struct HeapItem {
    uint64_t key;
    size_t run;
    bool operator>(const HeapItem& o) const { return key != o.key ? key > o.key : run > o.run; }
  };
  using Heap = std::priority_queue<HeapItem, std::vector<HeapItem>, std::greater<HeapItem>>;

  Status new_run(std::unique_ptr<Run>* out);
  Status spill();
  // Merges runs [first, end) into one run of the given level that takes their place.
  Status merge_tail(size_t first, int level);
  // Readies runs [first, end) for merging: read buffers of the share of memory each, and
  // their first records in *heap.
  Status start_merge(size_t first, Heap* heap);
  // Room for a record of `bytes` in the blocks (a new block if none has it): its address.
  char* place(size_t bytes);
  // Whether a record of `bytes` more keeps the buffer within its share of memory.
  bool fits(size_t bytes) const;
  void sort_slots();
  void free_buffer();

  // A row in memory: its key and record ([f64 label][u32 nnz][u32 idx x nnz][f32 val x nnz]).
  struct Slot {
    uint64_t key;
    const char* record;
  };
  struct BlockFree {
    void operator()(char* p) const noexcept;
  };
  struct Block {
    std::unique_ptr<char, BlockFree> data;
    size_t size = 0;
  };

  FileSystem& fs_;
  uint64_t seed_;
  uint64_t limit_;
  uint64_t budget_;     // for the buffer: blocks and slots
  size_t block_bytes_;  // a block's size (a record larger than it gets a block of its own)
  size_t fan_in_;
  std::string temp_dir_;
  std::vector<Block> blocks_;  // kept from one run to the next
  uint64_t block_total_ = 0;   // bytes of blocks_
  size_t block_ = 0;           // the block being filled ...
  size_t block_used_ = 0;      // ... and its bytes used
  std::vector<Slot> slots_;
  size_t emitted_ = 0;  // in-memory mode: slots already emitted
  // Runs in input order (a run's rows all come before the next run's), levels
  // non-increasing: so equal keys, if there were any, would still come out in input order.
  std::vector<std::unique_ptr<Run>> runs_;
  Heap heap_;
  uint64_t spilled_ = 0, merges_ = 0;
  uint64_t disk_ = 0, peak_disk_ = 0;  // bytes the runs hold on disk
  bool finished_ = false;
};

}  // namespace agld
