// The reader: an order's cursor walked by a producer (on a background thread, or inline
// with prefetch 0) that looks the chunks it needs up in a byte-bounded cache, hands the
// chunks it must read to read threads and then decode threads (or reads and decodes them
// itself, with prefetch 0), and hands "slots" of rows through a bounded ring to the
// consumer, which waits for each chunk where it first needs it and gathers batches of row
// views. With direct rows (rr, ra on a
// codec-none store that does not fit), the producer reads each row on its own instead
// (reader/row_reader.hpp): slots then carry the rows themselves, and the cache holds the
// chunks' row indexes.
//
// Determinism: the producer alone decides, in the order of the sequence, which visits hit
// the cache and which read their chunk, and what the cache keeps; read and decode threads
// only fill in chunks already placed. So every statistic is a function of the sequence, and a chunk
// that fails to decode fails at the consumer, after every row before it.
//
// Memory (docs/readers.md): every decoded chunk is counted from its decode to its last
// release. Live decoded bytes are the cache (<= its capacity, which counts a chunk from the
// moment it is placed, decoded or not) plus chunks read but not kept by the cache (once it
// is full it keeps what it holds: reader/chunk_cache.hpp), pinned by the slots not yet
// consumed, plus the buffers kept for reuse. A slot holds at most one chunk read from the
// file, so at most (prefetch + 2) slots are unconsumed (ring, the consumer's, the
// producer's), and as many chunks are read at once or held outside the cache; plus
// kHeldSlots consumed slots whose rows the batch just delivered points into. Out of core,
// decoded chunks' buffers are reused (ChunkMemory), so that reading allocates nothing once
// the cache has filled.
#include "agld/reader.hpp"
//
// This file is the consumer (the Reader itself) and Reader::open; the producer is in
// producer.cpp, the read and decode threads in decode_pool.cpp, the decoded chunks' buffers in
// chunk_memory.cpp, and the memory reserve in budget.cpp.
#include "agld/reader.hpp"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>

#include "reader/budget.hpp"
#include "reader/chunk_memory.hpp"
#include "reader/decode_pool.hpp"
#include "reader/interleave.hpp"
#include "reader/order.hpp"
#include "reader/producer.hpp"
#include "reader/row_reader.hpp"

namespace agld {
namespace {

using reader::ChunkBox;
using reader::ChunkMemory;
using reader::ChunkShape;
using reader::decode_threads;
using reader::DirectRows;
using reader::held_chunks;
using reader::kHeldSlots;
using reader::kept_buffers;
using reader::largest_shape;
using reader::look_ahead_rows;
using reader::name_this_thread;
using reader::OrderCursor;
using reader::Producer;
using reader::read_threads;
using reader::Reserve;
using reader::reserve_direct;
using reader::reserve_for;
using reader::row_ahead_bytes;
using reader::RowReader;
using reader::Segment;
using reader::Setup;
using reader::Slot;
using reader::whole_store_fits;

class ReaderImpl final : public Reader {
 public:
  ReaderImpl(const Store& store, const ReaderOptions& options, std::unique_ptr<OrderCursor> cursor,
             const Setup& setup)
      : store_(store),
        options_(options),
        memory_(std::make_shared<ChunkMemory>(
            kept_buffers(options), setup.fits || setup.direct ? ChunkShape{} : largest_shape(store))),
        producer_(store, std::move(cursor), setup, memory_, row_ahead_bytes(options)) {
    const size_t n = options.batch_size;
    row_ids_.reserve(n);
    labels_.reserve(n);
    rows_.reserve(n);
    stats_.cache_capacity_bytes = setup.capacity;
    stats_.whole_store_cached = setup.fits;
    if (options_.prefetch > 0) {
      worker_ = std::thread([this] {
        name_this_thread("agld-produce");
        work();
      });
    }
  }

  ~ReaderImpl() override {
    producer_.stop();
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

  // The rows of a batch point into the slots they came from: the current slot, and up to
  // kHeldSlots slots before it, which are held (not given back to the producer) until the
  // next call. Rows of any further slot, and of a slot with a row too long for a slot (the
  // producer waits for it to come back), are copied into the batch's own buffers.
  Status next(Batch* out) override {
    if (!failed_.is_ok()) return failed_;
    release_held();
    const size_t n = options_.batch_size;
    row_ids_.clear();
    labels_.clear();
    rows_.clear();
    copied_.clear();
    nnz_ = 0;
    uint32_t longest_ones = 0;  // the longest row of a chunk without values
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
      const size_t stop = std::min(s.end, pos_ + (n - row_ids_.size()));
      // The batch may point into this slot if it ends in it, or if the slot, once left, can
      // be held.
      const bool view = !slot_->oversized && (held_.size() < kHeldSlots ||
                                              slot_->rows.size() - pos_ >= n - row_ids_.size());
      slot_viewed_ |= view;
      if (!s.chunk) {  // rows read on their own
        const DirectRows& d = slot_->direct;
        for (; pos_ < stop; ++pos_) {
          const uint32_t i = slot_->rows[pos_];
          row_ids_.push_back(d.ids[i]);
          labels_.push_back(d.labels[i]);
          const uint64_t b = d.offsets[i];
          const auto len = static_cast<uint32_t>(d.offsets[i + 1] - b);
          if (view) {
            rows_.push_back({d.indices.data() + b, d.values.data() + b, len});
          } else {
            copy(d.indices.data() + b, d.values.data() + b, len);
          }
        }
        continue;
      }
      const ChunkBox& box = *s.chunk;
      wait_for(box);
      if (!box.status.is_ok()) {
        failed_ = box.status;
        return failed_;
      }
      const DecodedChunk& c = box.chunk();
      const uint32_t* offsets = c.offsets().data();
      const double* labels = c.labels().data();
      const uint32_t* idx = c.indices().data();
      const float* val = c.has_values() ? c.values().data() : nullptr;
      const uint64_t first = c.first_row();
      for (; pos_ < stop; ++pos_) {
        const uint32_t r = slot_->rows[pos_];
        row_ids_.push_back(first + r);
        labels_.push_back(labels[r]);
        const uint32_t b = offsets[r], len = offsets[r + 1] - b;
        if (!val) longest_ones = std::max(longest_ones, len);
        if (view) {
          rows_.push_back({idx + b, val ? val + b : nullptr, len});
        } else {
          copy(idx + b, val ? val + b : nullptr, len);
        }
      }
    }
    // Now that the buffers have stopped growing: the copied rows' views, and the values of
    // rows from chunks without values.
    for (const auto& [i, at] : copied_) {
      rows_[i].indices = indices_.data() + at;
      rows_[i].values = values_.data() + at;
    }
    if (ones_.size() < longest_ones) ones_.resize(longest_ones, 1.0f);
    for (BatchRow& r : rows_) {
      if (!r.values) r.values = ones_.data();
    }
    out->row_ids = row_ids_;
    out->labels = labels_;
    out->rows = rows_;
    delivered(n);
    return Status::ok();
  }

 private:
  // Waits for a chunk still being decoded, counting the time as waiting for data.
  void wait_for(const ChunkBox& box) {
    if (box.done()) return;
    const auto t0 = std::chrono::steady_clock::now();
    box.wait();
    stats_.wait_seconds += seconds_since(t0);
  }

  // Appends a copy of a row to the batch (values null: all 1); its view is set once the
  // batch is complete (the buffers may grow until then).
  void copy(const uint32_t* idx, const float* val, uint32_t len) {
    if (nnz_ + len > indices_.size()) {
      const size_t grown = std::max<size_t>(nnz_ + len, 2 * indices_.size());
      indices_.resize(grown);
      values_.resize(grown);
    }
    if (len > 0) {  // (an empty row: there may be no buffer yet)
      std::memcpy(indices_.data() + nnz_, idx, 4 * size_t{len});
      if (val) {
        std::memcpy(values_.data() + nnz_, val, 4 * size_t{len});
      } else {
        std::fill_n(values_.data() + nnz_, len, 1.0f);
      }
    }
    copied_.push_back({rows_.size(), nnz_});
    rows_.push_back({nullptr, nullptr, len});
    nnz_ += len;
  }

  void delivered(size_t n) {
    stats_.rows += n;
    ++stats_.batches;
    stats_.passes = static_cast<double>(stats_.rows) / static_cast<double>(store_.meta().rows);
    stats_.decoded_peak_bytes = memory_->peak();
    stats_.batch_bytes = 8 * (row_ids_.capacity() + labels_.capacity()) +
                         sizeof(BatchRow) * rows_.capacity() +
                         16 * copied_.capacity() +
                         4 * (indices_.capacity() + values_.capacity() + ones_.capacity());
  }

  // Gives the slots the previous batch held back to the producer.
  void release_held() {
    slot_viewed_ = false;
    if (held_.empty()) return;
    for (std::unique_ptr<Slot>& h : held_) recycle(std::move(h));
    held_.clear();
  }

  // A consumed slot goes back to the producer to be filled again (its chunks released now).
  void recycle(std::unique_ptr<Slot> done) {
    done->segments.clear();  // release the chunks now
    if (done->oversized) {
      done->direct.release();
      producer_.release_oversized();
    }
    if (options_.prefetch == 0) {
      spare_ = std::move(done);
    } else {
      std::lock_guard<std::mutex> lock(mu_);
      free_.push_back(std::move(done));
    }
  }

  // Replaces the consumed slot by the next one, and counts what producing it cost.
  Status advance() {
    std::unique_ptr<Slot> done = std::move(slot_);
    if (done) {
      if (slot_viewed_) {
        held_.push_back(std::move(done));  // the batch being gathered points into it
      } else {
        recycle(std::move(done));
      }
      slot_viewed_ = false;
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
    stats_.direct_rows += s.direct_rows;
    stats_.row_index_reads += s.index_reads;
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
  std::shared_ptr<ChunkMemory> memory_;  // outlives every chunk this reader holds
  Producer producer_;
  ReaderStats stats_;
  Status failed_;

  // The consumer's slot and position in it.
  std::unique_ptr<Slot> slot_;
  size_t pos_ = 0, seg_ = 0;
  std::unique_ptr<Slot> spare_;  // prefetch 0: the slot to refill

  std::vector<std::unique_ptr<Slot>> held_;  // consumed, and viewed by the current batch
  bool slot_viewed_ = false;                 // the current slot is viewed by the batch

  std::vector<uint64_t> row_ids_;
  std::vector<double> labels_;
  std::vector<BatchRow> rows_;
  std::vector<float> ones_;  // the values of rows of chunks without values
  std::vector<std::pair<size_t, size_t>> copied_;  // (row in the batch, where its copy is)
  std::vector<uint32_t> indices_;  // copied rows: the first nnz_ are the batch's
  std::vector<float> values_;
  size_t nnz_ = 0;

  // The ring, shared with the worker.
  std::mutex mu_;
  std::condition_variable not_empty_, not_full_;
  std::deque<std::unique_ptr<Slot>> ring_;
  std::vector<std::unique_ptr<Slot>> free_;
  bool stop_ = false;
  std::thread worker_;  // last: started when everything above exists, joined first
};

}  // namespace

void append_row_views(std::span<const uint64_t> offsets, const uint32_t* indices,
                      const float* values, std::vector<BatchRow>* out) {
  for (size_t i = 0; i + 1 < offsets.size(); ++i) {
    out->push_back({indices + offsets[i], values + offsets[i],
                    static_cast<uint32_t>(offsets[i + 1] - offsets[i])});
  }
}

std::vector<ReaderOrderInfo> reader_orders() {
  std::vector<ReaderOrderInfo> out;
  for (const reader::OrderInfo& o : reader::registered_orders()) {
    out.push_back({std::string(o.name), std::string(o.summary)});
  }
  return out;
}

Status Reader::open(const Store& store, const ReaderOptions& given,
                    std::unique_ptr<Reader>* out) {
  const ReaderOptions options = resolve_reader_options(store, given);
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
  if (!options.streams.empty() && options.batch_size % options.streams.size() != 0) {
    return Status::invalid_argument("a batch of " + std::to_string(options.batch_size) + " rows cannot hold " +
                                    std::to_string(options.streams.size()) + " streams equally");
  }
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
  Setup setup;
  setup.capacity = options.memory - r.total();
  setup.fits = whole_store_fits(store, setup.capacity);
  setup.threads = decode_threads(options);
  setup.read_threads = read_threads(options);
  setup.held = held_chunks(options);
  setup.window = std::min(options.batch_size, look_ahead_rows(store));
  // rr and ra on a codec-none store that does not fit: each row on its own (when the share
  // also covers that way's reserve, as it does unless chunks are tiny).
  if (options.direct_rows && order->random_rows && !setup.fits && RowReader::possible(store)) {
    const Reserve d = reserve_direct(store, options);
    if (options.memory >= d.total()) {
      setup.direct = true;
      setup.capacity = options.memory - d.total();
      setup.threads = 0;
      setup.read_threads = 0;
    }
  }
  std::unique_ptr<reader::OrderCursor> cursor;
  if (options.streams.empty()) {
    const bool moving = options.ca_moving_start && order->name == "ca";
    cursor = reader::positioned(moving ? reader::make_ca_moving_order(store) : order->make(store, options.seed),
                                options.start);
  } else {
    std::vector<std::unique_ptr<reader::OrderCursor>> streams;
    for (uint64_t seed : options.streams) streams.push_back(reader::positioned(order->make(store, seed), options.start));
    cursor = reader::interleave(std::move(streams), options.batch_size / options.streams.size());
  }
  *out = std::make_unique<ReaderImpl>(store, options, std::move(cursor), setup);
  return Status::ok();
}

}  // namespace agld
