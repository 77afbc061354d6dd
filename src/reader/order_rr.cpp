// rr: random reshuffling. Pass p visits every row once, in the order of a pseudo-random
// permutation keyed by (seed, p). The permutation is a balanced Feistel network on the
// smallest even number of bits that covers N, cycle-walked back into [0, N): O(1) memory
// whatever N, and position i of pass p is computed on its own.
#include <array>
#include <bit>

#include "reader/order.hpp"

namespace agld::reader {
namespace {

constexpr uint64_t kRrSalt = 0x7272706572ull;  // "rrper"
constexpr int kRounds = 6;

class Permutation {
 public:
  Permutation(uint64_t n, uint64_t key) : n_(n) {
    const int bits = n <= 1 ? 2 : std::bit_width(n - 1);
    half_ = (bits + 1) / 2;
    mask_ = (uint64_t{1} << half_) - 1;
    // The round keys depend on the pass alone: hashed once here, not once a row.
    for (int round = 0; round < kRounds; ++round) round_key_[round] = mix64(key + static_cast<uint64_t>(round));
  }
  uint64_t operator()(uint64_t i) const {
    uint64_t x = i;
    do x = encrypt(x);
    while (x >= n_);
    return x;
  }

 private:
  uint64_t encrypt(uint64_t x) const {
    uint64_t l = x >> half_, r = x & mask_;
    for (int round = 0; round < kRounds; ++round) {
      const uint64_t f = mix64(r ^ round_key_[round]) & mask_;
      const uint64_t next_r = l ^ f;
      l = r;
      r = next_r;
    }
    return (l << half_) | r;
  }
  uint64_t n_, mask_;
  int half_;
  std::array<uint64_t, kRounds> round_key_;
};

class RrCursor final : public OrderCursor {
 public:
  RrCursor(const Store& store, uint64_t seed)
      : store_(store),
        seed_(seed),
        rows_(store.meta().rows),
        perm_(rows_, key_of(seed, kRrSalt, 0)) {}
  void next(std::vector<RowRef>* out) override {
    const uint64_t end = std::min<uint64_t>(rows_, i_ + kBlock);
    for (; i_ < end; ++i_) {
      const uint64_t row = perm_(i_);
      const size_t k = store_.chunk_of_row(row);
      out->push_back(
          {static_cast<uint32_t>(k), static_cast<uint32_t>(row - store_.chunk(k).first_row)});
    }
    if (i_ == rows_) {
      i_ = 0;
      ++pass_;
      perm_ = Permutation(rows_, key_of(seed_, kRrSalt, pass_));
    }
  }
  // Position i of pass p is computed on its own.
  uint64_t seek(uint64_t position) override {
    pass_ = position / rows_;
    i_ = position % rows_;
    perm_ = Permutation(rows_, key_of(seed_, kRrSalt, pass_));
    return position;
  }

 private:
  const Store& store_;
  uint64_t seed_;
  uint64_t rows_;
  Permutation perm_;
  uint64_t i_ = 0;
  uint64_t pass_ = 0;
};

}  // namespace

std::unique_ptr<OrderCursor> make_rr_order(const Store& store, uint64_t seed) {
  return std::make_unique<RrCursor>(store, seed);
}

}  // namespace agld::reader
