// Several streams in one reader (ReaderOptions::streams): each stream's rows are exactly a
// one-stream reader's with its seed, for every order, store codec and memory share; each
// batch holds every stream's next rows in stream order; the chunks are read once for all.
#include <gtest/gtest.h>

#include <ostream>

#include <iostream>
#include <random>

#include "agld/reader.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace streams_test {  // this file's names (unity batches: tests/CMakeLists.txt)

struct Case {
  std::string order;
  Codec codec;
  uint64_t memory;
};
// ctest lists a case by its settings, not its bytes.
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.order << (c.codec == Codec::kZstd ? ", zstd, " : ", none, ") << (c.memory ? "memory to fit" : "the least memory");
}

class Streams : public ::testing::TestWithParam<Case> {};

// A store of random rows (no long ones) in dir, seeded (AGLD_TEST_SEED overrides).
void random_store(const test::TempDir& dir, uint64_t seed, size_t rows, size_t features, size_t max_row_nnz,
                  size_t chunk_rows, Codec codec, SparseRows* ref, std::unique_ptr<Store>* store) {
  std::mt19937_64 rng(test::test_seed(seed));
  test::RandomMatrixSpec spec;
  spec.rows = rows;
  spec.features = features;
  spec.max_row_nnz = max_row_nnz;
  spec.long_row_prob = 0;
  *ref = test::random_matrix(spec, rng);
  const std::string path = dir.file("s.agld");
  ASSERT_TRUE(test::write_store(path, *ref, chunk_rows, ChunkCodec{codec}, spec.features).is_ok());
  ASSERT_TRUE(Store::open(path, store).is_ok());
}

TEST_P(Streams, EachStreamIsItsOwnOneStreamSequence) {
  const Case& c = GetParam();
  test::TempDir dir;
  SparseRows ref;
  std::unique_ptr<Store> store;
  ASSERT_NO_FATAL_FAILURE(random_store(dir, 5, 3000, 2000, 20, 128, c.codec, &ref, &store));

  const std::vector<uint64_t> seeds = {11, 42, 7};
  constexpr size_t kUnit = 37;  // not a divisor of the chunk's rows
  constexpr size_t kBatches = 100;  // more than a pass of each stream
  ReaderOptions multi;
  multi.order = c.order;
  multi.batch_size = kUnit * seeds.size();
  multi.streams = seeds;
  multi.memory = std::max(c.memory, reader_min_memory(*store, multi));
  std::unique_ptr<Reader> r;
  Status st = Reader::open(*store, multi, &r);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::vector<std::vector<uint64_t>> got(seeds.size());
  Batch b;
  for (size_t k = 0; k < kBatches; ++k) {
    ASSERT_TRUE(r->next(&b).is_ok());
    ASSERT_EQ(b.size(), multi.batch_size);
    for (size_t s = 0; s < seeds.size(); ++s) {
      const Batch part = b.slice(s * kUnit, kUnit);
      for (size_t i = 0; i < kUnit; ++i) {
        const uint64_t id = part.row_ids[i];
        ASSERT_EQ(part.labels[i], ref.labels[id]);
        const auto idx = part.row_indices(i);
        const auto want = ref.row_indices(id);
        ASSERT_TRUE(std::equal(idx.begin(), idx.end(), want.begin(), want.end())) << "row " << id;
        got[s].push_back(id);
      }
    }
  }
  for (size_t s = 0; s < seeds.size(); ++s) {
    ReaderOptions one;
    one.order = c.order;
    one.batch_size = 100;
    one.seed = seeds[s];
    one.memory = std::max(c.memory, reader_min_memory(*store, one));
    std::unique_ptr<Reader> single;
    ASSERT_TRUE(Reader::open(*store, one, &single).is_ok());
    std::vector<uint64_t> want;
    while (want.size() < got[s].size()) {
      ASSERT_TRUE(single->next(&b).is_ok());
      want.insert(want.end(), b.row_ids.begin(), b.row_ids.end());
    }
    want.resize(got[s].size());
    EXPECT_EQ(got[s], want) << "stream " << s;
  }
  if (c.order != "ca") {  // the streams differ (ca's sequence has no seed)
    EXPECT_NE(got[0], got[1]);
  }
}

std::vector<Case> cases() {
  std::vector<Case> out;
  for (const char* order : {"ca", "rr", "ra", "br"}) {
    for (Codec codec : {Codec::kZstd, Codec::kNone}) {
      for (uint64_t memory : {uint64_t{0}, uint64_t{64} << 20}) out.push_back({order, codec, memory});
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(EveryOrder, Streams, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           return p.param.order + (p.param.codec == Codec::kZstd ? "_zstd" : "_none") +
                                  (p.param.memory ? "_fits" : "_least");
                         });

// Out of core, with the cache too small to keep the chunks, K streams of a chunk-sequential
// order (br, ca) read each chunk about once per stream pass, as K one-stream readers would:
// the chunk each stream is in is held until it comes back to it. Dropped, the streams'
// interleaved units read it again and again: here 19 reads a chunk and stream pass on br,
// and 71x the bytes of one chain in a 4-chain tmu-br run at a quarter of a 2M-row store.
TEST(Streams, ChunkSequentialOrdersReadEachChunkOnceAStreamPass) {
  test::TempDir dir;
  SparseRows ref;
  std::unique_ptr<Store> store;
  ASSERT_NO_FATAL_FAILURE(random_store(dir, 6, 20000, 5000, 30, 500, Codec::kZstd, &ref, &store));
  for (const char* order : {"br", "ca"}) {
    for (size_t k : {size_t{1}, size_t{4}}) {
      ReaderOptions o;
      o.order = order;
      o.batch_size = 25 * k;
      for (size_t s = 0; s < k; ++s) o.streams.push_back(100 + s);
      if (k == 1) o.streams.clear(), o.seed = 100;
      o.memory = reader_min_memory(*store, o);  // the least share: the cache keeps about nothing
      std::unique_ptr<Reader> r;
      ASSERT_TRUE(Reader::open(*store, o, &r).is_ok());
      Batch b;
      while (r->stats().rows < 2 * k * ref.rows()) ASSERT_TRUE(r->next(&b).is_ok());
      const ReaderStats& st = r->stats();
      const double reads_a_stream_pass = static_cast<double>(st.chunks_decompressed) / (2.0 * k * store->chunk_count());
      std::cout << "[ info     ] " << order << ", " << k << " streams: " << st.chunks_decompressed << " chunk reads, "
                << reads_a_stream_pass << " a chunk and stream pass (cache " << st.cache_capacity_bytes << " bytes)\n";
      EXPECT_LE(reads_a_stream_pass, 1.05) << order << ", " << k << " streams";
    }
  }
}

TEST(Streams, BatchMustHoldEveryStreamEqually) {
  test::TempDir dir;
  std::mt19937_64 rng(1);
  test::RandomMatrixSpec spec;
  spec.rows = 100;
  const SparseRows ref = test::random_matrix(spec, rng);
  ASSERT_TRUE(test::write_store(dir.file("s.agld"), ref, 16, ChunkCodec{}, spec.features).is_ok());
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(dir.file("s.agld"), &store).is_ok());
  ReaderOptions o;
  o.order = "rr";
  o.batch_size = 10;
  o.streams = {1, 2, 3};
  std::unique_ptr<Reader> r;
  const Status st = Reader::open(*store, o, &r);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("3 streams"), std::string::npos) << st.message();
}

}  // namespace streams_test
}  // namespace
}  // namespace agld
