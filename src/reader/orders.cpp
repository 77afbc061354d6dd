// The registry of access orders. Adding an order: its file, and one line in kOrders.
#include "common/registry.hpp"
#include "reader/order.hpp"

namespace agld::reader {

std::unique_ptr<OrderCursor> make_ca_order(const Store& store, uint64_t seed);
std::unique_ptr<OrderCursor> make_rr_order(const Store& store, uint64_t seed);
std::unique_ptr<OrderCursor> make_ra_order(const Store& store, uint64_t seed);
std::unique_ptr<OrderCursor> make_br_order(const Store& store, uint64_t seed);

namespace {

constexpr OrderInfo kOrders[] = {
    {"ca", "cyclic: stored order, wrapping around", make_ca_order, false, false,
     "cyclic access (ca) reads them in that order"},
    {"rr", "random reshuffling: a fresh random permutation of all rows each pass", make_rr_order,
     true, true, ""},
    {"ra", "random access: rows uniform with replacement", make_ra_order, true, true, ""},
    {"br", "block reshuffling: chunks in a fresh random order each pass, rows shuffled inside",
     make_br_order, false, true, "block reshuffling (br) keeps a chunk's neighbouring rows together"},
};

}  // namespace

namespace {

// Drops the first `skip` rows of a cursor's sequence.
class SkippingCursor final : public OrderCursor {
 public:
  SkippingCursor(std::unique_ptr<OrderCursor> inner, uint64_t skip) : inner_(std::move(inner)), skip_(skip) {}
  void next(std::vector<RowRef>* out) override {
    while (skip_ > 0) {
      buf_.clear();
      inner_->next(&buf_);
      if (buf_.size() > skip_) {
        out->insert(out->end(), buf_.begin() + static_cast<std::ptrdiff_t>(skip_), buf_.end());
        skip_ = 0;
        return;
      }
      skip_ -= buf_.size();
    }
    inner_->next(out);
  }

 private:
  std::unique_ptr<OrderCursor> inner_;
  uint64_t skip_;
  std::vector<RowRef> buf_;
};

}  // namespace

std::unique_ptr<OrderCursor> positioned(std::unique_ptr<OrderCursor> cursor, uint64_t position) {
  if (position == 0) return cursor;
  const uint64_t at = cursor->seek(position);
  if (at == position) return cursor;
  return std::make_unique<SkippingCursor>(std::move(cursor), position - at);
}

std::span<const OrderInfo> registered_orders() { return kOrders; }

const OrderInfo* find_order(std::string_view name) { return find_by_name<OrderInfo>(kOrders, name); }

}  // namespace agld::reader
