// The reader's producer: walks the order's sequence ahead of the consumer, looks up the
// chunks it needs in the cache, places those it must read (read and decoded by the decode
// pool, or by itself with prefetch 0) or, with direct rows, reads each row on its own, and
// fills slots of rows for the consumer (reader.cpp). Internal to the reader layer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"
#include "reader/budget.hpp"
#include "reader/chunk_cache.hpp"
#include "reader/chunk_memory.hpp"
#include "reader/decode_pool.hpp"
#include "reader/order.hpp"
#include "reader/row_reader.hpp"

namespace agld::reader {

// How a reader reads, decided when it opens.
struct Setup {
  uint64_t capacity = 0;  // the cache's part of the share (direct rows: for row indexes)
  bool fits = false;      // every decoded chunk fits the cache
  bool direct = false;    // rows read on their own (rr, ra; codec none; out of core)
  size_t threads = 0;     // decode threads
  size_t read_threads = 0;
  size_t held = 0;        // held_chunks(): chunks kept outside the cache for other streams
  size_t window = 0;      // with held chunks: a batch's rows, at most the plan's look-ahead
};

// A row planned ahead of the consumer: where it is, what locating it cost.
struct Planned {
  RowRef ref;
  RowSpan span;
  Status status;            // a failure to read its chunk's row index
  bool index_read = false;  // its chunk's row index was read for it
  uint64_t bytes = 0;       // bytes read for it (whole pages)
  uint64_t asked = 0;       // bytes of its pages asked for
};

struct Segment {
  std::shared_ptr<ChunkBox> chunk;  // null: rows read on their own, in the slot's direct rows
  size_t end = 0;                   // the segment's rows are slot.rows[previous end, end)
};

// Rows handed from the producer to the consumer, with what producing them cost.
struct Slot {
  std::vector<uint32_t> rows;  // rows within their chunks (direct rows: within `direct`)
  std::vector<Segment> segments;
  DirectRows direct;
  bool oversized = false;  // holds a row longer than kDirectSlotNnz
  Status status;           // a failure ends the stream: delivered after the rows before it
  uint64_t visits = 0, hits = 0, misses = 0, bytes_read = 0, bytes_decompressed = 0;
  uint64_t direct_rows = 0, index_reads = 0;
  uint64_t cache_bytes = 0, cache_peak = 0;
  void clear() {
    rows.clear();
    segments.clear();
    direct.clear();
    oversized = false;
    status = Status::ok();
    visits = hits = misses = bytes_read = bytes_decompressed = 0;
    direct_rows = index_reads = 0;
  }
};

// The order's sequence from the current row on, fetched from the cursor as needed.
class Plan {
 public:
  explicit Plan(std::unique_ptr<OrderCursor> cursor) : cursor_(std::move(cursor)) {}
  // The row i places after the current one (0: the current row).
  RowRef ahead(size_t i) {
    while (head_ + i >= rows_.size()) {
      if (head_ >= kPlanKeep && 2 * head_ >= rows_.size()) {  // what was consumed goes
        rows_.erase(rows_.begin(), rows_.begin() + static_cast<std::ptrdiff_t>(head_));
        head_ = 0;
      }
      cursor_->next(&rows_);
    }
    return rows_[head_ + i];
  }
  // The rows planned from the current one on (at least one).
  std::span<const RowRef> upcoming() {
    ahead(0);
    return std::span<const RowRef>(rows_).subspan(head_);
  }
  void pop(size_t n = 1) { head_ += n; }

 private:
  std::unique_ptr<OrderCursor> cursor_;
  std::vector<RowRef> rows_;
  size_t head_ = 0;
};

// Walks the order's sequence and fills slots. Used by one thread at a time.
class Producer {
 public:
  Producer(const Store& store, std::unique_ptr<OrderCursor> cursor, const Setup& setup,
           std::shared_ptr<ChunkMemory> memory, uint64_t ahead_cap);

  uint64_t cache_capacity() const { return direct_ ? index_cache_.capacity() : cache_.capacity(); }

  // Direct rows: the consumer has let go of the slot with a row longer than a slot holds.
  void release_oversized() {
    oversized_busy_.store(false);
    oversized_busy_.notify_all();
  }
  // The reader is going: a wait for the consumer ends.
  void stop() {
    stopping_.store(true);
    release_oversized();
  }

  // The next rows: up to kSlotRows, and no further than the first chunk read from the file.
  void fill(Slot* slot);

  // The chunks other streams are in, most recently left last: chunk k's, taken out (it
  // becomes the current chunk), or null.
  std::shared_ptr<ChunkBox> take_held(uint32_t k);
  // The chunk the producer leaves, kept for the stream that will come back to it (when the
  // cache does not hold it). When the producer already holds as many as there are other
  // streams, the one the plan needs last goes: one no stream's next rows are in (a chunk a
  // stream has just left for its next), else the one needed furthest ahead in a batch's rows.
  void hold(uint32_t k, std::shared_ptr<ChunkBox> c);

  // Direct rows: up to kDirectSlotRows rows and kDirectSlotNnz entries (or one longer row),
  // each read on its own.
  void fill_direct(Slot* slot);

 private:
  // Direct rows: locates the rows after the consumer's and asks for their pages, up to
  // kRowsAhead rows or ahead_cap_ bytes of pages (at least one row). A chunk's row index is
  // read when a row of it is planned and not in the index cache. All in the order of the
  // sequence, and the costs are counted when the row is delivered.
  void plan_rows();

  // Direct rows: before the row at plan position `at` (counted from the start) is planned,
  // asks for the row indexes, not in the cache, of the chunks of the next kRowsAhead rows
  // (up to ahead_cap_ bytes of pages), so that they arrive together rather than one after
  // the other. The request for the row at `at` is then either used (its index is read
  // now) or dropped (an earlier row read the index).
  void hint_indexes(uint64_t at);

  // Places chunk k in the cache and has it read and decoded (by a decode thread, or now).
  std::shared_ptr<ChunkBox> start_read(uint32_t k, Slot* slot);

  // Reads chunk k's stored bytes into buf, past the page cache (they are read once: a
  // decoded chunk the cache keeps is kept decoded); anything thrown (the buffer's
  // allocation) becomes the chunk's failure.
  Status read(size_t k, ReadBuffer* buf, ByteSpan* bytes) const;

  // Checks and decodes a placed chunk from the bytes read (or fails it with the read's
  // status), and wakes the consumer.
  void decode(ChunkBox* box, const Status& read, ByteSpan bytes);

  const Store& store_;
  Plan plan_;
  reader::ChunkCache<ChunkBox> cache_;
  std::shared_ptr<ChunkMemory> memory_;
  const uint64_t charge_max_;  // what a chunk counts for in the cache out of core; 0: its own size
  // Direct rows.
  const bool direct_;
  RowReader rows_;
  reader::ChunkCache<RowIndex> index_cache_;
  std::vector<Planned> ahead_;  // a ring: rows at plan positions 0 .. ahead_count_ - 1
  size_t ahead_head_ = 0, ahead_count_ = 0;
  uint64_t ahead_bytes_ = 0;
  const uint64_t ahead_cap_;
  uint64_t popped_ = 0;                              // rows of the plan delivered
  uint64_t hint_next_ = 0;                           // the next plan position to hint for
  std::deque<std::pair<uint64_t, uint32_t>> hints_;  // (plan position, chunk) asked for
  std::vector<uint8_t> index_hinted_;                // by chunk: in hints_
  uint64_t hint_bytes_ = 0;
  std::atomic<bool> oversized_busy_{false};
  std::atomic<bool> stopping_{false};
  Status failed_;
  std::shared_ptr<ChunkBox> current_;
  uint32_t current_k_ = 0;
  // Several streams: chunks left for another stream's that the cache did not keep (hold()).
  const size_t held_cap_;
  const size_t window_;  // rows of the plan looked at to choose which held chunk goes
  std::vector<std::pair<uint32_t, std::shared_ptr<ChunkBox>>> held_;
  ReadBuffer buffer_;  // for the chunks read without decode threads
  uint64_t placed_ = 0;
  std::unique_ptr<DecodePool> pool_;  // last: its threads use everything above
};

}  // namespace agld::reader
