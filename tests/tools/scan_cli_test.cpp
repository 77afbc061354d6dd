// `agld scan`: reads a store in each access order within a budget and reports the reader's
// counters (tools/cmd_scan.cpp); bad orders and budgets are usage errors.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <memory>
#include <random>
#include <string>

#include "agld/reader.hpp"
#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace scan_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)
namespace scan_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(ScanCli, EveryOrderReadsAndReportsItsCounters) {
  test::TempDir dir;
  std::mt19937_64 rng(7);
  test::RandomMatrixSpec spec;
  spec.rows = 1000;
  spec.features = 5000;
  spec.max_row_nnz = 30;
  spec.long_row_prob = 0.002;
  spec.binary_labels = false;
  const std::string path = dir.file("s.agld");
  const uint64_t chunk_rows = 37;
  ASSERT_TRUE(test::write_store(path, test::random_matrix(spec, rng), chunk_rows, ChunkCodec{Codec::kZstd},
                                spec.features).is_ok());
  std::unique_ptr<Store> written;
  ASSERT_TRUE(Store::open(path, &written).is_ok());
  const std::string store = "'" + path + "'";
  for (const char* order : {"ca", "rr", "ra", "br"}) {
    auto r = test::run_agld("scan " + store + " --access " + order +
                            " --batch 64 --passes 2.5 --memory 200M --seed 3 --json");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["rows"].get<uint64_t>(), 2500u / 64 * 64 + 64);
    for (const char* key :
         {"seconds", "bytes_read", "peak_rss_bytes", "rows_per_s", "cache_hits", "cache_misses",
          "chunks_decompressed", "bytes_decompressed", "wait_seconds"}) {
      EXPECT_TRUE(j.contains(key)) << key;
    }
    EXPECT_GT(j["peak_rss_bytes"].get<uint64_t>(), 0u);
    EXPECT_EQ(j["chunks_decompressed"].get<uint64_t>(), written->chunk_count());
    // 2.5 passes: the first pass's time, and the rate of the rows after it.
    EXPECT_GT(j["first_pass_seconds"].get<double>(), 0);
    EXPECT_LE(j["first_pass_seconds"].get<double>(), j["seconds"].get<double>());
    EXPECT_GT(j["later_rows_per_s"].get<double>(), 0);
    EXPECT_EQ(j["prefetch"].get<uint64_t>(), ReaderOptions::kMaxAutoPrefetch);  // 200M: room
  }
  auto r = test::run_agld("scan " + store + " --access rr --batch 10 --passes 0.01 --memory 200M");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("rows/s"), std::string::npos) << r.out;
  r = test::run_agld("scan " + store + " --access xx --memory 200M");
  EXPECT_EQ(r.exit_code, 64) << r.err;
  r = test::run_agld("scan " + store + " --access ca --memory 1M");
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("too small"), std::string::npos) << r.err;
}

}  // namespace scan_cli_test
}  // namespace scan_cli_test
}  // namespace
}  // namespace agld
