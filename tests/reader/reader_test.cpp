// Readers against an in-memory reference: every order's pass structure, the contents of
// every row delivered, determinism across batch sizes, prefetch depths and memory shares,
// RA's uniformity, the cache's bound, the whole-store case, and errors at the consumer.
#include "agld/reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include "agld/store.hpp"
#include "reader/order.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace reader_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::TempDir;

// A store of n rows in chunks of chunk_rows, and its rows.
struct Fixture {
  TempDir dir;
  SparseRows ref;
  std::unique_ptr<Store> store;

  Fixture(size_t n, size_t chunk_rows, Codec codec = Codec::kZstd, uint64_t seed = 7) {
    std::mt19937_64 rng(seed);
    test::RandomMatrixSpec spec;
    spec.rows = n;
    spec.features = 5000;
    spec.max_row_nnz = 30;
    spec.long_row_prob = 0.002;
    spec.binary_labels = false;
    ref = test::random_matrix(spec, rng);
    const std::string path = dir.file("s.agld");
    Status st = test::write_store(path, ref, chunk_rows, ChunkCodec{codec}, spec.features);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    st = Store::open(path, &store);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  uint64_t rows() const { return ref.rows(); }
};

std::unique_ptr<Reader> open_reader(const Store& store, ReaderOptions opt) {
  std::unique_ptr<Reader> r;
  Status st = Reader::open(store, opt, &r);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return r;
}

// Reads at least `rows` rows; checks each row against the reference; returns the row ids.
std::vector<uint64_t> read_ids(Reader& reader, const SparseRows& ref, uint64_t rows) {
  std::vector<uint64_t> ids;
  Batch b;
  while (ids.size() < rows) {
    Status st = reader.next(&b);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    if (!st.is_ok()) break;
    EXPECT_EQ(b.size(), reader.options().batch_size);
    EXPECT_EQ(b.labels.size(), b.size());
    EXPECT_EQ(b.rows.size(), b.size());
    for (size_t i = 0; i < b.size(); ++i) {
      const uint64_t id = b.row_ids[i];
      EXPECT_LT(id, ref.rows());
      if (id >= ref.rows()) return ids;
      EXPECT_EQ(b.labels[i], ref.labels[id]) << "row " << id;
      auto idx = b.row_indices(i);
      auto val = b.row_values(i);
      auto ridx = ref.row_indices(id);
      auto rval = ref.row_values(id);
      EXPECT_TRUE(std::equal(idx.begin(), idx.end(), ridx.begin(), ridx.end())) << "row " << id;
      EXPECT_TRUE(std::equal(val.begin(), val.end(), rval.begin(), rval.end())) << "row " << id;
      ids.push_back(id);
    }
  }
  ids.resize(rows);
  return ids;
}

// 1000 rows in chunks of 37: 28 chunks, the last with one row.
constexpr size_t kRows = 1000, kChunkRows = 37;

TEST(Reader, OrdersVisitEveryRowOncePerPass) {
  Fixture f(kRows, kChunkRows);
  const size_t chunks = f.store->chunk_count();
  ASSERT_EQ(chunks, 28u);
  for (const char* order : {"ca", "rr", "br"}) {
    for (size_t batch : {1, 7, 64, 333, 1000, 2500}) {
      for (size_t prefetch : {0, 3}) {
        SCOPED_TRACE(testing::Message() << order << " batch " << batch << " prefetch " << prefetch);
        ReaderOptions opt;
        opt.order = order;
        opt.batch_size = batch;
        opt.prefetch = prefetch;
        auto reader = open_reader(*f.store, opt);
        ASSERT_TRUE(reader);
        const auto ids = read_ids(*reader, f.ref, 3 * kRows);
        std::vector<std::vector<uint64_t>> passes;
        for (size_t p = 0; p < 3; ++p) {
          std::vector<uint64_t> pass(ids.begin() + p * kRows, ids.begin() + (p + 1) * kRows);
          std::vector<uint64_t> sorted = pass;
          std::sort(sorted.begin(), sorted.end());
          for (size_t i = 0; i < kRows; ++i) ASSERT_EQ(sorted[i], i) << "pass " << p;
          if (std::string(order) == "ca") {
            for (size_t i = 0; i < kRows; ++i) ASSERT_EQ(pass[i], i);
          }
          if (std::string(order) == "br") {  // each chunk's rows together
            size_t changes = 0;
            for (size_t i = 1; i < kRows; ++i) {
              changes += f.store->chunk_of_row(pass[i]) != f.store->chunk_of_row(pass[i - 1]);
            }
            EXPECT_EQ(changes, chunks - 1);
          }
          passes.push_back(pass);
        }
        if (std::string(order) != "ca") {  // a fresh order each pass
          EXPECT_NE(passes[0], passes[1]);
          EXPECT_NE(passes[1], passes[2]);
        }
        EXPECT_EQ(reader->stats().rows, reader->stats().batches * batch);
      }
    }
  }
}

// ca with a moving start (for a sampler that refreshes once a pass; docs/readers.md): each
// pass is the stored order from a chunk's first row, wrapping around, pass 0 from row 0 and
// pass p from chunk floor(frac(p / phi) C); a positioned reader goes on from any row, the
// chunk cache's fixed set still hits every pass.
TEST(Reader, CyclicMovingStartRotatesEachPass) {
  Fixture f(kRows, kChunkRows);
  const size_t chunks = f.store->chunk_count();
  for (size_t batch : {7, 333, 2500}) {
    SCOPED_TRACE(testing::Message() << "batch " << batch);
    ReaderOptions opt;
    opt.order = "ca";
    opt.ca_moving_start = true;
    opt.batch_size = batch;
    auto reader = open_reader(*f.store, opt);
    ASSERT_TRUE(reader);
    const auto ids = read_ids(*reader, f.ref, 6 * kRows);
    std::set<uint64_t> starts;
    for (size_t p = 0; p < 6; ++p) {
      const uint64_t first = f.store->chunk(reader::ca_pass_start(chunks, p)).first_row;
      if (p == 0) {
        EXPECT_EQ(first, 0u);
      }
      starts.insert(first);
      for (size_t i = 0; i < kRows; ++i) {
        ASSERT_EQ(ids[p * kRows + i], (first + i) % kRows) << "pass " << p << ", row " << i;
        ASSERT_EQ(reader::ca_row_at(*f.store, p * kRows + i), (first + i) % kRows);
      }
    }
    EXPECT_EQ(starts.size(), 6u);  // six passes, six starts
    for (uint64_t at : {uint64_t{1}, uint64_t{kRows + 17}, uint64_t{4 * kRows - 1}}) {
      ReaderOptions from = opt;
      from.start = at;
      EXPECT_EQ(read_ids(*open_reader(*f.store, from), f.ref, kRows),
                std::vector<uint64_t>(ids.begin() + static_cast<std::ptrdiff_t>(at),
                                      ids.begin() + static_cast<std::ptrdiff_t>(at + kRows)))
          << "from " << at;
    }
  }
}

// A batch points into the decoded chunks (and the slot before the current one is held for
// it): ca and br batches no longer than a chunk copy no row, in core and out of core, with
// and without a background thread. Larger batches, over more slots than are held, copy the
// rest (checked row by row by read_ids, as everywhere).
TEST(Reader, BatchesPointIntoTheChunks) {
  Fixture f(5000, 250);
  uint64_t raw = 0;
  for (size_t k = 0; k < f.store->chunk_count(); ++k) raw += f.store->chunk(k).raw_size;
  for (const char* order : {"ca", "br"}) {
    for (size_t prefetch : {0, 4}) {
      for (bool fits : {false, true}) {
        SCOPED_TRACE(testing::Message() << order << " prefetch " << prefetch << " fits " << fits);
        for (size_t batch : {100, 250, 1200}) {
          ReaderOptions opt;
          opt.order = order;
          opt.batch_size = batch;
          opt.prefetch = prefetch;
          opt.memory = reader_min_memory(*f.store, opt) + (fits ? 4 * raw : raw / 6);
          auto reader = open_reader(*f.store, opt);
          read_ids(*reader, f.ref, 12000);
          // Row ids, labels and views only, or copied entries as well (1200 rows span 5 or
          // 6 slots of at most a chunk read each: some rows are copied).
          const uint64_t views_only = batch * (16 + sizeof(BatchRow) + 16);
          if (batch <= 250) {
            EXPECT_LE(reader->stats().batch_bytes, views_only) << batch;
          } else {
            EXPECT_GT(reader->stats().batch_bytes, views_only) << batch;
          }
        }
      }
    }
  }
}

TEST(Reader, SequenceDependsOnlyOnSeedOrderAndStore) {
  Fixture f(kRows, kChunkRows);
  for (const char* order : {"ca", "rr", "ra", "br"}) {
    SCOPED_TRACE(order);
    ReaderOptions base;
    base.order = order;
    base.seed = 42;
    base.batch_size = 1000;
    base.prefetch = 0;
    const auto want = read_ids(*open_reader(*f.store, base), f.ref, 2500);
    struct Variant {
      size_t batch, prefetch;
      uint64_t memory;
    };
    const uint64_t small = reader_min_memory(*f.store, base) + 4096;
    for (Variant v :
         {Variant{1000, 0, base.memory}, Variant{7, 1, base.memory}, Variant{333, 16, base.memory},
          Variant{64, 2, 2 * small}, Variant{1, 4, 2 * small}, Variant{1, 4, small + 4096}}) {
      for (size_t threads : {1, 3}) {
        ReaderOptions opt = base;
        opt.batch_size = v.batch;
        opt.prefetch = v.prefetch;
        opt.decode_threads = threads;
        opt.memory = std::max(v.memory, reader_min_memory(*f.store, opt));
        EXPECT_EQ(read_ids(*open_reader(*f.store, opt), f.ref, 2500), want)
            << "batch " << v.batch << " prefetch " << v.prefetch << " memory " << opt.memory
            << " decode threads " << threads;
      }
    }
    if (std::string(order) != "ca") {
      ReaderOptions other = base;
      other.seed = 43;
      EXPECT_NE(read_ids(*open_reader(*f.store, other), f.ref, 2500), want);
    }
  }
}

// The statistics count what was delivered: the same whatever the prefetch depth and the
// number of decode threads, in core and out of core.
TEST(Reader, StatisticsDependOnlyOnWhatWasDelivered) {
  for (Codec codec : {Codec::kZstd, Codec::kNone}) {
    Fixture f(10000, 250, codec);
    uint64_t raw = 0;
    for (size_t k = 0; k < f.store->chunk_count(); ++k) raw += f.store->chunk(k).raw_size;
    for (const char* order : {"ca", "rr", "ra", "br"}) {
      for (bool fits : {false, true}) {
        SCOPED_TRACE(testing::Message()
                     << order << (fits ? " in core " : " out of core ") << static_cast<int>(codec));
        std::vector<ReaderStats> seen;
        for (auto [prefetch, threads] : {std::pair<size_t, size_t>{0, 1}, {1, 1}, {4, 2}, {4, 4}}) {
          {
            ReaderOptions opt;
            opt.order = order;
            opt.seed = 9;
            opt.batch_size = 300;
            opt.prefetch = prefetch;
            opt.decode_threads = threads;
            // Whole chunks (direct rows: tests/reader/direct_rows_test.cpp), so that the
            // cache's part is the same for every configuration: the minimum share plus it.
            opt.direct_rows = false;
            opt.memory = reader_min_memory(*f.store, opt) + (fits ? 4 * raw : raw / 6);
            auto reader = open_reader(*f.store, opt);
            const bool random = std::string(order) == "rr" || std::string(order) == "ra";
            read_ids(*reader, f.ref, random && !fits ? 900 : 25000);
            seen.push_back(reader->stats());
            EXPECT_EQ(seen.back().whole_store_cached, fits);
          }
        }
        for (const ReaderStats& s : seen) {
          EXPECT_EQ(s.cache_capacity_bytes, seen.back().cache_capacity_bytes);
          EXPECT_LE(s.cache_peak_bytes, s.cache_capacity_bytes);
          EXPECT_EQ(s.rows, seen.back().rows);
          EXPECT_EQ(s.chunk_visits, seen.back().chunk_visits);
          EXPECT_EQ(s.cache_hits, seen.back().cache_hits);
          EXPECT_EQ(s.cache_misses, seen.back().cache_misses);
          EXPECT_EQ(s.chunks_decompressed, seen.back().chunks_decompressed);
          EXPECT_EQ(s.bytes_read, seen.back().bytes_read);
          EXPECT_EQ(s.bytes_decompressed, seen.back().bytes_decompressed);
          EXPECT_EQ(s.direct_rows, 0u);
        }
      }
    }
  }
}

// Wilson-Hilferty: the chi-square quantile with df degrees of freedom at normal quantile z.
double chi_square_quantile(double df, double z) {
  const double a = 2.0 / (9.0 * df);
  return df * std::pow(1 - a + z * std::sqrt(a), 3);
}

TEST(Reader, RandomAccessIsUniform) {
  const uint64_t seed = test::test_seed(2024);
  Fixture f(kRows, kChunkRows);
  ReaderOptions opt;
  opt.order = "ra";
  opt.seed = seed;
  opt.batch_size = 1000;
  auto reader = open_reader(*f.store, opt);
  const uint64_t draws = 200 * kRows;
  std::vector<uint64_t> count(kRows);
  Batch b;
  for (uint64_t done = 0; done < draws; done += b.size()) {
    ASSERT_TRUE(reader->next(&b).is_ok());
    for (uint64_t id : b.row_ids) ++count[id];
  }
  const double expect = static_cast<double>(draws) / kRows;
  double chi2 = 0;
  for (uint64_t c : count)
    chi2 += (static_cast<double>(c) - expect) * (static_cast<double>(c) - expect) / expect;
  // Two-sided at 1e-6 each way: too far from uniform, or too even to be random.
  const double df = kRows - 1;
  EXPECT_LT(chi2, chi_square_quantile(df, 4.753)) << "seed " << seed;
  EXPECT_GT(chi2, chi_square_quantile(df, -4.753)) << "seed " << seed;
  // Draws with replacement: some row repeats within the first batch (birthday bound).
  std::set<uint64_t> distinct(b.row_ids.begin(), b.row_ids.end());
  EXPECT_LT(distinct.size(), b.size());
}

TEST(Reader, CacheStaysWithinItsShare) {
  Fixture f(20000, 500);
  uint64_t total_decoded = 0;
  for (size_t k = 0; k < f.store->chunk_count(); ++k) total_decoded += f.store->chunk(k).raw_size;
  for (const char* order : {"ca", "br", "rr", "ra"}) {
    SCOPED_TRACE(order);
    ReaderOptions opt;
    opt.order = order;
    opt.batch_size = 100;
    opt.prefetch = 3;
    opt.memory = reader_min_memory(*f.store, opt) + total_decoded / 8;  // ~5 chunks of cache
    auto reader = open_reader(*f.store, opt);
    const bool sequential = std::string(order) == "ca" || std::string(order) == "br";
    const uint64_t rows = sequential ? 2 * f.rows() + 123 : 2000;
    read_ids(*reader, f.ref, rows);
    const ReaderStats& s = reader->stats();
    EXPECT_FALSE(s.whole_store_cached);
    EXPECT_GT(s.cache_capacity_bytes, 0u);
    EXPECT_LE(s.cache_peak_bytes, s.cache_capacity_bytes);
    EXPECT_LE(s.cache_bytes, s.cache_capacity_bytes);
    EXPECT_GT(s.cache_peak_bytes, s.cache_capacity_bytes / 2);  // the cache is used
    EXPECT_LE(s.decoded_peak_bytes, opt.memory);
    EXPECT_GT(s.cache_misses, f.store->chunk_count());  // chunks were evicted and read again
    EXPECT_EQ(s.cache_hits + s.cache_misses, s.chunk_visits);
    EXPECT_EQ(s.chunks_decompressed, s.cache_misses);
  }
}

// Out of core, the cache keeps the chunks it first held: every later pass of ca finds the
// same chunks there (least recently used out would evict each chunk just before its next
// use and never hit); br finds about as many, in its own order.
TEST(Reader, LaterPassesHitWhatTheCacheHolds) {
  Fixture f(20000, 500);
  const size_t n = f.store->chunk_count();
  ReaderOptions opt;
  opt.batch_size = 100;
  opt.prefetch = 3;
  opt.memory = (reader_min_memory(*f.store, opt) + reader_whole_store_memory(*f.store, opt)) / 2;
  for (const char* order : {"ca", "br"}) {
    SCOPED_TRACE(order);
    opt.order = order;
    auto reader = open_reader(*f.store, opt);
    read_ids(*reader, f.ref, f.rows());
    const ReaderStats first = reader->stats();
    EXPECT_FALSE(first.whole_store_cached);
    EXPECT_EQ(first.cache_hits, 0u);
    EXPECT_EQ(first.cache_misses, n);
    read_ids(*reader, f.ref, f.rows());
    const uint64_t held = reader->stats().cache_hits;
    read_ids(*reader, f.ref, f.rows());
    const uint64_t third = reader->stats().cache_hits - held;
    // Half the store's decoded bytes less the ring's share: a third to a half of the chunks.
    EXPECT_GT(held, n / 4);
    EXPECT_LT(held, n);
    if (std::string(order) == "ca") {
      EXPECT_EQ(third, held);
    } else {
      EXPECT_GT(third, 0u);
    }
    EXPECT_EQ(reader->stats().chunks_decompressed, 3 * n - held - third);
  }
}

TEST(Reader, WholeStoreIsReadOnce) {
  Fixture f(kRows, kChunkRows);
  uint64_t stored = 0, raw = 0;
  for (size_t k = 0; k < f.store->chunk_count(); ++k) {
    stored += f.store->chunk(k).stored_size;
    raw += f.store->chunk(k).raw_size;
  }
  for (const char* order : {"ca", "rr", "br", "ra"}) {
    SCOPED_TRACE(order);
    ReaderOptions opt;
    opt.order = order;
    opt.batch_size = 100;
    auto reader = open_reader(*f.store, opt);
    read_ids(*reader, f.ref, 5 * kRows);
    const ReaderStats& s = reader->stats();
    EXPECT_TRUE(s.whole_store_cached);
    EXPECT_EQ(s.chunks_decompressed, f.store->chunk_count());
    EXPECT_EQ(s.bytes_read, stored);
    EXPECT_EQ(s.bytes_decompressed, raw);
    EXPECT_EQ(s.rows, 5 * kRows);
    EXPECT_DOUBLE_EQ(s.passes, 5.0);
  }
}

TEST(Reader, WholeStoreMemoryIsTheShareAtWhichTheStoreIsKept) {
  Fixture f(kRows, kChunkRows);
  for (const char* order : {"ca", "rr"}) {
    SCOPED_TRACE(order);
    ReaderOptions opt;
    opt.order = order;
    opt.batch_size = 100;
    opt.memory = reader_whole_store_memory(*f.store, opt);
    EXPECT_GT(opt.memory, reader_min_memory(*f.store, opt));
    EXPECT_TRUE(open_reader(*f.store, opt)->stats().whole_store_cached);
    opt.memory -= 1;
    EXPECT_FALSE(open_reader(*f.store, opt)->stats().whole_store_cached);
  }
}

// An automatic prefetch depth: as deep as fits in half the share, from 4 to 16, and never
// at the price of the whole store no longer fitting; a depth given is kept.
TEST(Reader, AutomaticPrefetchDepth) {
  Fixture f(150000, 500);
  ReaderOptions opt;
  opt.batch_size = 100;
  ASSERT_EQ(opt.prefetch, ReaderOptions::kAutoPrefetch);
  ReaderOptions deepest = opt, least = opt;
  deepest.prefetch = ReaderOptions::kMaxAutoPrefetch;
  least.prefetch = ReaderOptions::kMinAutoPrefetch;
  EXPECT_EQ(reader_min_memory(*f.store, opt), reader_min_memory(*f.store, least));

  opt.memory = reader_min_memory(*f.store, least);  // only the least depth fits
  EXPECT_EQ(resolve_reader_options(*f.store, opt).prefetch, ReaderOptions::kMinAutoPrefetch);
  EXPECT_EQ(open_reader(*f.store, opt)->options().prefetch, ReaderOptions::kMinAutoPrefetch);

  // Room for the deepest, the store not kept either way.
  opt.memory = reader_min_memory(*f.store, deepest);
  ASSERT_LT(opt.memory, reader_whole_store_memory(*f.store, least));
  EXPECT_EQ(resolve_reader_options(*f.store, opt).prefetch, ReaderOptions::kMaxAutoPrefetch);
  // One byte less: a depth in between.
  opt.memory -= 1;
  const size_t between = resolve_reader_options(*f.store, opt).prefetch;
  EXPECT_LT(between, ReaderOptions::kMaxAutoPrefetch);
  EXPECT_GT(between, ReaderOptions::kMinAutoPrefetch);

  // The store just kept at the least depth: kept at the depth chosen too.
  opt.memory = reader_whole_store_memory(*f.store, opt);
  EXPECT_TRUE(open_reader(*f.store, opt)->stats().whole_store_cached);

  ReaderOptions given = opt;
  given.prefetch = 2;
  EXPECT_EQ(resolve_reader_options(*f.store, given).prefetch, 2u);
  EXPECT_EQ(open_reader(*f.store, given)->options().prefetch, 2u);
}

TEST(Reader, RejectsBadOptions) {
  Fixture f(100, 10);
  std::unique_ptr<Reader> r;
  ReaderOptions opt;
  opt.order = "zz";
  Status st = Reader::open(*f.store, opt, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("ca, rr, ra, br"), std::string::npos) << st.message();
  opt.order = "rr";
  opt.batch_size = 0;
  EXPECT_EQ(Reader::open(*f.store, opt, &r).code(), Status::Code::kInvalidArgument);
  opt.batch_size = 10;
  opt.memory = reader_min_memory(*f.store, opt) - 1;
  st = Reader::open(*f.store, opt, &r);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("too small"), std::string::npos) << st.message();
  opt.memory += 1;
  EXPECT_TRUE(Reader::open(*f.store, opt, &r).is_ok());
  std::vector<std::string> names;
  for (const auto& o : reader_orders()) names.push_back(o.name);
  EXPECT_EQ(names, (std::vector<std::string>{"ca", "rr", "ra", "br"}));
}

// A copy of the store with one byte of chunk k's stored bytes flipped.
std::string corrupt_copy(const Fixture& f, size_t k) {
  std::string bytes = test::read_file(f.store->path());
  const ChunkInfo& c = f.store->chunk(k);
  bytes[c.offset + c.stored_size / 2] =
      static_cast<char>(bytes[c.offset + c.stored_size / 2] ^ 0x20);
  const std::string path = f.dir.file("bad.agld");
  test::write_file(path, bytes);
  return path;
}

TEST(Reader, CorruptChunkSurfacesAtTheConsumer) {
  for (Codec codec : {Codec::kZstd, Codec::kNone}) {
    Fixture f(kRows, kChunkRows, codec);
    const size_t bad_chunk = 13;
    std::unique_ptr<Store> bad;
    ASSERT_TRUE(
        Store::open(corrupt_copy(f, bad_chunk), &bad).is_ok());  // chunks are checked when read
    for (const char* order : {"ca", "br", "rr"}) {
      for (size_t prefetch : {0, 1, 8}) {
        for (bool fits : {true, false}) {
          SCOPED_TRACE(testing::Message() << order << " prefetch " << prefetch
                                          << (fits ? " in core" : " out of core"));
          ReaderOptions opt;
          opt.order = order;
          opt.batch_size = 10;
          opt.prefetch = prefetch;
          opt.decode_threads = 2;
          if (!fits) opt.memory = reader_min_memory(*bad, opt) + 3 * bad->chunk(0).raw_size;
          // Whole chunks, whose CRC is checked (rr out of core on codec none would read rows
          // on their own, and a flipped byte a row check cannot see goes unnoticed: see
          // tests/reader/direct_rows_test.cpp).
          opt.direct_rows = false;
          auto reader = open_reader(*bad, opt);
          EXPECT_EQ(reader->stats().whole_store_cached, fits);
          Batch b;
          Status st;
          uint64_t rows = 0;
          for (int i = 0; i < 1000 && st.is_ok(); ++i) {  // at most 10 passes: never hangs
            st = reader->next(&b);
            if (!st.is_ok()) break;
            for (uint64_t id : b.row_ids) EXPECT_NE(f.store->chunk_of_row(id), bad_chunk);
            rows += b.size();
          }
          ASSERT_FALSE(st.is_ok());
          EXPECT_EQ(st.code(), Status::Code::kCorruption);
          EXPECT_NE(st.message().find("chunk 13"), std::string::npos) << st.message();
          if (std::string(order) == "ca") {
            EXPECT_EQ(rows, bad_chunk * kChunkRows / 10 * 10);  // every batch before the chunk
          }
          Status again = reader->next(&b);
          EXPECT_EQ(again.code(), Status::Code::kCorruption);
        }
      }
    }
  }
}

TEST(Reader, DestroyedWithTheRingFullDoesNotHang) {
  Fixture f(kRows, kChunkRows);
  for (size_t prefetch : {1, 4}) {
    ReaderOptions opt;
    opt.prefetch = prefetch;
    opt.batch_size = 5;
    auto r1 = open_reader(*f.store, opt);  // never read
    auto r2 = open_reader(*f.store, opt);
    Batch b;
    ASSERT_TRUE(r2->next(&b).is_ok());
    r1.reset();
    r2.reset();
  }
}

}  // namespace reader_test
}  // namespace
}  // namespace agld
