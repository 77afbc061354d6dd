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

#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>

#include "reader/chunk_cache.hpp"
#include "reader/interleave.hpp"
#include "reader/order.hpp"
#include "reader/row_reader.hpp"

namespace agld {
namespace {

using reader::DirectRows;
using reader::OrderCursor;
using reader::RowIndex;
using reader::RowReader;
using reader::RowRef;
using reader::RowSpan;

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
uint64_t row_ahead_bytes(const ReaderOptions& o) {
  return std::clamp<uint64_t>(o.memory / 32, 64 << 10, 1 << 20);
}

// Rows the plan may hold past those consumed and kept (its reserve): two of a cursor's
// blocks, a chunk's rows (ca, br) or a few thousand (rr, ra), and the direct rows' look-ahead.
size_t look_ahead_rows(const Store& store) {
  size_t rows = 4096;
  for (size_t k = 0; k < store.chunk_count(); ++k)
    rows = std::max<size_t>(rows, store.chunk(k).row_count);
  return 2 * rows;
}

// The plan (a vector: up to 2x its rows), and with several streams the rows each stream's
// cursor has yielded and the interleaving has not (a cursor's block at most, twice).
uint64_t plan_bytes(const Store& store, const ReaderOptions& o) {
  return 2 * 8 * (kPlanKeep + 2 * look_ahead_rows(store)) + o.streams.size() * 2 * 8 * look_ahead_rows(store);
}

// The most decoded words and the most rows of a chunk of the store: out of core, every
// buffer is made to hold both (ChunkMemory).
struct ChunkShape {
  uint64_t words = 0;
  uint32_t rows = 0;
};
ChunkShape largest_shape(const Store& store) {
  ChunkShape s;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    s.words = std::max(s.words, decoded_words(store.chunk(k)));
    s.rows = std::max(s.rows, store.chunk(k).row_count);
  }
  return s;
}

// The memory a decoded chunk of this store holds out of core (a buffer of the largest shape).
uint64_t max_decoded_bytes(const Store& store) {
  const ChunkShape s = largest_shape(store);
  return 8 * s.words + 4 * (uint64_t{s.rows} + 1);
}

// Names the calling thread (top -H, perf, gdb show it).
void name_this_thread(const char* name) { ::pthread_setname_np(::pthread_self(), name); }

// Decode threads for these options: none inline (prefetch 0); more than one per chunk
// that can be in flight would idle.
size_t decode_threads(const ReaderOptions& o) {
  if (o.prefetch == 0) return 0;
  size_t n = o.decode_threads;
  if (n == 0) n = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, kMaxDecodeThreads);
  return std::min(n, o.prefetch + 2);
}

// Read threads (with decode threads): reads in flight, each a chunk, a thread waiting for
// its read; no more than chunks can be in flight.
size_t read_threads(const ReaderOptions& o) {
  return o.prefetch == 0 ? 0 : std::min<size_t>(kReadThreads, o.prefetch + 2);
}

struct Reserve {
  uint64_t ring = 0;   // decoded chunks outside the cache
  uint64_t file = 0;   // the store's pages of the chunks being read
  uint64_t batch = 0;  // batch buffers, slots, the cursor's block
  uint64_t total() const { return ring + file + batch; }
};

// Chunks the producer holds outside the cache beyond the one it is in: with several
// streams, the chunk each other stream is in (Producer::held_), so that a stream's next
// rows do not read its chunk again when the cache, full, did not keep it.
size_t held_chunks(const ReaderOptions& o) { return o.streams.empty() ? 0 : o.streams.size() - 1; }

// Buffers of decoded chunks kept for reuse (ChunkMemory): those of the chunks not kept by
// the cache, given back as the consumer lets go of them (at most one per unconsumed or held
// slot, and the producer's held chunks), one per decode thread (or for the producer) and one more.
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
  // A chunk per unconsumed or held slot (the header comment), one for what the allocator holds
  // between a chunk freed and the next of another size (measured: about one chunk), and the
  // buffers kept for reuse. Each decoding thread also holds a zstd context, the raw chunk it
  // decompresses into, a chunk's value table and values, its planes unpacked and its
  // labels and row lengths (Store::decode_chunk).
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

// A row planned ahead of the consumer: where it is, what locating it cost.
struct Planned {
  RowRef ref;
  RowSpan span;
  Status status;            // a failure to read its chunk's row index
  bool index_read = false;  // its chunk's row index was read for it
  uint64_t bytes = 0;       // bytes read for it (whole pages)
  uint64_t asked = 0;       // bytes of its pages asked for
};

// The reserve when rows are read on their own (no decoded chunks): the rows in the slots
// not yet consumed, and one row longer than a slot holds; the row index being read and the
// rows planned ahead; the pages asked for: of rows, up to row_ahead_bytes() plus the last
// row asked for (twice: a fault maps pages around itself), and of row indexes, up to
// row_ahead_bytes() plus the last one asked for.
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

// The decoded bytes of every chunk: what the cache holds when the whole store fits.
uint64_t decoded_total(const Store& store) {
  uint64_t total = 0;
  for (size_t k = 0; k < store.chunk_count(); ++k) total += decoded_bytes(store.chunk(k));
  return total;
}

// Whether every decoded chunk fits a cache of this capacity.
bool whole_store_fits(const Store& store, uint64_t capacity) { return decoded_total(store) <= capacity; }

// The memory of decoded chunks: what is alive (counted from decode to last release, with
// the buffers kept for reuse), and the buffers of chunks no longer used, kept for the next
// reads. Out of core, a new buffer is reserved for the store's largest shape (the most
// decoded words, the most rows), so that it holds any chunk of the store without growing.
// Once the cache has filled, reading a chunk then allocates nothing: no page faults and
// zeroing of fresh memory, and no allocator slack between chunks of slightly different
// sizes allocated by one thread and freed by another (measured with two decode threads and
// no reuse: peak RSS 204-210 MiB for a 178 MiB budget). A new buffer is written once, by
// the decoding (DecodedChunk::reserve; a copy of a decoded template was one more pass over
// each: at a budget of half the store, 3 % of a pass's CPU). Shared by the producer, the
// decode threads and the consumer: whichever lets go of a chunk last gives its buffer back.
class ChunkMemory {
 public:
  struct Buffer {
    DecodedChunk chunk;
    uint64_t words = 0;  // the raw words it holds without growing
    uint64_t bytes = 0;  // counted in live
  };

  // shape: what a new buffer is reserved for (out of core), or none (words 0: each chunk
  // gets a buffer of its own size).
  ChunkMemory(size_t keep, ChunkShape shape) : keep_(keep), shape_(shape) {}

  // A kept buffer that holds chunk c without growing (the smallest), or null. Called by the
  // producer when it places a chunk: the buffers of chunks the cache did not keep, given
  // back as the consumer lets go of them, then go round without the allocator, however far
  // the producer runs ahead of the decode threads.
  std::unique_ptr<Buffer> take_kept(const ChunkInfo& c) {
    const uint64_t words = decoded_words(c);
    std::lock_guard<std::mutex> lock(mu_);
    size_t best = kept_.size();
    for (size_t i = 0; i < kept_.size(); ++i) {
      if (kept_[i]->words >= words &&
          (best == kept_.size() || kept_[i]->words < kept_[best]->words)) {
        best = i;
      }
    }
    if (best == kept_.size()) return nullptr;
    std::unique_ptr<Buffer> b = std::move(kept_[best]);
    kept_[best] = std::move(kept_.back());
    kept_.pop_back();
    return b;  // still counted, until decoded into
  }

  // A new buffer: reserved for the largest shape (out of core), else empty. Throws
  // std::bad_alloc.
  std::unique_ptr<Buffer> make() {
    auto b = std::make_unique<Buffer>();
    if (shape_.words > 0) {
      b->chunk.reserve(shape_.words, shape_.rows);
      b->words = shape_.words;
    }
    return b;
  }

  // Counts a buffer just decoded into (chunk c, or null when the decode failed).
  void decoded(Buffer* b, const ChunkInfo* c) {
    const uint64_t bytes = b->chunk.memory_bytes();
    if (bytes >= b->bytes) {
      add(bytes - b->bytes);
    } else {
      sub(b->bytes - bytes);
    }
    b->bytes = bytes;
    if (c) b->words = std::max(b->words, decoded_words(*c));
  }

  // Keeps a buffer no longer used, or frees it (or a smaller kept one) when keep_ are kept.
  void give(std::unique_ptr<Buffer> b) {
    std::lock_guard<std::mutex> lock(mu_);
    if (kept_.size() < keep_ && b->words > 0) {
      kept_.push_back(std::move(b));
      return;
    }
    auto smallest = std::min_element(kept_.begin(), kept_.end(), [](const auto& x, const auto& y) {
      return x->words < y->words;
    });
    if (smallest != kept_.end() && (*smallest)->words < b->words) std::swap(*smallest, b);
    sub(b->bytes);
  }

  uint64_t peak() const { return peak_.load(); }

 private:
  void add(uint64_t b) {
    const uint64_t now = live_.fetch_add(b) + b;
    uint64_t p = peak_.load();
    while (now > p && !peak_.compare_exchange_weak(p, now)) {
    }
  }
  void sub(uint64_t b) { live_.fetch_sub(b); }

  const size_t keep_;
  const ChunkShape shape_;
  std::mutex mu_;
  std::vector<std::unique_ptr<Buffer>> kept_;
  std::atomic<uint64_t> live_{0};
  std::atomic<uint64_t> peak_{0};
};

// A chunk placed by the producer: decoded by a decode thread (or the producer), then read by
// the consumer, which waits for it. Gives its buffer back when the last user lets go.
struct ChunkBox {
  enum : int { kPending = 0, kReady = 1, kFailed = 2 };
  uint32_t k = 0;
  uint64_t seq = 0;  // placed by the producer in this order
  std::unique_ptr<ChunkMemory::Buffer> buffer;  // set by the decoding thread
  Status status;                                // written before state leaves kPending
  std::atomic<int> state{kPending};
  std::shared_ptr<ChunkMemory> memory;

  ~ChunkBox() {
    if (buffer) memory->give(std::move(buffer));
  }
  const DecodedChunk& chunk() const { return buffer->chunk; }
  bool done() const { return state.load(std::memory_order_acquire) != kPending; }
  void wait() const {
    for (int s; (s = state.load(std::memory_order_acquire)) == kPending;) state.wait(s);
  }
  void finish(Status st) {
    status = std::move(st);
    state.store(status.is_ok() ? kReady : kFailed, std::memory_order_release);
    state.notify_all();
  }
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

// Threads that read the chunks placed by the producer, and threads that decode them, each
// first placed first. Reading and decoding are apart so that a core never waits for a read
// while a read chunk waits for a core: the read threads keep up to as many reads in flight
// (they wait in pread, taking no CPU), the decode threads only decode.
class DecodePool {
 public:
  // Reads a placed chunk's stored bytes into buf (*bytes views them); does not throw.
  using Read = std::function<Status(ChunkBox*, ReadBuffer*, ByteSpan*)>;
  // Decodes a placed chunk from the bytes read (or fails it with the read's status).
  using Decode = std::function<void(ChunkBox*, const Status&, ByteSpan)>;
  DecodePool(size_t readers, size_t decoders, Read read, Decode decode)
      : read_(std::move(read)), decode_(std::move(decode)) {
    for (size_t i = 0; i < readers; ++i) {
      threads_.emplace_back([this] {
        name_this_thread("agld-read");
        run_read();
      });
    }
    for (size_t i = 0; i < decoders; ++i) {
      threads_.emplace_back([this] {
        name_this_thread("agld-decode");
        run_decode();
      });
    }
  }
  ~DecodePool() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    to_read_cv_.notify_all();
    to_decode_cv_.notify_all();
    for (std::thread& t : threads_) t.join();
  }
  void submit(std::shared_ptr<ChunkBox> box) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      to_read_.push_back(std::move(box));
    }
    to_read_cv_.notify_one();
  }

 private:
  struct ReadJob {
    std::shared_ptr<ChunkBox> box;
    ReadBuffer buffer;  // bytes points into its memory, which a move keeps
    Status status;
    ByteSpan bytes;
  };

  void run_read() {
    for (;;) {
      ReadJob job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        to_read_cv_.wait(lock, [this] { return stop_ || !to_read_.empty(); });
        if (stop_) return;  // the reader is going: nobody waits for the rest
        job.box = std::move(to_read_.front());
        to_read_.pop_front();
        if (!buffers_.empty()) {
          job.buffer = std::move(buffers_.back());
          buffers_.pop_back();
        }
      }
      job.status = read_(job.box.get(), &job.buffer, &job.bytes);
      {
        std::lock_guard<std::mutex> lock(mu_);
        to_decode_.push_back(std::move(job));
      }
      to_decode_cv_.notify_one();
    }
  }

  void run_decode() {
    for (;;) {
      ReadJob job;
      {
        std::unique_lock<std::mutex> lock(mu_);
        to_decode_cv_.wait(lock, [this] { return stop_ || !to_decode_.empty(); });
        if (stop_) return;
        // The first placed of those read: reads may complete out of order.
        auto first = std::min_element(to_decode_.begin(), to_decode_.end(),
                                      [](const ReadJob& a, const ReadJob& b) { return a.box->seq < b.box->seq; });
        job = std::move(*first);
        to_decode_.erase(first);
      }
      decode_(job.box.get(), job.status, job.bytes);
      {
        std::lock_guard<std::mutex> lock(mu_);
        buffers_.push_back(std::move(job.buffer));
      }
    }
  }

  Read read_;
  Decode decode_;
  std::mutex mu_;
  std::condition_variable to_read_cv_, to_decode_cv_;
  std::deque<std::shared_ptr<ChunkBox>> to_read_;
  std::deque<ReadJob> to_decode_;
  std::vector<ReadBuffer> buffers_;  // read buffers free for reuse
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

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

// Walks the order's sequence and fills slots. Used by one thread at a time.
class Producer {
 public:
  Producer(const Store& store, std::unique_ptr<OrderCursor> cursor, const Setup& setup,
           std::shared_ptr<ChunkMemory> memory, uint64_t ahead_cap)
      : store_(store),
        plan_(std::move(cursor)),
        cache_(store.chunk_count(), setup.direct ? 0 : setup.capacity,
               reader::CachePolicy::kKeepWhatItHolds),
        memory_(std::move(memory)),
        // In the cache a chunk counts for what it was decoded into: out of core, a reused
        // buffer, which may have held a larger chunk; when the store fits, every chunk is
        // kept, each in a fresh buffer of its own size.
        charge_max_(setup.fits ? 0 : max_decoded_bytes(store)),
        direct_(setup.direct),
        rows_(store),
        index_cache_(store.chunk_count(), setup.direct ? setup.capacity : 0),
        ahead_cap_(ahead_cap),
        held_cap_(setup.held),
        window_(setup.window) {
    // Whole chunks are read past the page cache (read_uncached). Rows read on their own
    // (direct rows) go through the mapping: the reader asks for exactly their pages
    // (will_need) and drops them once read; the kernel's own read-ahead would bring in
    // neighbours that, arriving late on a busy disk, stay in the page cache past the drop
    // and break the budget. What it brought in before (Store::open's reads of the header and
    // the footer read megabytes around them: 8 MiB of read-ahead on the development VM) is
    // dropped now: otherwise a fault near those pages maps them around itself, where no drop
    // of the reader's reaches.
    if (!setup.fits) {
      store.file().advise_random();
      store.file().drop_cache(0, store.file_size());
    }
    if (direct_) {
      ahead_.resize(kRowsAhead);
      index_hinted_.assign(store.chunk_count(), 0);
      return;  // no chunk is decoded
    }
    if (setup.threads > 0) {
      pool_ = std::make_unique<DecodePool>(
          setup.read_threads, setup.threads,
          [this](ChunkBox* b, ReadBuffer* buf, ByteSpan* bytes) { return read(b->k, buf, bytes); },
          [this](ChunkBox* b, const Status& read, ByteSpan bytes) { decode(b, read, bytes); });
    }
  }

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
  void fill(Slot* slot) {
    if (direct_) return fill_direct(slot);
    slot->clear();
    bool read_one = false;
    while (slot->rows.size() < kSlotRows) {
      const RowRef r = plan_.upcoming()[0];
      if (!current_ || r.chunk != current_k_) {
        if (read_one) break;
        std::shared_ptr<ChunkBox> c = cache_.find(r.chunk);
        ++slot->visits;
        if (!c) c = take_held(r.chunk);
        if (c) {
          ++slot->hits;
        } else {
          c = start_read(r.chunk, slot);
          read_one = true;
        }
        hold(current_k_, std::move(current_));
        if (!slot->segments.empty()) slot->segments.back().end = slot->rows.size();
        current_ = std::move(c);
        current_k_ = r.chunk;
        slot->segments.push_back(Segment{current_, 0});
      } else if (slot->segments.empty()) {  // the chunk goes on from the previous slot
        slot->segments.push_back(Segment{current_, 0});
      }
      // The run of rows in this chunk, as far as the slot and the plan go. (Taken only now:
      // hold() may have planned further ahead, which moves the plan's rows.)
      const std::span<const RowRef> next = plan_.upcoming();
      const size_t room = std::min(kSlotRows - slot->rows.size(), next.size());
      size_t run = 1;
      while (run < room && next[run].chunk == current_k_) ++run;
      for (size_t i = 0; i < run; ++i) slot->rows.push_back(next[i].row);
      plan_.pop(run);
    }
    if (!slot->segments.empty()) slot->segments.back().end = slot->rows.size();
    slot->cache_bytes = cache_.bytes();
    slot->cache_peak = cache_.peak_bytes();
  }

  // The chunks other streams are in, most recently left last: chunk k's, taken out (it
  // becomes the current chunk), or null.
  std::shared_ptr<ChunkBox> take_held(uint32_t k) {
    for (auto it = held_.begin(); it != held_.end(); ++it) {
      if (it->first == k) {
        std::shared_ptr<ChunkBox> c = std::move(it->second);
        held_.erase(it);
        return c;
      }
    }
    return nullptr;
  }
  // The chunk the producer leaves, kept for the stream that will come back to it (when the
  // cache does not hold it). When the producer already holds as many as there are other
  // streams, the one the plan needs last goes: one no stream's next rows are in (a chunk a
  // stream has just left for its next), else the one needed furthest ahead in a batch's rows.
  void hold(uint32_t k, std::shared_ptr<ChunkBox> c) {
    if (held_cap_ == 0 || !c || cache_.contains(k)) return;
    held_.emplace_back(k, std::move(c));
    if (held_.size() <= held_cap_) return;
    std::vector<size_t> first(held_.size(), SIZE_MAX);  // where each is next needed
    size_t found = 0;
    for (size_t i = 0; i < window_ && found < held_.size(); ++i) {
      const uint32_t at = plan_.ahead(i).chunk;
      for (size_t h = 0; h < held_.size(); ++h) {
        if (held_[h].first == at && first[h] == SIZE_MAX) first[h] = i, ++found;
      }
    }
    const auto last = std::max_element(first.begin(), first.end());  // the first of equals: left longest ago
    held_.erase(held_.begin() + (last - first.begin()));
  }

  // Direct rows: up to kDirectSlotRows rows and kDirectSlotNnz entries (or one longer row),
  // each read on its own.
  void fill_direct(Slot* slot) {
    slot->clear();
    if (!failed_.is_ok()) {
      slot->status = failed_;
      return;
    }
    DirectRows& d = slot->direct;
    d.reserve(kDirectSlotRows, kDirectSlotNnz);
    while (d.size() < kDirectSlotRows) {
      plan_rows();
      Planned& p = ahead_[ahead_head_];
      if (p.status.is_ok()) {
        const uint32_t n = p.span.nnz;
        if (d.size() > 0 && d.nnz() + n > kDirectSlotNnz) break;
        if (n > kDirectSlotNnz) {  // alone in its slot, and one such slot unconsumed at a time
          for (bool busy; (busy = oversized_busy_.load()) && !stopping_.load();) {
            oversized_busy_.wait(busy);
          }
          if (stopping_.load()) return;
          oversized_busy_.store(true);
          slot->oversized = true;
        }
        p.status = rows_.read(p.ref.chunk, p.ref.row, p.span, &d, &p.bytes);
      }
      if (!p.status.is_ok()) {
        failed_ = p.status;
        if (d.size() == 0) slot->status = failed_;  // else: delivered by the next slot
        break;
      }
      slot->rows.push_back(static_cast<uint32_t>(d.size() - 1));
      ++slot->direct_rows;
      slot->index_reads += p.index_read;
      slot->bytes_read += p.bytes;
      ahead_bytes_ -= p.asked;
      if (p.span.where.capacity() > 4 * kDirectSlotNnz) p.span.where = {};
      ahead_head_ = (ahead_head_ + 1) % kRowsAhead;
      --ahead_count_;
      plan_.pop();
      ++popped_;
      if (slot->oversized) break;
    }
    // The rows were read from the store's mapping: if the file changed meanwhile (truncated
    // pages read as zeros, rather than raising SIGBUS), they are not delivered.
    if (Status changed = store_.file().check_unchanged(); !changed.is_ok()) {
      slot->clear();
      slot->status = failed_ = std::move(changed);
      return;
    }
    if (!slot->rows.empty()) slot->segments.push_back(Segment{nullptr, slot->rows.size()});
    slot->cache_bytes = index_cache_.bytes();
    slot->cache_peak = index_cache_.peak_bytes();
  }

 private:
  // Direct rows: locates the rows after the consumer's and asks for their pages, up to
  // kRowsAhead rows or ahead_cap_ bytes of pages (at least one row). A chunk's row index is
  // read when a row of it is planned and not in the index cache. All in the order of the
  // sequence, and the costs are counted when the row is delivered.
  void plan_rows() {
    while (ahead_count_ < kRowsAhead && (ahead_count_ == 0 || ahead_bytes_ < ahead_cap_)) {
      hint_indexes(popped_ + ahead_count_);
      Planned& p = ahead_[(ahead_head_ + ahead_count_) % kRowsAhead];
      p.ref = plan_.ahead(ahead_count_);
      p.status = Status::ok();
      p.index_read = false;
      p.bytes = p.asked = 0;
      std::shared_ptr<RowIndex> index = index_cache_.find(p.ref.chunk);
      if (!index) {
        index = std::make_shared<RowIndex>();
        p.index_read = true;
        p.status = rows_.read_index(p.ref.chunk, index.get(), &p.bytes);
        if (p.status.is_ok()) {
          index_cache_.insert(p.ref.chunk, index, index->bytes());
        }
      }
      if (p.status.is_ok()) {
        rows_.locate(p.ref.chunk, p.ref.row, *index, &p.span);
        p.asked = rows_.ask(p.span);
        ahead_bytes_ += p.asked;
      }
      ++ahead_count_;
    }
  }

  // Direct rows: before the row at plan position `at` (counted from the start) is planned,
  // asks for the row indexes, not in the cache, of the chunks of the next kRowsAhead rows
  // (up to ahead_cap_ bytes of pages), so that they arrive together rather than one after
  // the other. The request for the row at `at` is then either used (its index is read
  // now) or dropped (an earlier row read the index).
  void hint_indexes(uint64_t at) {
    for (hint_next_ = std::max(hint_next_, at);
         hint_next_ < at + kRowsAhead && hint_bytes_ < ahead_cap_; ++hint_next_) {
      const uint32_t c = plan_.ahead(hint_next_ - popped_).chunk;
      if (index_hinted_[c] || index_cache_.contains(c)) continue;
      index_hinted_[c] = 1;
      hint_bytes_ += rows_.ask_index(c);
      hints_.push_back({hint_next_, c});
    }
    if (!hints_.empty() && hints_.front().first == at) {
      const uint32_t c = hints_.front().second;
      hints_.pop_front();
      index_hinted_[c] = 0;
      hint_bytes_ -= rows_.ask_bytes_of_index(c);
      if (index_cache_.contains(c)) rows_.drop_index(c);
    }
  }

  // Places chunk k in the cache and has it read and decoded (by a decode thread, or now).
  std::shared_ptr<ChunkBox> start_read(uint32_t k, Slot* slot) {
    const ChunkInfo& info = store_.chunk(k);
    auto box = std::make_shared<ChunkBox>();
    box->k = k;
    box->seq = placed_++;
    box->memory = memory_;
    ++slot->misses;
    slot->bytes_read += info.stored_size;
    slot->bytes_decompressed += info.raw_size;
    cache_.insert(k, box, charge_max_ ? charge_max_ : decoded_bytes(info));
    box->buffer = memory_->take_kept(info);  // a buffer the consumer let go of, if any
    if (pool_) {
      pool_->submit(box);
    } else {
      ByteSpan bytes;
      const Status st = read(k, &buffer_, &bytes);
      decode(box.get(), st, bytes);
    }
    return box;
  }

  // Reads chunk k's stored bytes into buf, past the page cache (they are read once: a
  // decoded chunk the cache keeps is kept decoded); anything thrown (the buffer's
  // allocation) becomes the chunk's failure.
  Status read(size_t k, ReadBuffer* buf, ByteSpan* bytes) const {
    const ChunkInfo& info = store_.chunk(k);
    try {
      return store_.file().read_uncached(info.offset, info.stored_size, buf, bytes);
    } catch (const std::exception& e) {
      return Status::internal(std::string("reader: ") + e.what());
    }
  }

  // Checks and decodes a placed chunk from the bytes read (or fails it with the read's
  // status), and wakes the consumer.
  void decode(ChunkBox* box, const Status& read, ByteSpan bytes) {
    const ChunkInfo& info = store_.chunk(box->k);
    Status st = read;
    try {
      if (!box->buffer) box->buffer = memory_->make();
      if (st.is_ok()) st = store_.decode_chunk(box->k, bytes, &box->buffer->chunk);
    } catch (const std::exception& e) {
      st = Status::internal(std::string("reader: ") + e.what());
    }
    // A chunk cut short or failing its checksum: said as what it is when the file changed
    // since it was opened (truncated or rewritten under the run).
    if (!st.is_ok()) {
      if (Status changed = store_.file().check_unchanged(); !changed.is_ok()) st = std::move(changed);
    }
    if (box->buffer) memory_->decoded(box->buffer.get(), st.is_ok() ? &info : nullptr);
    box->finish(std::move(st));
  }

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
    cursor = reader::positioned(order->make(store, options.seed), options.start);
  } else {
    std::vector<std::unique_ptr<reader::OrderCursor>> streams;
    for (uint64_t seed : options.streams) streams.push_back(reader::positioned(order->make(store, seed), options.start));
    cursor = reader::interleave(std::move(streams), options.batch_size / options.streams.size());
  }
  *out = std::make_unique<ReaderImpl>(store, options, std::move(cursor), setup);
  return Status::ok();
}

}  // namespace agld
