// Access orders: each is a small cursor over the endless sequence of rows it visits, as
// (chunk, row in chunk) pairs. Internal to the reader layer.
//
// Adding an order: one file src/reader/order_<name>.cpp defining a factory, and one line
// in the table in src/reader/orders.cpp.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "agld/store.hpp"
#include "common/mix.hpp"

namespace agld::reader {

struct RowRef {
  uint32_t chunk = 0;
  uint32_t row = 0;  // within the chunk
};

// The contract: the sequence a cursor yields is a pure function of the store's shape
// (chunk row counts) and the seed; per-pass randomness comes from (seed, pass number).
// Two cursors made from the same arguments yield the same sequence.
class OrderCursor {
 public:
  virtual ~OrderCursor() = default;
  // Appends the next rows of the sequence to *out: at least one, at most a few thousand.
  virtual void next(std::vector<RowRef>* out) = 0;
  // The rows a cursor that computes each row on its own appends a call.
  static constexpr size_t kBlock = 4096;
  // On a fresh cursor: moves it to `position` rows into its sequence, or to an earlier
  // position from which next() goes on, and returns that position (positioned() drops the
  // rows in between). The default moves nothing: the rows are read through.
  virtual uint64_t seek(uint64_t position) { (void)position; return 0; }
};

// A fresh cursor moved to `position` rows into its sequence (a reader resumed where another
// one stopped: ReaderOptions::start): it yields exactly the rows the cursor would have
// yielded from there.
std::unique_ptr<OrderCursor> positioned(std::unique_ptr<OrderCursor> cursor, uint64_t position);

using OrderFactory = std::unique_ptr<OrderCursor> (*)(const Store& store, uint64_t seed);

struct OrderInfo {
  std::string_view name;
  std::string_view summary;
  OrderFactory make;
  // Consecutive rows of the sequence are (nearly always) in different chunks: out of core,
  // reading each row on its own beats reading its chunk (docs/readers.md, direct rows).
  bool random_rows = false;
  // The sequence depends on the seed: the chains of a run each read their own (one seed a
  // chain), so that they are independent given the data. False: one sequence for all.
  bool seeded = false;
  // Where the sequence follows the stored order, what it does with it (for the warning on a
  // store whose rows kept their source order, which may have a trend); empty: it does not.
  std::string_view on_stored_order;
};

// ca with a moving start (order_ca.cpp; ReaderOptions::ca_moving_start): pass p starts at
// chunk floor(frac(p / phi) chunks) of the store and goes round it in stored order. Its
// cursor, the chunk a pass starts at, and the stored row at a position of the sequence.
std::unique_ptr<OrderCursor> make_ca_moving_order(const Store& store);
size_t ca_pass_start(size_t chunks, uint64_t pass);
uint64_t ca_row_at(const Store& store, uint64_t position);

std::span<const OrderInfo> registered_orders();
const OrderInfo* find_order(std::string_view name);

// Counter-based randomness shared by the orders (mix64, common/mix.hpp): keys for (seed,
// salt, pass), a bounded draw and a Fisher-Yates shuffle that do not depend on the
// standard library's distributions.
inline uint64_t key_of(uint64_t seed, uint64_t salt, uint64_t pass) {
  return mix64(mix64(mix64(seed) ^ salt) ^ pass);
}
__extension__ typedef unsigned __int128 Uint128;
// A draw in [0, n) from 64 random bits (bias below n / 2^64).
inline uint64_t bounded(uint64_t bits, uint64_t n) {
  return static_cast<uint64_t>((static_cast<Uint128>(bits) * n) >> 64);
}
// Shuffles v with the stream mix64(key + 1), mix64(key + 2), ...
template <typename T>
void shuffle(std::span<T> v, uint64_t key) {
  for (size_t i = v.size(); i > 1; --i) {
    const size_t j = static_cast<size_t>(bounded(mix64(key + i), i));
    std::swap(v[i - 1], v[j]);
  }
}

}  // namespace agld::reader
