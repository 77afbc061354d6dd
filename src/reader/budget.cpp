// The reader's memory (docs/readers.md): the reserve a share must cover for a reader's
// options on a store, the cache getting the rest, and the public questions asked of it (the
// least share, the share for direct rows or the whole store, the automatic prefetch depth).
#include "reader/budget.hpp"

#include <unistd.h>

#include <algorithm>
#include <thread>

#include "reader/chunk_memory.hpp"
#include "reader/order.hpp"
#include "reader/producer.hpp"
#include "reader/row_reader.hpp"

namespace agld {
namespace reader {
namespace {

// The plan (a vector: up to 2x its rows), and with several streams the rows each stream's
// cursor has yielded and the interleaving has not (a cursor's block at most, twice).
uint64_t plan_bytes(const Store& store, const ReaderOptions& o) {
  return 2 * 8 * (kPlanKeep + 2 * look_ahead_rows(store)) + o.streams.size() * 2 * 8 * look_ahead_rows(store);
}

}  // namespace

uint64_t row_ahead_bytes(const ReaderOptions& o) {
  return std::clamp<uint64_t>(o.memory / 32, 64 << 10, 1 << 20);
}

size_t look_ahead_rows(const Store& store) {
  size_t rows = 4096;
  for (size_t k = 0; k < store.chunk_count(); ++k)
    rows = std::max<size_t>(rows, store.chunk(k).row_count);
  return 2 * rows;
}

size_t decode_threads(const ReaderOptions& o) {
  if (o.prefetch == 0) return 0;
  size_t n = o.decode_threads;
  if (n == 0) n = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxDecodeThreads);
  return std::min(n, o.prefetch + 2);
}

size_t read_threads(const ReaderOptions& o) {
  return o.prefetch == 0 ? 0 : std::min<size_t>(kReadThreads, o.prefetch + 2);
}

size_t held_chunks(const ReaderOptions& o) { return o.streams.empty() ? 0 : o.streams.size() - 1; }

size_t kept_buffers(const ReaderOptions& o) {
  return (o.prefetch + 2 + kHeldSlots) + held_chunks(o) + std::max<size_t>(decode_threads(o), 1) + 1;
}

Reserve reserve_for(const Store& store, const ReaderOptions& o) {
  uint64_t max_stored = 0, max_raw = 0, max_table = 0, max_planes = 0, max_rows = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    const ChunkInfo& c = store.chunk(k);
    max_stored = std::max<uint64_t>(max_stored, c.stored_size);
    max_raw = std::max<uint64_t>(max_raw, c.raw_size);
    // A value table and the values looked up in it: at most 4 bytes each a nonzero.
    if (c.flags & kChunkValueDict) max_table = std::max<uint64_t>(max_table, 8 * uint64_t{c.nnz});
    // Packed planes unpacked: up to four of the index column, one of zeros and two of value
    // codes, a byte each a nonzero.
    if (c.flags & kChunkPackedPlanes) max_planes = std::max<uint64_t>(max_planes, 7 * uint64_t{c.nnz});
    // Packed rows: the label table (at most an entry a row), the labels looked up, the row
    // lengths, and their planes unpacked: at most 26 bytes a row.
    if (c.flags & kChunkPackedRows) max_rows = std::max<uint64_t>(max_rows, 26 * uint64_t{c.row_count});
  }
  const uint64_t max_decoded = max_decoded_bytes(store);
  const StoreMeta& m = store.meta();
  const uint64_t avg_nnz = m.rows ? (m.nnz + m.rows - 1) / m.rows : 0;
  Reserve r;
  // A chunk per unconsumed or held slot (reader.cpp's header comment), one for what the
  // allocator holds between a chunk freed and the next of another size (measured: about one
  // chunk), and the buffers kept for reuse. Each decoding thread also holds a zstd context,
  // the raw chunk it decompresses into, a chunk's value table and values, its planes unpacked
  // and its labels and row lengths (Store::decode_chunk).
  const uint64_t threads = std::max<size_t>(decode_threads(o), 1);
  r.ring = ((o.prefetch + 2 + kHeldSlots) + held_chunks(o) + 1 + kept_buffers(o)) * max_decoded +
           threads * (max_raw + max_table + max_planes + max_rows + (256 << 10));
  // The stored bytes of the chunks read and not yet decoded (ReadableFile::read_uncached;
  // none of them in the page cache): at most one a chunk in flight (prefetch + 2, the
  // unconsumed slots') and one a read thread, or the producer's one buffer.
  r.file = (o.prefetch == 0 ? 1 : o.prefetch + 2 + read_threads(o)) *
           (max_stored + 2 * ReadBuffer::kAlign);
  r.batch = o.batch_size * (kBatchRowBytes + 2 * 8 * avg_nnz) +  // batch buffers
            (o.prefetch + 2) * kSlotRows * 4 +                 // slots
            plan_bytes(store, o);
  return r;
}

Reserve reserve_direct(const Store& store, const ReaderOptions& o) {
  uint64_t max_nnz = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    max_nnz = std::max<uint64_t>(max_nnz, store.chunk(k).nnz);
  }
  const uint64_t page = static_cast<uint64_t>(::sysconf(_SC_PAGESIZE));
  const StoreMeta& m = store.meta();
  const uint64_t avg_nnz = m.rows ? (m.nnz + m.rows - 1) / m.rows : 0;
  Reserve r;
  const uint64_t ahead = row_ahead_bytes(o);
  r.ring = (o.prefetch + 2 + kHeldSlots) * (24 * kDirectSlotRows + 8 + 8 * kDirectSlotNnz) +
           8 * max_nnz +
           RowReader::max_index_bytes(store) + kRowsAhead * sizeof(Planned) +
           4 * (ahead / 4 + max_nnz);  // the positions of the stored values of the rows ahead
  r.file = 2 * (ahead + 8 * max_nnz + 3 * page) +                // rows asked for
           ahead + 2 * RowReader::max_index_read_bytes(store) +  // row indexes asked for
           4 * kPageSlack;
  r.batch = o.batch_size * (kBatchRowBytes + 2 * 8 * avg_nnz) +  // batch buffers
            (o.prefetch + 2) * kDirectSlotRows * 4 +           // slots
            plan_bytes(store, o);
  return r;
}

uint64_t decoded_total(const Store& store) {
  uint64_t total = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) total += decoded_bytes(store.chunk(k));
  return total;
}

bool whole_store_fits(const Store& store, uint64_t capacity) { return decoded_total(store) <= capacity; }

}  // namespace reader

using reader::decoded_total;
using reader::reserve_direct;
using reader::reserve_for;
using reader::RowReader;
using reader::whole_store_fits;

namespace {

// The options with an automatic prefetch depth at its least.
ReaderOptions least(ReaderOptions o) {
  if (o.prefetch == ReaderOptions::kAutoPrefetch) o.prefetch = ReaderOptions::kMinAutoPrefetch;
  return o;
}

}  // namespace

ReaderOptions resolve_reader_options(const Store& store, const ReaderOptions& options) {
  if (options.prefetch != ReaderOptions::kAutoPrefetch) return options;
  // Deeper is faster out of core (more chunks read and decoded at once: a cold ca pass of
  // the criteo-shaped store at 47 MB went from 6.3 M rows/s at depth 4 to 8.4 M at 10), and
  // its reserve comes out of the cache. Out of core a cache of C bytes spares only the
  // share C / (decoded store) of the reads of later passes, where depth speeds every pass:
  // so the deepest that fits the share, unless a shallower depth keeps the whole store.
  ReaderOptions o = least(options);
  const uint64_t least_reserve = reserve_for(store, o).total();
  const bool fits = options.memory >= least_reserve &&
                    whole_store_fits(store, options.memory - least_reserve);
  for (size_t p = ReaderOptions::kMaxAutoPrefetch; p > ReaderOptions::kMinAutoPrefetch; --p) {
    ReaderOptions deeper = options;
    deeper.prefetch = p;
    const uint64_t r = reserve_for(store, deeper).total();
    if (r <= options.memory && whole_store_fits(store, options.memory - r) == fits) {
      return deeper;
    }
  }
  return o;
}

uint64_t reader_min_memory(const Store& store, const ReaderOptions& options) {
  return reserve_for(store, least(options)).total();
}

uint64_t reader_direct_rows_memory(const Store& store, const ReaderOptions& options) {
  const ReaderOptions o = least(options);
  const reader::OrderInfo* order = reader::find_order(o.order);
  if (!o.direct_rows || !order || !order->random_rows || !RowReader::possible(store)) return 0;
  // The direct reserve grows with the share (the pages asked for ahead: row_ahead_bytes),
  // by well under the share's growth: the least fixed point is a few steps up.
  ReaderOptions at = o;
  at.memory = reserve_for(store, o).total();
  for (;;) {
    const uint64_t need = reserve_direct(store, at).total();
    if (need <= at.memory) return at.memory;
    at.memory = need;
  }
}

uint64_t reader_whole_store_memory(const Store& store, const ReaderOptions& options) {
  return reserve_for(store, least(options)).total() + decoded_total(store);
}

}  // namespace agld
