// Several seeded sequences of one order in one reader (ReaderOptions::streams): the
// interleaved cursor yields `unit` rows of stream 0, then `unit` rows of stream 1, ..., and
// around again, so that each batch of unit x streams rows holds each stream's next unit
// rows in stream order. Each stream's rows are exactly its own cursor's sequence: a reader
// of one stream with the same seed yields them too.
#include "reader/interleave.hpp"

namespace agld::reader {
namespace {

class InterleavedCursor final : public OrderCursor {
 public:
  InterleavedCursor(std::vector<std::unique_ptr<OrderCursor>> streams, size_t unit)
      : streams_(std::move(streams)), pending_(streams_.size()), unit_(unit) {}

  void next(std::vector<RowRef>* out) override {
    std::vector<RowRef>& have = pending_[at_];
    while (have.size() - head_[at_] < unit_) {
      if (head_[at_] > 0 && 2 * head_[at_] >= have.size()) {  // what was handed out goes
        have.erase(have.begin(), have.begin() + static_cast<std::ptrdiff_t>(head_[at_]));
        head_[at_] = 0;
      }
      streams_[at_]->next(&have);
    }
    const auto from = have.begin() + static_cast<std::ptrdiff_t>(head_[at_]);
    out->insert(out->end(), from, from + static_cast<std::ptrdiff_t>(unit_));
    head_[at_] += unit_;
    at_ = (at_ + 1) % streams_.size();
  }

 private:
  std::vector<std::unique_ptr<OrderCursor>> streams_;
  std::vector<std::vector<RowRef>> pending_;  // rows fetched from each stream, not yet out
  std::vector<size_t> head_ = std::vector<size_t>(pending_.size(), 0);
  size_t unit_;
  size_t at_ = 0;
};

}  // namespace

std::unique_ptr<OrderCursor> interleave(std::vector<std::unique_ptr<OrderCursor>> streams, size_t unit) {
  return std::make_unique<InterleavedCursor>(std::move(streams), unit);
}

}  // namespace agld::reader
