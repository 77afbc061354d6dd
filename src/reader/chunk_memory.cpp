// The reader's pool of decoded chunks' buffers: reuse of the buffers the consumer lets go
// of, and the count of the memory they hold (chunk_memory.hpp).
#include "reader/chunk_memory.hpp"

#include <algorithm>
#include <utility>

namespace agld::reader {

ChunkShape largest_shape(const Store& store) {
  ChunkShape s;
  for (size_t k = 0; k < store.chunk_count(); ++k) {
    s.words = std::max(s.words, decoded_words(store.chunk(k)));
    s.rows = std::max(s.rows, store.chunk(k).row_count);
  }
  return s;
}

uint64_t max_decoded_bytes(const Store& store) {
  const ChunkShape s = largest_shape(store);
  return 8 * s.words + 4 * (uint64_t{s.rows} + 1);
}

std::unique_ptr<ChunkMemory::Buffer> ChunkMemory::take_kept(const ChunkInfo& c) {
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

std::unique_ptr<ChunkMemory::Buffer> ChunkMemory::make() {
  auto b = std::make_unique<Buffer>();
  if (shape_.words > 0) {
    b->chunk.reserve(shape_.words, shape_.rows);
    b->words = shape_.words;
  }
  return b;
}

void ChunkMemory::decoded(Buffer* b, const ChunkInfo* c) {
  const uint64_t bytes = b->chunk.memory_bytes();
  if (bytes >= b->bytes) {
    add(bytes - b->bytes);
  } else {
    sub(b->bytes - bytes);
  }
  b->bytes = bytes;
  if (c) b->words = std::max(b->words, decoded_words(*c));
}

void ChunkMemory::give(std::unique_ptr<Buffer> b) {
  std::lock_guard<std::mutex> lock(mu_);
  if (kept_.size() < keep_ && b->words > 0) {
    kept_.push_back(std::move(b));
    return;
  }
  auto smallest = std::min_element(
      kept_.begin(), kept_.end(), [](const auto& x, const auto& y) { return x->words < y->words; });
  if (smallest != kept_.end() && (*smallest)->words < b->words) std::swap(*smallest, b);
  sub(b->bytes);
}

void ChunkMemory::add(uint64_t b) {
  const uint64_t now = live_.fetch_add(b) + b;
  uint64_t p = peak_.load();
  while (now > p && !peak_.compare_exchange_weak(p, now)) {
  }
}

}  // namespace agld::reader
