// ca: the rows in stored order, chunk by chunk, wrapping around at the end.
#include "reader/order.hpp"

namespace agld::reader {
namespace {

class CaCursor final : public OrderCursor {
 public:
  explicit CaCursor(const Store& store) : store_(store) {}
  void next(std::vector<RowRef>* out) override {
    const uint32_t rows = store_.chunk(chunk_).row_count;
    for (uint32_t r = 0; r < rows; ++r) out->push_back({static_cast<uint32_t>(chunk_), r});
    chunk_ = chunk_ + 1 == store_.chunk_count() ? 0 : chunk_ + 1;
  }
  // To the start of the chunk that holds the position's row.
  uint64_t seek(uint64_t position) override {
    const uint64_t n = store_.meta().rows;
    const uint64_t row = position % n;
    chunk_ = store_.chunk_of_row(row);
    return position - (row - store_.chunk(chunk_).first_row);
  }

 private:
  const Store& store_;
  size_t chunk_ = 0;
};

}  // namespace

std::unique_ptr<OrderCursor> make_ca_order(const Store& store, uint64_t /*seed*/) {
  return std::make_unique<CaCursor>(store);
}

}  // namespace agld::reader
