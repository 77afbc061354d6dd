#include "reader/chunk_cache.hpp"

#include <algorithm>

namespace agld::reader {

ChunkCache::ChunkCache(size_t chunk_count, uint64_t capacity_bytes)
    : where_(chunk_count, lru_.end()), capacity_(capacity_bytes) {}

std::shared_ptr<const DecodedChunk> ChunkCache::find(size_t k) {
  auto it = where_[k];
  if (it == lru_.end()) return nullptr;
  lru_.splice(lru_.begin(), lru_, it);
  return it->chunk;
}

void ChunkCache::insert(size_t k, std::shared_ptr<const DecodedChunk> chunk, uint64_t bytes,
                        std::vector<size_t>* evicted) {
  if (where_[k] != lru_.end() || bytes > capacity_) return;
  while (!lru_.empty() && bytes_ + bytes > capacity_) {
    Entry& last = lru_.back();
    bytes_ -= last.bytes;
    where_[last.k] = lru_.end();
    evicted->push_back(last.k);
    lru_.pop_back();
  }
  lru_.push_front(Entry{k, bytes, std::move(chunk)});
  where_[k] = lru_.begin();
  bytes_ += bytes;
  peak_ = std::max(peak_, bytes_);
}

}  // namespace agld::reader
