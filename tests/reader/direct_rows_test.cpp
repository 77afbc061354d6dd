// Direct rows: rr and ra on a codec-none store larger than the cache read each row on its
// own. The oracle is the same order read from whole chunks (direct_rows off, the store in
// the cache): the same batches, byte for byte, for every kind of value section, binary and real
// labels, empty rows and rows longer than a slot holds. Then corruption: a damaged row index or row
// surfaces at the consumer, in order, and damaged bytes anywhere in a chunk never crash.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>

#include "agld/reader.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace direct_rows_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::TempDir;

constexpr uint32_t kFeatures = 40000;

enum class Values { kNone, kDense, kSparse };

// Rows with 0..40 entries (a few empty), values all 1 (kNone), all other than 1 (kDense) or
// mostly 1 (kSparse); one row of 20,000 entries, longer than a slot of direct rows holds.
SparseRows make_rows(size_t n, Values values, bool binary_labels, uint64_t seed) {
  std::mt19937_64 rng(seed);
  SparseRows rows;
  std::vector<uint32_t> idx;
  std::vector<float> val;
  for (size_t r = 0; r < n; ++r) {
    size_t len = rng() % 41;
    if (rng() % 20 == 0) len = 0;
    if (r == n / 3) len = 20000;
    std::set<uint32_t> picked;
    while (picked.size() < len) picked.insert(static_cast<uint32_t>(rng() % kFeatures));
    idx.assign(picked.begin(), picked.end());
    val.clear();
    for (size_t j = 0; j < len; ++j) {
      const float v = static_cast<float>(rng() % 1000) / 7.0f + 0.5f;
      val.push_back(values == Values::kNone                      ? 1.0f
                    : values == Values::kDense || rng() % 4 == 0 ? v
                                                                 : 1.0f);
    }
    const double label = binary_labels ? static_cast<double>(rng() % 2)
                                       : static_cast<double>(rng() % 10000) / 100.0 - 50.0;
    rows.add_row(label, idx, val);
  }
  return rows;
}

struct DirectFixture {
  TempDir dir;
  std::string path;
  std::unique_ptr<Store> store;
  uint64_t decoded = 0;

  DirectFixture(Values values, bool binary_labels, size_t n = 6000, size_t chunk_rows = 200) {
    const SparseRows rows = make_rows(n, values, binary_labels, 11);
    StoreMeta m;
    m.features = kFeatures;
    m.label_kind = binary_labels ? LabelKind::kBinary : LabelKind::kReal;
    m.label_positive = 1;
    path = dir.file("d.agld");
    Status st = test::write_store(path, rows, chunk_rows, ChunkCodec{Codec::kNone}, m);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    reopen();
    for (size_t k = 0; k < store->chunk_count(); ++k) decoded += store->chunk(k).raw_size;
  }
  void reopen() {
    Status st = Store::open(path, &store);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  // A share that leaves a cache of a quarter of the decoded store.
  uint64_t out_of_core(const ReaderOptions& opt) const {
    return reader_direct_rows_memory(*store, opt) + decoded / 4;
  }
};

std::unique_ptr<Reader> open_reader(const Store& store, const ReaderOptions& opt) {
  std::unique_ptr<Reader> r;
  Status st = Reader::open(store, opt, &r);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return r;
}

// Reads `batches` batches from both readers and expects them equal.
void expect_same_batches(Reader& a, Reader& b, size_t batches) {
  Batch x, y;
  for (size_t i = 0; i < batches; ++i) {
    Status sa = a.next(&x), sb = b.next(&y);
    ASSERT_TRUE(sa.is_ok()) << sa.to_string();
    ASSERT_TRUE(sb.is_ok()) << sb.to_string();
    ASSERT_TRUE(std::equal(x.row_ids.begin(), x.row_ids.end(), y.row_ids.begin(), y.row_ids.end()))
        << "batch " << i;
    ASSERT_TRUE(std::equal(x.labels.begin(), x.labels.end(), y.labels.begin(), y.labels.end()));
    ASSERT_EQ(x.size(), y.size());
    for (size_t r = 0; r < x.size(); ++r) {
      ASSERT_TRUE(std::ranges::equal(x.row_indices(r), y.row_indices(r))) << "batch " << i;
      ASSERT_TRUE(std::ranges::equal(x.row_values(r), y.row_values(r))) << "batch " << i;
    }
  }
}

TEST(DirectRows, SameBatchesAsReadingWholeChunks) {
  for (auto [values, binary] :
       {std::pair{Values::kNone, false}, std::pair{Values::kDense, true},
        std::pair{Values::kSparse, true}, std::pair{Values::kSparse, false}}) {
    {
      DirectFixture f(values, binary, 3000);
      for (const char* order : {"rr", "ra"}) {
        for (size_t prefetch : {0, 4}) {
          if (std::string(order) == "ra" && prefetch == 0) continue;
          SCOPED_TRACE(testing::Message() << order << " values " << static_cast<int>(values)
                                          << " binary " << binary << " prefetch " << prefetch);
          ReaderOptions opt;
          opt.order = order;
          opt.seed = 5;
          opt.batch_size = 97;
          opt.prefetch = prefetch;
          opt.memory = f.out_of_core(opt);
          auto direct = open_reader(*f.store, opt);
          opt.direct_rows = false;
          opt.memory = 256 << 20;  // the oracle keeps every chunk: the same rows, sooner
          auto whole = open_reader(*f.store, opt);
          EXPECT_TRUE(whole->stats().whole_store_cached);
          // Past a pass (rr wraps) and past the long row (rr's permutation puts it anywhere).
          expect_same_batches(*direct, *whole, 40);
          const ReaderStats& s = direct->stats();
          EXPECT_FALSE(s.whole_store_cached);
          // Counted a slot at a time, as every statistic: the consumer's slot may hold more.
          EXPECT_GE(s.direct_rows, s.rows);
          EXPECT_LE(s.direct_rows, s.rows + 256);
          EXPECT_EQ(s.chunk_visits, 0u);
          EXPECT_EQ(s.chunks_decompressed, 0u);
          EXPECT_GT(s.row_index_reads, 0u);
          EXPECT_LE(s.row_index_reads, s.rows);
          EXPECT_LE(s.cache_peak_bytes, s.cache_capacity_bytes);
          EXPECT_GT(s.bytes_read, 0u);
          EXPECT_EQ(whole->stats().direct_rows, 0u);
        }
      }
    }
  }
}

// The row indexes of the whole store fit the cache: each is read once.
TEST(DirectRows, RowIndexesStayInTheCache) {
  DirectFixture f(Values::kSparse, true);
  ReaderOptions opt;
  opt.order = "ra";
  opt.batch_size = 64;
  opt.memory = f.out_of_core(opt);
  auto r = open_reader(*f.store, opt);
  Batch b;
  for (int i = 0; i < 150; ++i) ASSERT_TRUE(r->next(&b).is_ok());
  EXPECT_EQ(r->stats().row_index_reads, f.store->chunk_count());
}

// The statistics count what was delivered, whatever the prefetch depth. (The reserve, and
// so the cache's part, depends on the prefetch depth; the row indexes fit it in every case
// here, so that each is read once whatever its size.)
TEST(DirectRows, StatisticsDoNotDependOnPrefetch) {
  DirectFixture f(Values::kSparse, false);
  std::vector<ReaderStats> seen;
  for (size_t prefetch : {0, 1, 8}) {
    ReaderOptions opt;
    opt.order = "rr";
    opt.batch_size = 50;
    opt.prefetch = prefetch;
    opt.memory = f.out_of_core(opt);
    auto r = open_reader(*f.store, opt);
    Batch b;
    for (int i = 0; i < 80; ++i) ASSERT_TRUE(r->next(&b).is_ok());
    seen.push_back(r->stats());
  }
  for (const ReaderStats& s : seen) {
    EXPECT_GT(s.direct_rows, 0u);
    EXPECT_EQ(s.direct_rows, seen[0].direct_rows);
    EXPECT_EQ(s.row_index_reads, seen[0].row_index_reads);
    EXPECT_EQ(s.bytes_read, seen[0].bytes_read);
    EXPECT_LT(s.cache_peak_bytes, s.cache_capacity_bytes / 2);
  }
}

// Where a chunk's parts are in the file (codec none).
struct Parts {
  uint64_t labels, lengths, indices, values;
};
Parts parts_of(const ChunkInfo& c) {
  Parts p;
  p.labels = c.offset;
  p.lengths = c.offset + 8 * uint64_t{c.row_count};
  p.indices = c.offset + 12 * uint64_t{c.row_count};
  p.values = p.indices + 4 * uint64_t{c.nnz};
  return p;
}

// Reads rr until a failure (at most `passes` passes); returns the rows delivered and the
// status.
Status read_until_failure(const Store& store, uint64_t memory_extra, std::vector<uint64_t>* ids,
                          uint64_t passes = 3) {
  ReaderOptions opt;
  opt.order = "rr";
  opt.seed = 3;
  opt.batch_size = 10;
  opt.memory = reader_min_memory(store, opt) + memory_extra;
  auto r = open_reader(store, opt);
  Batch b;
  for (uint64_t n = 0; n < passes * store.meta().rows; n += b.size()) {
    Status st = r->next(&b);
    if (!st.is_ok()) {
      EXPECT_EQ(r->next(&b).code(), st.code());  // and again on every later call
      EXPECT_GE(r->stats().direct_rows, r->stats().rows);
      return st;
    }
    ids->insert(ids->end(), b.row_ids.begin(), b.row_ids.end());
  }
  return Status::ok();
}

TEST(DirectRows, CorruptionSurfacesAtTheConsumerInOrder) {
  DirectFixture f(Values::kSparse, true);
  const size_t k = 7;
  const ChunkInfo c = f.store->chunk(k);
  const Parts p = parts_of(c);
  const std::string clean = test::read_file(f.path);
  // The sequence, read whole.
  std::vector<uint64_t> want;
  EXPECT_TRUE(read_until_failure(*f.store, f.decoded / 4, &want).is_ok());
  const uint64_t extra = f.decoded / 4;

  struct Damage {
    const char* what;
    uint64_t at;
    std::string bytes;
    bool whole_chunk;  // every row of chunk k fails (its row index), else one row
    uint64_t row;      // the row that fails
  };
  auto u32 = [](uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), 4); };
  const uint64_t row2 = c.first_row + 2;
  // Row 2's first index: the row index says where.
  std::vector<uint32_t> lengths(c.row_count);
  std::memcpy(lengths.data(), clean.data() + p.lengths, 4 * c.row_count);
  const uint64_t row2_first = lengths[0] + lengths[1];
  ASSERT_GT(lengths[2], 0u);
  const float nan = std::nanf("");
  std::vector<Damage> damages = {
      {"row length", p.lengths + 4 * 5, u32(1u << 30), true, c.first_row},
      {"bitmap", p.values + 3, std::string(1, '\xff'), true, c.first_row},
      {"index", p.indices + 4 * row2_first, u32(kFeatures + 5), false, row2},
  };
  // A stored value of row 2, if it has one (sparse values: the bitmap says which).
  {
    std::vector<uint8_t> bitmap((c.nnz + 7) / 8);
    std::memcpy(bitmap.data(), clean.data() + p.values, bitmap.size());
    uint64_t before = 0;
    for (uint64_t q = 0; q < row2_first; ++q) before += bitmap[q / 8] >> (q % 8) & 1;
    bool has = false;
    for (uint64_t q = row2_first; q < row2_first + lengths[2]; ++q)
      has |= bitmap[q / 8] >> (q % 8) & 1;
    if (has) {
      damages.push_back({"value", p.values + bitmap.size() + 4 * before,
                         std::string(reinterpret_cast<const char*>(&nan), 4), false, row2});
    }
  }
  for (const Damage& d : damages) {
    SCOPED_TRACE(d.what);
    std::string bytes = clean;
    bytes.replace(d.at, d.bytes.size(), d.bytes);
    test::write_file(f.path, bytes);
    f.reopen();
    std::vector<uint64_t> ids;
    const Status st = read_until_failure(*f.store, extra, &ids);
    ASSERT_FALSE(st.is_ok());
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
    EXPECT_NE(st.message().find("chunk 7"), std::string::npos) << st.message();
    // Delivered: exactly the batches before the one that would hold the first bad row.
    size_t first_bad = 0;
    auto bad = [&](uint64_t id) {
      return d.whole_chunk ? f.store->chunk_of_row(id) == k : id == d.row;
    };
    while (first_bad < want.size() && !bad(want[first_bad])) ++first_bad;
    ASSERT_LT(first_bad, want.size());
    EXPECT_EQ(ids.size(), first_bad / 10 * 10);
    EXPECT_TRUE(std::equal(ids.begin(), ids.end(), want.begin()));
  }
  test::write_file(f.path, clean);
}

// Every 13th byte of a chunk damaged in turn (13 is prime to 4 and 8: the damage falls on every byte
// of a word in turn): reading never crashes, and reports either rows (damage a row check
// cannot see: the CRC is not checked) or corruption.
TEST(DirectRows, DamagedBytesNeverCrash) {
  DirectFixture f(Values::kSparse, false, 100, 20);  // 5 chunks: the damaged one and the rest
  const size_t k = 3;
  const ChunkInfo c = f.store->chunk(k);
  const std::string clean = test::read_file(f.path);
  size_t failures = 0, runs = 0;
  for (uint64_t at = c.offset; at < c.offset + c.stored_size; at += 13) {
    {
      const char flip = at % 2 ? '\x01' : '\x80';
      std::string bytes = clean;
      bytes[at] = static_cast<char>(bytes[at] ^ flip);
      test::write_file(f.path, bytes);
      f.reopen();
      std::vector<uint64_t> ids;
      const Status st = read_until_failure(*f.store, f.decoded / 4, &ids, 1);
      ++runs;
      if (!st.is_ok()) {
        ++failures;
        ASSERT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
      }
    }
  }
  test::write_file(f.path, clean);
  std::cout << "[ damaged  ] " << failures << " of " << runs << " damaged copies reported corrupt"
            << std::endl;
  EXPECT_GT(failures, 0u);
}

}  // namespace direct_rows_test
}  // namespace
}  // namespace agld
