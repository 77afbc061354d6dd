// Readers: batches of rows from a store, in one of several access orders, within a memory
// share. docs/readers.md is the contract this header implements.
//
// One cursor contract for every order (leveldb's iterator, xgboost's prefetch ring): an
// access order is a pure function of (seed, store shape) that yields the endless sequence
// of rows to visit; a background thread walks that sequence ahead of the consumer,
// decompressing the chunks it needs into a cache bounded by bytes; next() gathers the
// next batch_size rows of the sequence. The sequence of row ids depends on nothing else:
// not on the batch size, the prefetch depth, the thread's timing or the memory share.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

// One row of a batch: views of its indices and values.
struct BatchRow {
  const uint32_t* indices = nullptr;
  const float* values = nullptr;  // nnz of them (1 where the store holds none)
  uint32_t nnz = 0;
};

// One batch: n rows, views into the reader's memory (the decoded chunks themselves where it
// can: no row is copied unless it must be). Valid until the next call to Reader::next() or
// the reader's destruction.
struct Batch {
  std::span<const uint64_t> row_ids;  // n global row numbers, in the order's sequence
  std::span<const double> labels;     // n; binary labels mapped to +1 / -1
  std::span<const BatchRow> rows;     // n

  size_t size() const { return row_ids.size(); }
  std::span<const uint32_t> row_indices(size_t i) const { return {rows[i].indices, rows[i].nnz}; }
  std::span<const float> row_values(size_t i) const { return {rows[i].values, rows[i].nnz}; }
  uint64_t nnz() const {
    uint64_t n = 0;
    for (const BatchRow& r : rows) n += r.nnz;
    return n;
  }
  // Rows [from, from + n), as a batch (views of the same memory).
  Batch slice(size_t from, size_t n) const {
    return Batch{row_ids.subspan(from, n), labels.subspan(from, n), rows.subspan(from, n)};
  }
};

// Appends the row views of CSR rows (offsets: rows + 1 entries into indices and values).
void append_row_views(std::span<const uint64_t> offsets, const uint32_t* indices,
                      const float* values, std::vector<BatchRow>* out);

// What a reader has done, counted over the batches delivered so far (so, apart from the
// gauges marked as such, the same whatever the prefetch depth or the thread's timing).
struct ReaderStats {
  uint64_t rows = 0;                  // rows delivered
  uint64_t batches = 0;               // batches delivered
  double passes = 0;                  // rows / rows in the store
  uint64_t chunk_visits = 0;          // runs of consecutive rows in one chunk (read whole)
  uint64_t cache_hits = 0;            // visits whose chunk was in the cache
  uint64_t cache_misses = 0;          // visits that had to read and decompress the chunk
  uint64_t chunks_decompressed = 0;   // = cache_misses
  uint64_t bytes_read = 0;            // stored bytes read from the file: whole chunks, and
                                      // the pages of rows read on their own (direct_rows)
  uint64_t bytes_decompressed = 0;    // raw bytes of the chunks read whole
  double wait_seconds = 0;            // time next() spent waiting for data (gauge)
  uint64_t cache_capacity_bytes = 0;  // the cache's part of the share
  uint64_t cache_bytes = 0;           // decoded chunks in the cache now (with direct rows:
                                      // the chunks' row indexes, which use the cache's part)
  uint64_t cache_peak_bytes = 0;      // at most cache_capacity_bytes
  uint64_t decoded_peak_bytes = 0;    // decoded chunks alive at once: cache + ring (gauge)
  uint64_t batch_bytes = 0;           // the batch buffers' capacity
  bool whole_store_cached = false;    // every chunk fits the cache: later passes read nothing
  // rr and ra on a codec-none store larger than the cache read each row on its own (its
  // label, indices and values) instead of its whole chunk; such rows are not chunk visits.
  uint64_t direct_rows = 0;      // rows read on their own
  uint64_t row_index_reads = 0;  // chunks' row indexes read (row lengths, value bitmap)
                                 // to locate direct rows (the others were in memory)
};

struct ReaderOptions {
  std::string order = "ca";  // a name from reader_orders()
  size_t batch_size = 1024;  // rows a batch, >= 1 (all streams together)
  uint64_t seed = 0;
  // Several independent sequences of the order in one reader, one seed each (seed is then
  // unused): every batch holds batch_size / streams.size() rows of each stream, stream 0's
  // first, each stream's rows exactly those a one-stream reader with its seed would yield.
  // The chunks the streams share are read and decoded once (one cache, one prefetch ring).
  // batch_size must be a multiple of the number of streams. Empty: one stream, `seed`.
  std::vector<uint64_t> streams;
  // Where each stream's sequence starts: a reader opened with start = s yields the rows of
  // the sequence from row s on, as a reader from 0 would after s rows (a run resumed from a
  // checkpoint; the orders position themselves without reading what they skip).
  uint64_t start = 0;
  // ca: start pass p at chunk floor(frac(p / phi) C) rather than the first, for a consumer
  // that refreshes a snapshot once a pass (docs/readers.md, "Why ca can move its start").
  bool ca_moving_start = false;
  // The reader's share of the process's memory budget: decoded chunks (cache and prefetch
  // ring), the store's file pages while a chunk is read, and the batch buffers.
  uint64_t memory = uint64_t{256} << 20;
  // How many chunk visits the background thread may prepare ahead of the consumer; 0 runs
  // no thread (the consumer reads chunks itself); kAutoPrefetch (the default): as deep as
  // the share allows, from kMinAutoPrefetch to kMaxAutoPrefetch (docs/readers.md). Does not
  // change what is read.
  static constexpr size_t kAutoPrefetch = std::numeric_limits<size_t>::max();
  static constexpr size_t kMinAutoPrefetch = 4, kMaxAutoPrefetch = 16;
  size_t prefetch = kAutoPrefetch;
  // Threads decompressing chunks, with prefetch > 0 (0: one per core, at most 4); four more
  // threads read them. Does not change what is read.
  size_t decode_threads = 0;
  // rr and ra on a codec-none store larger than the cache: read each row on its own rather
  // than its whole chunk (docs/readers.md). Off: every row's chunk is read and decoded.
  bool direct_rows = true;
};

// A registered access order.
struct ReaderOrderInfo {
  std::string name;
  std::string summary;
};
std::vector<ReaderOrderInfo> reader_orders();

class Reader {
 public:
  // Fails with invalid_argument for an unknown order, a batch size of 0, or a memory
  // share too small for the prefetch ring and one batch (the message says what is needed).
  static Status open(const Store& store, const ReaderOptions& options,
                     std::unique_ptr<Reader>* out);
  virtual ~Reader() = default;

  // The next batch_size rows of the order's sequence, which never ends (passes wrap). A
  // failure (a corrupt chunk, an I/O error), whichever thread met it, is returned here
  // once every row before it has been delivered, and again on every later call.
  virtual Status next(Batch* out) = 0;
  virtual const ReaderStats& stats() const = 0;
  // The options the reader runs with: those given, with an automatic prefetch depth resolved.
  virtual const ReaderOptions& options() const = 0;
};

// The options a reader opened with these would run with: an automatic prefetch depth is
// the deepest from kMaxAutoPrefetch down to kMinAutoPrefetch whose reserve fits the share
// and which keeps the whole store in memory if kMinAutoPrefetch would.
ReaderOptions resolve_reader_options(const Store& store, const ReaderOptions& options);

// The smallest memory share Reader::open accepts for these options on this store (with an
// automatic prefetch depth: at kMinAutoPrefetch).
uint64_t reader_min_memory(const Store& store, const ReaderOptions& options);
// The smallest share at which rr and ra read rows on their own (ReaderOptions::direct_rows)
// rather than whole chunks, when the store does not fit it; 0 when they never would (another
// order, a compressed store, direct_rows off). The cache's part is then the share less this.
uint64_t reader_direct_rows_memory(const Store& store, const ReaderOptions& options);
// The smallest share at which the reader keeps the whole store decoded (later passes
// read nothing: ReaderStats::whole_store_cached).
uint64_t reader_whole_store_memory(const Store& store, const ReaderOptions& options);

}  // namespace agld
