// Positioning an order's cursor (a run resumed from a checkpoint, docs/reliability.md): for
// every registered order, a cursor moved to position p yields exactly what a cursor read
// through from 0 yields after p rows, at chunk and pass boundaries and inside them; and a
// reader opened with ReaderOptions::start (one stream or several) yields the batches a
// reader from 0 yields after as many rows of each stream.
#include <gtest/gtest.h>

#include <random>

#include "agld/reader.hpp"
#include "reader/order.hpp"
#include "test_support.hpp"

namespace agld::test {
namespace {
namespace seek_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// The first n rows a cursor yields.
std::vector<reader::RowRef> take(reader::OrderCursor& c, size_t n) {
  std::vector<reader::RowRef> out;
  while (out.size() < n) c.next(&out);
  out.resize(n);
  return out;
}

bool same(const std::vector<reader::RowRef>& a, const std::vector<reader::RowRef>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (a[i].chunk != b[i].chunk || a[i].row != b[i].row) return false;
  }
  return true;
}

class SeekTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::mt19937_64 rng(test_seed(71));
    RandomMatrixSpec spec;
    spec.rows = kRows;
    spec.features = 50;
    spec.max_row_nnz = 5;
    spec.long_row_prob = 0;
    rows_ = random_matrix(spec, rng);
    ASSERT_TRUE(write_store(dir_.file("s.agld"), rows_, 37, ChunkCodec{}, spec.features).is_ok());
    ASSERT_TRUE(Store::open(dir_.file("s.agld"), &store_).is_ok());
  }
  static constexpr size_t kRows = 1000;  // 27 chunks of 37 rows, the last of 1
  TempDir dir_;
  SparseRows rows_;
  std::unique_ptr<Store> store_;
};

TEST_F(SeekTest, EveryOrderPositionsAsItReadsThrough) {
  const uint64_t n = kRows;
  const std::vector<uint64_t> positions = {0, 1, 36, 37, 38, 500, n - 1, n, n + 1, n + 37, 3 * n + 17, 7 * n - 2};
  for (const reader::OrderInfo& order : reader::registered_orders()) {
    for (uint64_t seed : {0u, 5u}) {
      auto ref = order.make(*store_, seed);
      const std::vector<reader::RowRef> all = take(*ref, 7 * n + 600);
      for (uint64_t p : positions) {
        auto c = reader::positioned(order.make(*store_, seed), p);
        const std::vector<reader::RowRef> got = take(*c, 600);
        const std::vector<reader::RowRef> want(all.begin() + static_cast<std::ptrdiff_t>(p),
                                               all.begin() + static_cast<std::ptrdiff_t>(p + 600));
        EXPECT_TRUE(same(got, want)) << order.name << " seed " << seed << " at " << p;
      }
    }
  }
}

// The ids of the rows of the next `batches` batches.
std::vector<uint64_t> ids(Reader& r, size_t batches) {
  std::vector<uint64_t> out;
  for (size_t b = 0; b < batches; ++b) {
    Batch batch;
    Status st = r.next(&batch);
    EXPECT_TRUE(st.is_ok()) << st.message();
    out.insert(out.end(), batch.row_ids.begin(), batch.row_ids.end());
  }
  return out;
}

TEST_F(SeekTest, AReaderStartsWhereAnotherStopped) {
  for (const ReaderOrderInfo& order : reader_orders()) {
    for (bool streams : {false, true}) {
      ReaderOptions o;
      o.order = order.name;
      o.seed = 3;
      o.batch_size = 30;
      o.memory = uint64_t{64} << 20;
      if (streams) o.streams = {11, 12, 13};
      std::unique_ptr<Reader> whole, resumed;
      ASSERT_TRUE(Reader::open(*store_, o, &whole).is_ok());
      const std::vector<uint64_t> all = ids(*whole, 150);
      const size_t skipped = 77;  // batches; each holds batch_size / streams rows of each stream
      o.start = skipped * (streams ? 10 : 30);
      ASSERT_TRUE(Reader::open(*store_, o, &resumed).is_ok());
      const std::vector<uint64_t> got = ids(*resumed, 150 - skipped);
      EXPECT_TRUE(std::equal(got.begin(), got.end(), all.begin() + skipped * 30, all.end()))
          << order.name << (streams ? " with 3 streams" : "");
    }
  }
}

}  // namespace seek_test
}  // namespace
}  // namespace agld::test
