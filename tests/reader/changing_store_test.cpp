// A store that changes under a reader (issue #17 part 4; docs/reliability.md, "Faults"): cut
// short or rewritten in place while a reader is mid-pass, through the local FileSystem. The
// reader must stop with a corruption error naming the store and saying that it changed, never
// deliver rows read from the changed file, and never die of SIGBUS: rows read on their own
// (direct rows) come from the store's memory map, whose pages past a new end fault
// (mapping_guard.hpp); whole chunks are read with pread and checked by their CRC.
// Deterministic: the file is changed between two calls to next().
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <set>
#include <thread>

#include "agld/reader.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace changing_store_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::TempDir;

constexpr uint32_t kFeatures = 5000;

SparseRows make_rows(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  SparseRows rows;
  std::vector<uint32_t> idx;
  std::vector<float> val;
  for (size_t r = 0; r < n; ++r) {
    std::set<uint32_t> picked;
    const size_t len = 1 + rng() % 30;
    while (picked.size() < len) picked.insert(static_cast<uint32_t>(rng() % kFeatures));
    idx.assign(picked.begin(), picked.end());
    val.assign(len, 0.0f);
    for (float& v : val) v = static_cast<float>(rng() % 1000) / 7.0f + 0.5f;
    rows.add_row(static_cast<double>(rng() % 2), idx, val);
  }
  return rows;
}

enum class Change { kTruncate, kTruncateToZero, kRewrite };

const char* change_name(Change c) {
  switch (c) {
    case Change::kTruncate: return "truncated to half";
    case Change::kTruncateToZero: return "truncated to 0 bytes";
    case Change::kRewrite: return "rewritten in place (same size)";
  }
  return "";
}

struct Case {
  const char* order;
  Codec codec;
  bool direct;  // rows read on their own from the mapping (else whole chunks, pread)
  size_t prefetch;
};

// Opens a reader out of core on a fresh store, reads a few batches, changes the file, and
// reads on (two passes at most): the first failure must say the store changed.
void change_mid_pass(const Case& c, Change change) {
  SCOPED_TRACE(std::string(c.order) + (c.direct ? ", direct rows" : ", whole chunks") + ", prefetch " +
               std::to_string(c.prefetch) + ", the store " + change_name(change));
  TempDir dir;
  const std::string path = dir.file("s.agld");
  StoreMeta m;
  m.features = kFeatures;
  m.label_kind = LabelKind::kBinary;
  m.label_positive = 1;
  const size_t n = 8000;
  ASSERT_TRUE(test::write_store(path, make_rows(n, 3), 200, ChunkCodec{c.codec}, m).is_ok());
  std::unique_ptr<Store> store;
  ASSERT_TRUE(Store::open(path, &store).is_ok());
  uint64_t decoded = 0;
  for (size_t k = 0; k < store->chunk_count(); ++k) decoded += store->chunk(k).raw_size;
  ReaderOptions opt;
  opt.order = c.order;
  opt.seed = 7;
  opt.batch_size = 100;
  opt.prefetch = c.prefetch;
  opt.decode_threads = 1;
  const uint64_t direct = reader_direct_rows_memory(*store, opt);
  ASSERT_EQ(direct > 0, c.direct);
  // A cache of an eighth of the decoded store: chunks are read again on every pass.
  opt.memory = std::max(direct, reader_min_memory(*store, opt)) + decoded / 8;
  std::unique_ptr<Reader> r;
  Status st = Reader::open(*store, opt, &r);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  Batch b;
  for (int i = 0; i < 5; ++i) ASSERT_TRUE(r->next(&b).is_ok());
  ASSERT_FALSE(r->stats().whole_store_cached);
  EXPECT_EQ(r->stats().direct_rows > 0, c.direct);
  const uint64_t size = store->file_size();
  // A coarse clock may give a write within the tick of the open the same modification time.
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  switch (change) {
    case Change::kTruncate: ASSERT_EQ(::truncate(path.c_str(), static_cast<off_t>(size / 2)), 0); break;
    case Change::kTruncateToZero: ASSERT_EQ(::truncate(path.c_str(), 0), 0); break;
    case Change::kRewrite: {
      // Every byte after the header changed, the size kept: what rewriting it in place
      // (not by renaming a new file over it) with other rows does.
      std::vector<char> junk(size - 4096);
      for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>(i * 7 + 1);
      const int fd = ::open(path.c_str(), O_WRONLY);
      ASSERT_GE(fd, 0);
      ASSERT_EQ(::pwrite(fd, junk.data(), junk.size(), 4096), static_cast<ssize_t>(junk.size()));
      ::close(fd);
      break;
    }
  }
  for (size_t i = 0; i < 2 * n / opt.batch_size + 10; ++i) {
    st = r->next(&b);
    if (!st.is_ok()) break;
  }
  ASSERT_FALSE(st.is_ok()) << "two passes read from a changed store without an error";
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
  EXPECT_EQ(st.message().rfind(path + ": the file changed while it was being read", 0), 0u) << st.to_string();
  // And again on every later call.
  EXPECT_EQ(r->next(&b).message(), st.message());
}

TEST(ChangingStore, DetectedMidPassWithoutACrash) {
  const Case cases[] = {
      {"rr", Codec::kNone, true, 0},     {"rr", Codec::kNone, true, 4},  {"ra", Codec::kNone, true, 4},
      {"ca", Codec::kZstd, false, 0},    {"ca", Codec::kZstd, false, 4}, {"rr", Codec::kZstd, false, 4},
      {"ca", Codec::kNone, false, 4},
  };
  for (const Case& c : cases) {
    for (Change change : {Change::kTruncate, Change::kTruncateToZero, Change::kRewrite}) change_mid_pass(c, change);
  }
}

}  // namespace changing_store_test
}  // namespace
}  // namespace agld
