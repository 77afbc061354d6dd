// The preconditioner's row sample (sampler/row_sample.hpp): on a store whose rows keep their
// source order it spreads over the chunks (one chunk there is one stretch of the rows), and
// counts every row it read; on a shuffled store it reads the first whole chunks.
#include <gtest/gtest.h>

#include <set>

#include "sampler/row_sample.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace row_sample_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// 100 chunks of 5,000 rows; every row of chunk c holds feature c alone (a time-ordered store
// whose chunks are months).
TEST(RowSample, SpreadsOverTheChunksOfAStoreInSourceOrder) {
  constexpr uint32_t kChunks = 100, kRows = 5000;
  SparseRows rows;
  for (uint32_t c = 0; c < kChunks; ++c) {
    for (uint32_t r = 0; r < kRows; ++r) rows.add_row(1.0, std::vector<uint32_t>{c}, std::vector<float>{1.0f});
  }
  TempDir dir;
  for (bool shuffled : {false, true}) {
    StoreMeta meta = sampler_meta(rows, kChunks, true);
    meta.options.shuffle = shuffled;
    const std::string path = dir.file(shuffled ? "shuffled.agld" : "kept.agld");
    ASSERT_TRUE(write_store(path, rows, kRows, ChunkCodec{}, meta).is_ok());
    std::unique_ptr<Store> store;
    ASSERT_TRUE(Store::open(path, &store).is_ok());
    ResolvedSample r;
    r.dim = kChunks;
    r.given.seed = test_seed(5);
    sampler::RowSample s;
    uint64_t read = 0;
    ASSERT_TRUE(sampler::read_row_sample(*store, r, std::vector<float>(kChunks, 1.0f), {}, &s, &read).is_ok());
    const std::set<uint32_t> chunks(s.cols.begin(), s.cols.end());
    if (shuffled) {  // the first 14 whole chunks
      EXPECT_EQ(s.rows(), sampler::kSampleRows);
      EXPECT_EQ(read, sampler::kSampleRows);
      EXPECT_EQ(chunks.size(), (sampler::kSampleRows + kRows - 1) / kRows);
    } else {  // every 5th row (ceil(64 x 5,000 / 65,536)) until 65,536 are kept: 66 chunks' worth
      EXPECT_GE(chunks.size(), sampler::kSpreadChunks) << "seed " << r.given.seed;
      EXPECT_EQ(s.rows(), sampler::kSampleRows);
      EXPECT_EQ(read, 5 * (sampler::kSampleRows - 1) + 1);
    }
  }
}

}  // namespace row_sample_test
}  // namespace
}  // namespace agld::test
