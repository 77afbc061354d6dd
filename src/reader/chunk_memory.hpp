// The reader's pool of decoded chunks' buffers (ChunkMemory), and a chunk placed by the
// producer in one of them (ChunkBox), which the decode threads fill and the consumer reads.
// Internal to the reader layer.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld::reader {

// The most decoded words and the most rows of a chunk of the store: out of core, every
// buffer is made to hold both (ChunkMemory).
struct ChunkShape {
  uint64_t words = 0;
  uint32_t rows = 0;
};
ChunkShape largest_shape(const Store& store);

// The memory a decoded chunk of this store holds out of core (a buffer of the largest shape).
uint64_t max_decoded_bytes(const Store& store);

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
  std::unique_ptr<Buffer> take_kept(const ChunkInfo& c);

  // A new buffer: reserved for the largest shape (out of core), else empty. Throws
  // std::bad_alloc.
  std::unique_ptr<Buffer> make();

  // Counts a buffer just decoded into (chunk c, or null when the decode failed).
  void decoded(Buffer* b, const ChunkInfo* c);

  // Keeps a buffer no longer used, or frees it (or a smaller kept one) when keep_ are kept.
  void give(std::unique_ptr<Buffer> b);

  uint64_t peak() const { return peak_.load(); }

 private:
  void add(uint64_t b);
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
  uint64_t seq = 0;                             // placed by the producer in this order
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

}  // namespace agld::reader
