// A cache of decoded chunks, least recently used first out, bounded by bytes. Used by one
// thread at a time (the reader's producer); entries are shared with the batches' consumer,
// which may keep an evicted chunk alive until it has gathered its rows.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <vector>

#include "agld/store.hpp"

namespace agld::reader {

class ChunkCache {
 public:
  ChunkCache(size_t chunk_count, uint64_t capacity_bytes);

  // The chunk, marked most recently used; null when absent.
  std::shared_ptr<const DecodedChunk> find(size_t k);
  // Adds chunk k (bytes of memory), evicting least recently used chunks until the cache
  // holds at most its capacity; appends the evicted chunk numbers to *evicted. A chunk
  // larger than the whole capacity is not kept.
  void insert(size_t k, std::shared_ptr<const DecodedChunk> chunk, uint64_t bytes,
              std::vector<size_t>* evicted);

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t peak_bytes() const { return peak_; }

 private:
  struct Entry {
    size_t k;
    uint64_t bytes;
    std::shared_ptr<const DecodedChunk> chunk;
  };
  std::list<Entry> lru_;                           // most recently used first
  std::vector<std::list<Entry>::iterator> where_;  // by chunk; lru_.end() when absent
  uint64_t capacity_;
  uint64_t bytes_ = 0;
  uint64_t peak_ = 0;
};

}  // namespace agld::reader
