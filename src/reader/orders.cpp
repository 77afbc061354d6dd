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
    {"ca", "cyclic: stored order, wrapping around", make_ca_order, false},
    {"rr", "random reshuffling: a fresh random permutation of all rows each pass", make_rr_order,
     true},
    {"ra", "random access: rows uniform with replacement", make_ra_order, true},
    {"br", "block reshuffling: chunks in a fresh random order each pass, rows shuffled inside",
     make_br_order, false},
};

}  // namespace

std::span<const OrderInfo> registered_orders() { return kOrders; }

const OrderInfo* find_order(std::string_view name) { return find_by_name<OrderInfo>(kOrders, name); }

}  // namespace agld::reader
