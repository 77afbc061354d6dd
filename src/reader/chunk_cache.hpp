// A cache of chunk-sized things by chunk number (decoded chunks; with direct rows, row
// indexes), bounded by bytes. When full, either the least recently used entries make room
// for a new one (kLeastRecentlyUsed), or the cache keeps what it holds and the new entry is
// not kept (kKeepWhatItHolds: scan-resistant. Under repeated passes in one order, LRU
// evicts every chunk just before its next use and never hits, whereas a fixed set hits
// capacity / store of the visits, the best any policy does on a cyclic scan; on uniform
// random visits the two hit equally often). Used by one thread at a time
// (the reader's producer); entries are shared with others (the consumer, decode threads),
// which may keep an evicted entry alive until they are done with it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <list>
#include <memory>
#include <vector>

namespace agld::reader {

enum class CachePolicy { kLeastRecentlyUsed, kKeepWhatItHolds };

template <typename T>
class ChunkCache {
 public:
  ChunkCache(size_t chunk_count, uint64_t capacity_bytes,
             CachePolicy policy = CachePolicy::kLeastRecentlyUsed)
      : where_(chunk_count, lru_.end()), capacity_(capacity_bytes), policy_(policy) {}

  // The entry, marked most recently used; null when absent.
  std::shared_ptr<T> find(size_t k) {
    auto it = where_[k];
    if (it == lru_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it);
    return it->value;
  }
  // Whether chunk k's entry is there (its place in the order unchanged).
  bool contains(size_t k) const { return where_[k] != lru_.end(); }
  // Adds chunk k's entry (bytes of memory), making room as the policy says: evicting least
  // recently used entries until the cache holds at most its capacity, or not keeping the
  // entry. An entry larger than the whole capacity is not kept.
  void insert(size_t k, std::shared_ptr<T> value, uint64_t bytes) {
    if (where_[k] != lru_.end() || bytes > capacity_) return;
    if (policy_ == CachePolicy::kKeepWhatItHolds && bytes_ + bytes > capacity_) return;
    while (!lru_.empty() && bytes_ + bytes > capacity_) {
      Entry& last = lru_.back();
      bytes_ -= last.bytes;
      where_[last.k] = lru_.end();
      lru_.pop_back();
    }
    lru_.push_front(Entry{k, bytes, std::move(value)});
    where_[k] = lru_.begin();
    bytes_ += bytes;
    peak_ = std::max(peak_, bytes_);
  }

  uint64_t capacity() const { return capacity_; }
  uint64_t bytes() const { return bytes_; }
  uint64_t peak_bytes() const { return peak_; }

 private:
  struct Entry {
    size_t k;
    uint64_t bytes;
    std::shared_ptr<T> value;
  };
  std::list<Entry> lru_;                                    // most recently used first
  std::vector<typename std::list<Entry>::iterator> where_;  // by chunk; lru_.end() when absent
  uint64_t capacity_;
  CachePolicy policy_;
  uint64_t bytes_ = 0;
  uint64_t peak_ = 0;
};

}  // namespace agld::reader
