// The reader's producer (producer.hpp): slots of rows from the cache, from chunks it places
// to be read and decoded, or from rows read on their own.
#include "reader/producer.hpp"

#include <algorithm>
#include <exception>
#include <string>

namespace agld::reader {

Producer::Producer(const Store& store, std::unique_ptr<OrderCursor> cursor, const Setup& setup,
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

void Producer::fill(Slot* slot) {
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

std::shared_ptr<ChunkBox> Producer::take_held(uint32_t k) {
  for (auto it = held_.begin(); it != held_.end(); ++it) {
    if (it->first == k) {
      std::shared_ptr<ChunkBox> c = std::move(it->second);
      held_.erase(it);
      return c;
    }
  }
  return nullptr;
}

void Producer::hold(uint32_t k, std::shared_ptr<ChunkBox> c) {
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

void Producer::fill_direct(Slot* slot) {
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

void Producer::plan_rows() {
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

void Producer::hint_indexes(uint64_t at) {
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

std::shared_ptr<ChunkBox> Producer::start_read(uint32_t k, Slot* slot) {
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

Status Producer::read(size_t k, ReadBuffer* buf, ByteSpan* bytes) const {
  const ChunkInfo& info = store_.chunk(k);
  try {
    return store_.file().read_uncached(info.offset, info.stored_size, buf, bytes);
  } catch (const std::exception& e) {
    return Status::internal(std::string("reader: ") + e.what());
  }
}

void Producer::decode(ChunkBox* box, const Status& read, ByteSpan bytes) {
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

}  // namespace agld::reader
