// br: block reshuffling. Each pass visits the chunks in a fresh random order, and the rows
// of each chunk in a fresh random order: (seed, pass) picks the chunk order, (seed, pass,
// chunk) the row order. Sequential I/O, chunk by chunk, with randomness at two levels.
#include <numeric>

#include "reader/order.hpp"

namespace agld::reader {
namespace {

constexpr uint64_t kChunkSalt = 0x6272636875ull;  // "brchu"
constexpr uint64_t kRowSalt = 0x6272726f77ull;    // "brrow"

class BrCursor final : public OrderCursor {
 public:
  BrCursor(const Store& store, uint64_t seed) : store_(store), seed_(seed) {
    order_.resize(store.chunk_count());
  }
  void next(std::vector<RowRef>* out) override {
    if (at_ == 0) {
      std::iota(order_.begin(), order_.end(), 0u);
      shuffle(std::span<uint32_t>(order_), key_of(seed_, kChunkSalt, pass_));
    }
    const uint32_t k = order_[at_];
    const size_t first = out->size();
    const uint32_t rows = store_.chunk(k).row_count;
    for (uint32_t r = 0; r < rows; ++r) out->push_back({k, r});
    shuffle(std::span<RowRef>(out->data() + first, rows),
            key_of(seed_, mix64(kRowSalt ^ k), pass_));
    if (++at_ == order_.size()) {
      at_ = 0;
      ++pass_;
    }
  }
  // To the start of the chunk, in its pass's order, that holds the position.
  uint64_t seek(uint64_t position) override {
    const uint64_t n = store_.meta().rows;
    pass_ = position / n;
    uint64_t row = position % n;
    std::iota(order_.begin(), order_.end(), 0u);
    shuffle(std::span<uint32_t>(order_), key_of(seed_, kChunkSalt, pass_));
    at_ = 0;
    while (row >= store_.chunk(order_[at_]).row_count) row -= store_.chunk(order_[at_++]).row_count;
    return position - row;  // (at 0, next() shuffles the same chunk order again)
  }

 private:
  const Store& store_;
  uint64_t seed_;
  std::vector<uint32_t> order_;
  size_t at_ = 0;
  uint64_t pass_ = 0;
};

}  // namespace

std::unique_ptr<OrderCursor> make_br_order(const Store& store, uint64_t seed) {
  return std::make_unique<BrCursor>(store, seed);
}

}  // namespace agld::reader
