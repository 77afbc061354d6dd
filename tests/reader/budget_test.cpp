// The memory budget, measured from outside the reader: while a store four times larger
// than the budget is scanned, the growth of this process's resident set plus the store's
// pages resident in the page cache (mincore) stays under the budget.
//
// The budget is for the reader's share, so the test measures the process's RSS just before
// the reader opens (the test binary, its libraries, the heap left by building the store)
// and budgets the growth over that baseline (after malloc_trim, so that memory freed by an
// earlier case and kept by malloc cannot absorb this case's growth). The store's file pages are
// counted twice while they are mapped into this process (in RSS and in mincore): conservative.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>

#include "agld/convert.hpp"
#include "agld/gen.hpp"
#include "agld/reader.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace budget_test {  // this file's names (unity batches: tests/CMakeLists.txt)

uint64_t page_size() { return static_cast<uint64_t>(::sysconf(_SC_PAGESIZE)); }

uint64_t rss_bytes() {
  std::ifstream statm("/proc/self/statm");
  uint64_t size = 0, resident = 0;
  statm >> size >> resident;
  return resident * page_size();
}

// Scans a fresh ~40 MiB store (codec none, 256 KiB chunks) with a 10 MiB budget. rr and ra
// read rows on their own (direct rows), or, with direct off, a whole chunk for each row.
void check_budget(const char* order, double passes, bool direct = true) {
  AGLD_SKIP_IF_MEMORY_SANITIZED();
  test::TempDir dir;
  // ~40 MiB uncompressed: criteo-shaped rows are ~195 raw bytes each.
  GenOptions gen;
  gen.rows = 215000;
  gen.seed = 5;
  gen.output = dir.file("c.svm");
  gen.threads = 2;
  GenReport gen_report;
  ASSERT_TRUE(generate(gen, &gen_report).is_ok());
  ConvertOptions conv;
  conv.inputs = {gen.output};
  conv.output = dir.file("c.agld");
  conv.compression = "none";
  conv.chunk_bytes = 256 << 10;
  ConvertReport conv_report;
  Status st = convert(conv, &conv_report);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  std::filesystem::remove(gen.output);

  const uint64_t budget = 10 << 20;
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(conv.output, &store).is_ok());
  ASSERT_GE(store->file_size(), 4 * budget);
  test::Residency residency(conv.output);
  ASSERT_TRUE(residency.ok());
  // Written moments ago, so still cached; under other I/O the kernel may need a moment
  // (pages still under writeback cannot be dropped yet), so the drop is retried.
  for (int attempt = 0; attempt < 50 && residency.bytes() >= (uint64_t{1} << 20); ++attempt) {
    store->file().drop_cache(0, store->file_size());
    if (residency.bytes() >= (uint64_t{1} << 20))
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_LT(residency.bytes(), uint64_t{1} << 20);
  ReaderOptions opt;
  opt.order = order;
  opt.batch_size = 256;
  opt.prefetch = 2;
  opt.memory = budget;
  opt.direct_rows = direct;
  ::malloc_trim(0);  // what building the store freed must not absorb the reader's growth
  const uint64_t baseline = rss_bytes();
  std::unique_ptr<Reader> reader;
  st = Reader::open(*store, opt, &reader);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  const auto target = static_cast<uint64_t>(passes * static_cast<double>(store->meta().rows));
  uint64_t worst = 0, worst_rss = 0, worst_cache = 0;
  Batch b;
  for (uint64_t rows = 0; rows < target; rows += b.size()) {
    st = reader->next(&b);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    const uint64_t rss = rss_bytes(), cached = residency.bytes();
    const uint64_t used = (rss > baseline ? rss - baseline : 0) + cached;
    if (used > worst) {
      worst = used;
      worst_rss = rss > baseline ? rss - baseline : 0;
      worst_cache = cached;
    }
  }
  const ReaderStats& s = reader->stats();
  std::cout << "[ budget   ] " << order << ": worst RSS growth + page cache " << worst << " = "
            << worst_rss << " + " << worst_cache << " of " << budget << "; cache peak "
            << s.cache_peak_bytes << " of " << s.cache_capacity_bytes << ", decoded peak "
            << s.decoded_peak_bytes << ", " << s.chunks_decompressed << " chunks read" << std::endl;
  EXPECT_LE(worst, budget);
  EXPECT_LE(s.cache_peak_bytes, s.cache_capacity_bytes);
  EXPECT_LE(s.decoded_peak_bytes, budget);
  EXPECT_FALSE(s.whole_store_cached);
  const bool random = std::string(order) == "rr" || std::string(order) == "ra";
  if (random && direct) {
    EXPECT_EQ(s.direct_rows, s.rows);
    EXPECT_EQ(s.chunks_decompressed, 0u);
    EXPECT_GT(s.row_index_reads, store->chunk_count() / 2);
  } else {
    EXPECT_EQ(s.direct_rows, 0u);
    EXPECT_GT(s.cache_misses, store->chunk_count() / 2);
  }
}

// One test per order, so that ctest runs each in a process of its own and each baseline is
// honest (in one process, a later reader can reuse what an earlier one's thread freed).
TEST(ReaderBudget, CyclicStaysUnderTheBudget) { check_budget("ca", 1.3); }
TEST(ReaderBudget, BlockReshufflingStaysUnderTheBudget) { check_budget("br", 1.1); }
// rr and ra out of core read a chunk for nearly every row: a few hundred rows suffice. With
// direct rows, a row index for nearly every row at first: a few thousand.
TEST(ReaderBudget, RandomReshufflingStaysUnderTheBudget) { check_budget("rr", 0.02); }
TEST(ReaderBudget, RandomAccessStaysUnderTheBudget) { check_budget("ra", 0.02); }
TEST(ReaderBudget, RandomReshufflingByChunksStaysUnderTheBudget) {
  check_budget("rr", 0.002, false);
}
TEST(ReaderBudget, RandomAccessByChunksStaysUnderTheBudget) { check_budget("ra", 0.002, false); }

}  // namespace budget_test
}  // namespace
}  // namespace agld
