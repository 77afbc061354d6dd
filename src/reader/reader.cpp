// The reader: an order's cursor walked by a producer (on a background thread, or inline
// with prefetch 0) that decodes the chunks it needs through a byte-bounded cache and
// hands "slots" of rows through a bounded ring to the consumer, which gathers batches.
//
// Memory (docs/readers.md): every decoded chunk is counted from its decode to its last
// release. Live decoded bytes are the cache (<= its capacity) plus chunks pinned by slots
// not yet consumed but already evicted. A slot holds at most one chunk read from the file,
// so at most (prefetch + 2) slots are unconsumed (ring, the consumer's, the producer's);
// each such read evicts at most two chunks' worth of bytes, hence the ring reserve of
// 2 (prefetch + 2) chunks.
#include "agld/reader.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "reader/chunk_cache.hpp"
#include "reader/order.hpp"

namespace agld {
namespace {

using reader::ChunkCache;
using reader::OrderCursor;
using reader::RowRef;

constexpr size_t kSlotRows = 8192;         // a slot closes at this many rows ...
constexpr uint64_t kPageSlack = 64 << 10;  // pages either side of a chunk, when rounding
constexpr uint64_t kDropMargin = 2 << 20;  // dropped either side of a chunk read
constexpr size_t kLookAheadRows = 1 << 20;  // how far ahead the plan is searched for the next chunk

// Bytes Store::read_chunk allocates for chunk c.
uint64_t decoded_bytes(const ChunkInfo& c) {
  const uint64_t raw_words = (uint64_t{c.raw_size} + 7) / 8;
  const uint64_t dense = (c.flags & kChunkSparseValues) ? (uint64_t{c.nnz} + 1) / 2 : 0;
  return 8 * (raw_words + dense) + 4 * (uint64_t{c.row_count} + 1);
}

struct Reserve {
  uint64_t ring = 0;   // decoded chunks outside the cache
  uint64_t file = 0;   // the store's pages of the chunk being read
  uint64_t batch = 0;  // batch buffers, slots, the cursor's block
  uint64_t total() const { return ring + file + batch; }
};

Reserve reserve_for(const Store& store, const ReaderOptions& o) {
  uint64_t max_decoded = 0, max_stored = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    max_decoded = std::max(max_decoded, decoded_bytes(store.chunk(k)));
    max_stored = std::max<uint64_t>(max_stored, store.chunk(k).stored_size);
  }
  const StoreMeta& m = store.meta();
  const uint64_t avg_nnz = m.rows ? (m.nnz + m.rows - 1) / m.rows : 0;
  Reserve r;
  // Two chunks per unconsumed slot (the header comment), and one for what the allocator
  // holds between a chunk freed and the next of another size (measured: about one chunk).
  r.ring = (2 * (o.prefetch + 2) + 1) * max_decoded;
  r.file = 2 * max_stored + 4 * kPageSlack;  // the chunk being read and the one asked for next
  r.batch = o.batch_size * (24 + 2 * 8 * avg_nnz) + 8 +   // batch buffers
            (o.prefetch + 2) * kSlotRows * 4 + 8 * 8192;  // slots, the cursor's block
  return r;
}

// A decoded chunk that counts itself in the reader's live bytes while it exists.
struct Accounting {
  std::atomic<uint64_t> live{0};
  std::atomic<uint64_t> peak{0};
  void add(uint64_t b) {
    const uint64_t now = live.fetch_add(b) + b;
    uint64_t p = peak.load();
    while (now > p && !peak.compare_exchange_weak(p, now)) {
    }
  }
};
struct CountedChunk {
  DecodedChunk chunk;
  uint64_t bytes = 0;
  std::shared_ptr<Accounting> acct;
  ~CountedChunk() {
    if (acct) acct->live.fetch_sub(bytes);
  }
};

struct Segment {
  std::shared_ptr<const DecodedChunk> chunk;
  size_t end = 0;  // the segment's rows are slot.rows[previous end, end)
};

// Rows handed from the producer to the consumer, with what producing them cost.
struct Slot {
  std::vector<uint32_t> rows;  // rows within their chunks
  std::vector<Segment> segments;
  Status status;  // a failure ends the stream: delivered after the rows before it
  uint64_t visits = 0, hits = 0, misses = 0, bytes_read = 0, bytes_decompressed = 0;
  uint64_t cache_bytes = 0, cache_peak = 0;
  void clear() {
    rows.clear();
    segments.clear();
    status = Status::ok();
    visits = hits = misses = bytes_read = bytes_decompressed = 0;
  }
};

// Walks the order's sequence and fills slots. Used by one thread at a time.
class Producer {
 public:
  Producer(const Store& store, std::unique_ptr<OrderCursor> cursor, uint64_t cache_capacity,
           std::shared_ptr<Accounting> acct)
      : store_(store),
        cursor_(std::move(cursor)),
        cache_(store.chunk_count(), cache_capacity),
        acct_(std::move(acct)) {}

  // The next rows: up to kSlotRows, and no further than the first chunk read from the file.
  void fill(Slot* slot) {
    slot->clear();
    if (!failed_.is_ok()) {
      slot->status = failed_;
      return;
    }
    bool read_one = false;
    while (slot->rows.size() < kSlotRows) {
      if (at_ == pending_.size()) {
        pending_.clear();
        at_ = 0;
        cursor_->next(&pending_);
      }
      const RowRef r = pending_[at_];
      if (!current_ || r.chunk != current_k_) {
        if (read_one) break;
        std::shared_ptr<const DecodedChunk> c = cache_.find(r.chunk);
        ++slot->visits;
        if (c) {
          ++slot->hits;
        } else {
          Status st = read(r.chunk, slot, &c);
          if (!st.is_ok()) {
            failed_ = st;
            current_.reset();
            if (slot->rows.empty()) slot->status = st;  // else: delivered by the next slot
            break;
          }
          read_one = true;
        }
        if (!slot->segments.empty()) slot->segments.back().end = slot->rows.size();
        current_ = std::move(c);
        current_k_ = r.chunk;
        slot->segments.push_back(Segment{current_, 0});
      } else if (slot->segments.empty()) {  // the chunk goes on from the previous slot
        slot->segments.push_back(Segment{current_, 0});
      }
      slot->rows.push_back(r.row);
      ++at_;
    }
    if (!slot->segments.empty()) slot->segments.back().end = slot->rows.size();
    slot->cache_bytes = cache_.bytes();
    slot->cache_peak = cache_.peak_bytes();
  }

  uint64_t cache_capacity() const { return cache_.capacity(); }

 private:
  Status read(uint32_t k, Slot* slot, std::shared_ptr<const DecodedChunk>* out) {
    const ChunkInfo& info = store_.chunk(k);
    auto holder = std::make_shared<CountedChunk>();
    store_.file().will_need(info.offset, info.stored_size);  // exactly its pages, no read-around
    // Ask for the next chunk of the plan too, so that its pages arrive while this one is
    // decoded (the kernel's own read-ahead is off out of core: advise_random).
    const ChunkInfo* ahead = next_chunk_after(k);
    if (ahead) store_.file().will_need(ahead->offset, ahead->stored_size);
    Status st = store_.read_chunk(k, &holder->chunk);
    // The stored bytes are not needed again: drop them from the page cache (and from this
    // process's mapping) now, whether or not the decoded chunk stays in the cache. With a
    // margin either side: the kernel caches and maps pages in folios of up to 2 MiB and
    // maps neighbours on a fault (fault-around), so pages of the chunks either side get
    // mapped while this one is read, and a drop of this chunk's range alone would leave
    // them (measured: ~10 MiB of stray mapped pages on a 100 MiB store). Only this thread
    // reads chunks, so no page dropped here is being read.
    const uint64_t lo = info.offset > kDropMargin ? info.offset - kDropMargin : 0;
    const uint64_t hi = info.offset + info.stored_size + kDropMargin;
    drop_except(lo, hi, ahead);
    if (!st.is_ok()) return st;
    holder->bytes = holder->chunk.memory_bytes();
    holder->acct = acct_;
    acct_->add(holder->bytes);
    ++slot->misses;
    slot->bytes_read += info.stored_size;
    slot->bytes_decompressed += info.raw_size;
    std::shared_ptr<const DecodedChunk> c(holder, &holder->chunk);
    evicted_.clear();
    cache_.insert(k, c, holder->bytes, &evicted_);
    *out = std::move(c);
    return Status::ok();
  }

  // The first chunk after k in the plan (fetching more of the sequence if needed), or null
  // when the plan only revisits k for a while.
  const ChunkInfo* next_chunk_after(uint32_t k) {
    for (size_t i = at_;; ++i) {
      if (i == pending_.size()) {
        if (pending_.size() - at_ > kLookAheadRows) return nullptr;
        pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(at_));
        i -= at_;  // what was consumed goes, so the plan does not grow with every fetch
        at_ = 0;
        cursor_->next(&pending_);  // the same sequence, fetched earlier
      }
      if (pending_[i].chunk != k) return &store_.chunk(pending_[i].chunk);
    }
  }

  // Drops [lo, hi) of the file from the page cache, except the look-ahead chunk's pages.
  void drop_except(uint64_t lo, uint64_t hi, const ChunkInfo* keep) {
    if (!keep || keep->offset >= hi || keep->offset + keep->stored_size <= lo) {
      store_.file().drop_cache(lo, hi - lo);
      return;
    }
    if (keep->offset > lo) store_.file().drop_cache(lo, keep->offset - lo);
    const uint64_t keep_end = keep->offset + keep->stored_size;
    if (keep_end < hi) store_.file().drop_cache(keep_end, hi - keep_end);
  }

  const Store& store_;
  std::unique_ptr<OrderCursor> cursor_;
  ChunkCache cache_;
  std::shared_ptr<Accounting> acct_;
  std::vector<RowRef> pending_;
  size_t at_ = 0;
  std::shared_ptr<const DecodedChunk> current_;
  uint32_t current_k_ = 0;
  std::vector<size_t> evicted_;
  Status failed_;
};

class ReaderImpl final : public Reader {
 public:
  ReaderImpl(const Store& store, const ReaderOptions& options, std::unique_ptr<OrderCursor> cursor,
             uint64_t cache_capacity)
      : store_(store),
        options_(options),
        acct_(std::make_shared<Accounting>()),
        producer_(store, std::move(cursor), cache_capacity, acct_) {
    const StoreMeta& m = store.meta();
    const uint64_t avg_nnz = m.rows ? (m.nnz + m.rows - 1) / m.rows : 0;
    const size_t n = options.batch_size;
    row_ids_.reserve(n);
    labels_.reserve(n);
    offsets_.reserve(n + 1);
    indices_.reserve(n * avg_nnz);
    values_.reserve(n * avg_nnz);
    stats_.cache_capacity_bytes = cache_capacity;
    uint64_t total = 0;
    for (size_t k = 0; k < store.chunk_count(); ++k) total += decoded_bytes(store.chunk(k));
    stats_.whole_store_cached = total <= cache_capacity;
    // Out of core, the reader asks for exactly each chunk's pages (will_need) and drops them
    // after decoding; the kernel's own read-ahead would bring in neighbours that, arriving
    // late on a busy disk, stay in the page cache past the drop and break the budget.
    if (!stats_.whole_store_cached) store.file().advise_random();
    if (options_.prefetch > 0) worker_ = std::thread([this] { work(); });
  }

  ~ReaderImpl() override {
    if (worker_.joinable()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        stop_ = true;
      }
      not_full_.notify_all();
      worker_.join();
    }
  }

  const ReaderStats& stats() const override { return stats_; }
  const ReaderOptions& options() const override { return options_; }

  Status next(Batch* out) override {
    if (!failed_.is_ok()) return failed_;
    const size_t n = options_.batch_size;
    row_ids_.clear();
    labels_.clear();
    offsets_.assign(1, 0);
    indices_.clear();
    values_.clear();
    while (row_ids_.size() < n) {
      if (!slot_ || pos_ == slot_->rows.size()) {
        Status st = advance();
        if (!st.is_ok()) {
          failed_ = st;
          return st;
        }
        continue;
      }
      while (slot_->segments[seg_].end == pos_) ++seg_;
      const Segment& s = slot_->segments[seg_];
      const DecodedChunk& c = *s.chunk;
      const size_t stop = std::min(s.end, pos_ + (n - row_ids_.size()));
      const auto offsets = c.offsets();
      const bool has_values = c.has_values();
      for (; pos_ < stop; ++pos_) {
        const uint32_t r = slot_->rows[pos_];
        row_ids_.push_back(c.first_row() + r);
        labels_.push_back(c.labels()[r]);
        const auto idx = c.indices().subspan(offsets[r], offsets[r + 1] - offsets[r]);
        indices_.insert(indices_.end(), idx.begin(), idx.end());
        if (has_values) {
          const auto val = c.values().subspan(offsets[r], idx.size());
          values_.insert(values_.end(), val.begin(), val.end());
        } else {
          values_.resize(values_.size() + idx.size(), 1.0f);
        }
        offsets_.push_back(indices_.size());
      }
    }
    out->row_ids = row_ids_;
    out->labels = labels_;
    out->offsets = offsets_;
    out->indices = indices_;
    out->values = values_;
    stats_.rows += n;
    ++stats_.batches;
    stats_.passes = static_cast<double>(stats_.rows) / static_cast<double>(store_.meta().rows);
    stats_.decoded_peak_bytes = acct_->peak.load();
    stats_.batch_bytes = 8 * (row_ids_.capacity() + labels_.capacity() + offsets_.capacity()) +
                         4 * (indices_.capacity() + values_.capacity());
    return Status::ok();
  }

 private:
  // Replaces the consumed slot by the next one, and counts what producing it cost.
  Status advance() {
    std::unique_ptr<Slot> done = std::move(slot_);
    if (done) {
      done->segments.clear();  // release the chunks now
      if (options_.prefetch == 0) {
        spare_ = std::move(done);
      } else {
        std::lock_guard<std::mutex> lock(mu_);
        free_.push_back(std::move(done));
      }
    }
    if (options_.prefetch == 0) {
      const auto t0 = std::chrono::steady_clock::now();
      slot_ = spare_ ? std::move(spare_) : std::make_unique<Slot>();
      fill(slot_.get());
      stats_.wait_seconds += seconds_since(t0);
    } else {
      std::unique_lock<std::mutex> lock(mu_);
      if (ring_.empty()) {
        const auto t0 = std::chrono::steady_clock::now();
        not_empty_.wait(lock, [this] { return !ring_.empty(); });
        stats_.wait_seconds += seconds_since(t0);
      }
      slot_ = std::move(ring_.front());
      ring_.pop_front();
      lock.unlock();
      not_full_.notify_one();
    }
    pos_ = 0;
    seg_ = 0;
    const Slot& s = *slot_;
    stats_.chunk_visits += s.visits;
    stats_.cache_hits += s.hits;
    stats_.cache_misses += s.misses;
    stats_.chunks_decompressed += s.misses;
    stats_.bytes_read += s.bytes_read;
    stats_.bytes_decompressed += s.bytes_decompressed;
    stats_.cache_bytes = s.cache_bytes;
    stats_.cache_peak_bytes = std::max(stats_.cache_peak_bytes, s.cache_peak);
    return s.status;
  }

  // Fills a slot, turning anything thrown (an allocation failure) into a Status.
  void fill(Slot* slot) {
    try {
      producer_.fill(slot);
    } catch (const std::exception& e) {
      slot->clear();
      slot->status = Status::internal(std::string("reader: ") + e.what());
    }
  }

  void work() {
    for (;;) {
      std::unique_ptr<Slot> slot;
      {
        std::lock_guard<std::mutex> lock(mu_);
        if (!free_.empty()) {
          slot = std::move(free_.back());
          free_.pop_back();
        }
      }
      if (!slot) slot = std::make_unique<Slot>();
      fill(slot.get());
      const bool failed = !slot->status.is_ok();
      {
        std::unique_lock<std::mutex> lock(mu_);
        not_full_.wait(lock, [this] { return stop_ || ring_.size() < options_.prefetch; });
        if (stop_) return;
        ring_.push_back(std::move(slot));
      }
      not_empty_.notify_one();
      if (failed) return;
    }
  }

  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  const Store& store_;
  const ReaderOptions options_;
  std::shared_ptr<Accounting> acct_;  // outlives every chunk this reader holds
  Producer producer_;
  ReaderStats stats_;
  Status failed_;

  // The consumer's slot and position in it.
  std::unique_ptr<Slot> slot_;
  size_t pos_ = 0, seg_ = 0;
  std::unique_ptr<Slot> spare_;  // prefetch 0: the slot to refill

  std::vector<uint64_t> row_ids_;
  std::vector<double> labels_;
  std::vector<uint64_t> offsets_;
  std::vector<uint32_t> indices_;
  std::vector<float> values_;

  // The ring, shared with the worker.
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::unique_ptr<Slot>> ring_;
  std::vector<std::unique_ptr<Slot>> free_;
  bool stop_ = false;
  std::thread worker_;  // last: started when everything above exists, joined first
};

}  // namespace

std::vector<ReaderOrderInfo> reader_orders() {
  std::vector<ReaderOrderInfo> out;
  for (const reader::OrderInfo& o : reader::registered_orders()) {
    out.push_back({std::string(o.name), std::string(o.summary)});
  }
  return out;
}

uint64_t reader_min_memory(const Store& store, const ReaderOptions& options) {
  return reserve_for(store, options).total();
}

Status Reader::open(const Store& store, const ReaderOptions& options,
                    std::unique_ptr<Reader>* out) {
  const reader::OrderInfo* order = reader::find_order(options.order);
  if (!order) {
    std::string names;
    for (const reader::OrderInfo& o : reader::registered_orders()) {
      names += (names.empty() ? "" : ", ") + std::string(o.name);
    }
    return Status::invalid_argument("unknown access order '" + options.order +
                                    "' (known: " + names + ")");
  }
  if (options.batch_size == 0) return Status::invalid_argument("batch size must be at least 1");
  if (store.meta().rows == 0) {
    return Status::invalid_argument(store.path() + ": the store has no rows to read");
  }
  const Reserve r = reserve_for(store, options);
  if (options.memory < r.total()) {
    return Status::invalid_argument(
        "memory share of " + std::to_string(options.memory) + " bytes is too small: reading " +
        store.path() + " with prefetch depth " + std::to_string(options.prefetch) +
        " and batches of " + std::to_string(options.batch_size) + " rows needs at least " +
        std::to_string(r.total()) + " bytes (" + std::to_string(r.ring) +
        " for decoded chunks in flight, " + std::to_string(r.file) + " for file pages, " +
        std::to_string(r.batch) + " for batches)");
  }
  *out = std::make_unique<ReaderImpl>(store, options, order->make(store, options.seed),
                                      options.memory - r.total());
  return Status::ok();
}

}  // namespace agld
