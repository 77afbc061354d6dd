// The reader's read and decode threads (DecodePool): the chunks the producer places are read
// from the store by some threads and decoded by others, each first placed first. Internal to
// the reader layer.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "reader/chunk_memory.hpp"

namespace agld::reader {

// Names the calling thread (top -H, perf, gdb show it).
void name_this_thread(const char* name);

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
  DecodePool(size_t readers, size_t decoders, Read read, Decode decode);
  ~DecodePool();
  void submit(std::shared_ptr<ChunkBox> box);

 private:
  struct ReadJob {
    std::shared_ptr<ChunkBox> box;
    ReadBuffer buffer;  // bytes points into its memory, which a move keeps
    Status status;
    ByteSpan bytes;
  };

  void run_read();
  void run_decode();

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

}  // namespace agld::reader
