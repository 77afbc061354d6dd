// ra: random access. Row j of the sequence is uniform on [0, N), drawn from a hash of
// (seed, j): independent draws with replacement, no state but a counter.
#include "reader/order.hpp"

namespace agld::reader {
namespace {

constexpr uint64_t kRaSalt = 0x7261726f77ull;  // "rarow"

class RaCursor final : public OrderCursor {
 public:
  RaCursor(const Store& store, uint64_t seed)
      : store_(store), key_(key_of(seed, kRaSalt, 0)), rows_(store.meta().rows) {}
  void next(std::vector<RowRef>* out) override {
    for (size_t i = 0; i < kBlock; ++i) {
      const uint64_t row = bounded(mix64(key_ ^ mix64(j_++)), rows_);
      const size_t k = store_.chunk_of_row(row);
      out->push_back(
          {static_cast<uint32_t>(k), static_cast<uint32_t>(row - store_.chunk(k).first_row)});
    }
  }
  uint64_t seek(uint64_t position) override {
    j_ = position;
    return position;
  }

 private:
  const Store& store_;
  uint64_t key_;
  uint64_t rows_;
  uint64_t j_ = 0;
};

}  // namespace

std::unique_ptr<OrderCursor> make_ra_order(const Store& store, uint64_t seed) {
  return std::make_unique<RaCursor>(store, seed);
}

}  // namespace agld::reader
