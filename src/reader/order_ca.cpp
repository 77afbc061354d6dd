// ca: the rows in stored order, chunk by chunk, wrapping around; with a moving start, each
// pass from a chunk a golden-ratio step further round (pass 0 from the first).
//
// Why the start may move: a sampler that refreshes its snapshot once a pass (ptu, tmu) would
// otherwise meet every coordinate at the same place of the pass at each refresh, so the map
// from one snapshot to the next is the same every pass: its drift on the stale snapshot since
// its last row, pulled back at its rows. Where that map's factor exceeds 1 (a rare coordinate
// whose last row comes early), the chain diverges every time. Starting pass p at the fraction
// frac(p / phi) of the chunks spreads the refresh point evenly over the pass, as a reshuffle
// does, while a pass still reads every row once, in runs of whole chunks (docs/readers.md).
// Without refreshes (ppu) the fixed start is better: each row's table entry is then exactly a
// pass old, and a moving start heated ppu-ca's draws by 10-15 % on a 30-iteration pass.
#include <cmath>
#include <numbers>

#include "reader/order.hpp"

namespace agld::reader {

size_t ca_pass_start(size_t chunks, uint64_t pass) {
  const double f = static_cast<double>(pass) / std::numbers::phi;
  const auto c = static_cast<size_t>((f - std::floor(f)) * static_cast<double>(chunks));
  return c < chunks ? c : chunks - 1;
}

uint64_t ca_row_at(const Store& store, uint64_t position) {
  const uint64_t n = store.meta().rows;
  return (store.chunk(ca_pass_start(store.chunk_count(), position / n)).first_row + position % n) % n;
}

namespace {

class CaCursor final : public OrderCursor {
 public:
  CaCursor(const Store& store, bool moving) : store_(store), chunks_(store.chunk_count()), moving_(moving) {}
  void next(std::vector<RowRef>* out) override {
    if (left_ == 0) {  // a pass begins
      chunk_ = first_chunk(pass_++);
      left_ = chunks_;
    }
    const uint32_t rows = store_.chunk(chunk_).row_count;
    for (uint32_t r = 0; r < rows; ++r) out->push_back({static_cast<uint32_t>(chunk_), r});
    chunk_ = chunk_ + 1 == chunks_ ? 0 : chunk_ + 1;
    --left_;
  }
  // To the start of the chunk that holds the position's row.
  uint64_t seek(uint64_t position) override {
    const uint64_t n = store_.meta().rows, pass = position / n;
    const size_t start = first_chunk(pass);
    const uint64_t row = (store_.chunk(start).first_row + position % n) % n;
    chunk_ = store_.chunk_of_row(row);
    left_ = chunks_ - (chunk_ + chunks_ - start) % chunks_;
    pass_ = pass + 1;
    return position - (row - store_.chunk(chunk_).first_row);
  }

 private:
  size_t first_chunk(uint64_t pass) const { return moving_ ? ca_pass_start(chunks_, pass) : 0; }

  const Store& store_;
  size_t chunks_;
  bool moving_;
  size_t chunk_ = 0;
  size_t left_ = 0;   // chunks of the current pass still to yield
  uint64_t pass_ = 0;  // the next pass's number
};

}  // namespace

std::unique_ptr<OrderCursor> make_ca_order(const Store& store, uint64_t /*seed*/) {
  return std::make_unique<CaCursor>(store, false);
}

std::unique_ptr<OrderCursor> make_ca_moving_order(const Store& store) {
  return std::make_unique<CaCursor>(store, true);
}

}  // namespace agld::reader
