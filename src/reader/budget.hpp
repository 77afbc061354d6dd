// The reader's memory: the sizes that bound what it holds (slots, the plan, direct rows'
// look-ahead, threads), and the reserve its share must cover before the cache gets the rest
// (docs/readers.md). Internal to the reader layer: its public face is reader_min_memory and
// the like (agld/reader.hpp).
#pragma once

#include <cstddef>
#include <cstdint>

#include "agld/reader.hpp"
#include "agld/store.hpp"

namespace agld::reader {

constexpr size_t kSlotRows = 8192;         // a slot closes at this many rows ...
constexpr uint64_t kPageSlack = 64 << 10;  // pages either side of a chunk, when rounding
constexpr size_t kPlanKeep = 8192;         // rows of the plan consumed before they are erased
constexpr size_t kMaxDecodeThreads = 4;    // the default's cap
constexpr size_t kReadThreads = 4;         // reads in flight (with a background thread)
constexpr size_t kHeldSlots = 1;           // consumed slots a batch may still point into
// A batch's memory a row: its id, label, view and (copied) where its copy is; copied rows
// also take 8 bytes a nonzero, counted twice (the buffers grow by doubling).
constexpr uint64_t kBatchRowBytes = 8 + 8 + sizeof(BatchRow) + 16;
// Direct rows (rows read on their own): a slot holds at most kDirectSlotRows rows and
// kDirectSlotNnz entries, or one longer row; the rows after the consumer's are located and
// asked for up to kRowsAhead rows or row_ahead_bytes() of pages, so that the disk has many
// small reads to serve at once.
constexpr size_t kDirectSlotRows = 256;
constexpr size_t kDirectSlotNnz = 16384;
constexpr size_t kRowsAhead = 128;

// Bytes of pages asked for ahead of the consumer's row: 1 MiB, less for a small share.
uint64_t row_ahead_bytes(const ReaderOptions& o);

// Rows the plan may hold past those consumed and kept (its reserve): two of a cursor's
// blocks, a chunk's rows (ca, br) or a few thousand (rr, ra), and the direct rows' look-ahead.
size_t look_ahead_rows(const Store& store);

// Decode threads for these options: none inline (prefetch 0); more than one per chunk
// that can be in flight would idle.
size_t decode_threads(const ReaderOptions& o);

// Read threads (with decode threads): reads in flight, each a chunk, a thread waiting for
// its read; no more than chunks can be in flight.
size_t read_threads(const ReaderOptions& o);

// Chunks the producer holds outside the cache beyond the one it is in: with several
// streams, the chunk each other stream is in (Producer::held_), so that a stream's next
// rows do not read its chunk again when the cache, full, did not keep it.
size_t held_chunks(const ReaderOptions& o);

// Buffers of decoded chunks kept for reuse (ChunkMemory): those of the chunks not kept by
// the cache, given back as the consumer lets go of them (at most one per unconsumed or held
// slot, and the producer's held chunks), one per decode thread (or for the producer) and one more.
size_t kept_buffers(const ReaderOptions& o);

// What the share must hold besides the cache.
struct Reserve {
  uint64_t ring = 0;   // decoded chunks outside the cache
  uint64_t file = 0;   // the store's pages of the chunks being read
  uint64_t batch = 0;  // batch buffers, slots, the cursor's block
  uint64_t total() const { return ring + file + batch; }
};

// The reserve when whole chunks are read and decoded.
Reserve reserve_for(const Store& store, const ReaderOptions& o);

// The reserve when rows are read on their own (no decoded chunks): the rows in the slots
// not yet consumed, and one row longer than a slot holds; the row index being read and the
// rows planned ahead; the pages asked for: of rows, up to row_ahead_bytes() plus the last
// row asked for (twice: a fault maps pages around itself), and of row indexes, up to
// row_ahead_bytes() plus the last one asked for.
Reserve reserve_direct(const Store& store, const ReaderOptions& o);

// The decoded bytes of every chunk: what the cache holds when the whole store fits.
uint64_t decoded_total(const Store& store);

// Whether every decoded chunk fits a cache of this capacity.
bool whole_store_fits(const Store& store, uint64_t capacity);

}  // namespace agld::reader
