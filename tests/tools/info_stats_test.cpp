// agld info reports how often the features occur (the rarest, median and commonest count
// over the features in at least one row, and how many are in none), from the statistics a
// store records, or computed in a pass for a store without them, and says which.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "test_support.hpp"

namespace agld {
namespace {
namespace info_stats_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::run_agld;
using test::shell_arg;
using test::TempDir;

nlohmann::json info_json(const std::string& store, const std::string& extra = "") {
  auto r = run_agld("info " + shell_arg(store) + " --json" + extra);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// The expected spread, by brute force: counts of features 1..d of LIBSVM text (1-based).
nlohmann::json spread_of(const std::string& text, uint64_t d, const char* source) {
  std::vector<uint64_t> count(d + 1);
  std::istringstream in(text);
  std::string line, tok;
  while (std::getline(in, line)) {
    std::istringstream ls(line);
    ls >> tok;  // the label
    while (ls >> tok) ++count[std::stoul(tok.substr(0, tok.find(':')))];
  }
  std::vector<uint64_t> seen;
  for (uint64_t j = 1; j <= d; ++j) {
    if (count[j]) seen.push_back(count[j]);
  }
  std::sort(seen.begin(), seen.end());
  nlohmann::json j{{"empty", d - seen.size()}, {"source", source}};
  if (seen.empty()) {
    j["min"] = j["median"] = j["max"] = nullptr;
  } else {
    j["min"] = seen.front();
    j["median"] = seen[(seen.size() + 1) / 2 - 1];  // the lower median
    j["max"] = seen.back();
  }
  return j;
}

TEST(InfoFeatureCounts, SmallStoreExactly) {
  TempDir dir;
  // Feature 1 in 5 rows, 2 in 1, 3 in 3, 5 in 2 (once as a stored 0); 4 and 6..10 in none.
  test::write_file(dir.file("in.svm"),
                   "1 1:1 3:2\n0 1:0.5 2:1 5:0\n1 1:1 3:1\n0 1:1\n1 1:3 3:1 5:7\n");
  const std::string store = dir.file("s.agld");
  auto r = run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " + shell_arg(store) +
                    " --features 10 -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = info_json(store);
  EXPECT_EQ(
      j["feature_counts"],
      (nlohmann::json{{"min", 1}, {"median", 2}, {"max", 5}, {"empty", 6}, {"source", "stored"}}))
      << j["feature_counts"].dump();
  EXPECT_EQ(j["format_minor"], kFormatMinor);
  EXPECT_GT(j["feature_stats_bytes"].get<uint64_t>(), 64u);
  r = run_agld("info " + shell_arg(store));
  EXPECT_NE(
      r.out.find(
          "rows a feature is in: rarest 1, median 2, commonest 5; 6 of 10 features in no row"),
      std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("recorded at conversion"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("version 1." + std::to_string(kFormatMinor)), std::string::npos) << r.out;
}

// Counts on both sides of the histogram's dense part (2^16), shuffled and split stores, and
// a store without the record (StoreWriter's): the same numbers, computed, and said so.
TEST(InfoFeatureCounts, EqualBruteForceStoredOrComputed) {
  TempDir dir;
  const uint64_t seed = test::test_seed(3);
  std::mt19937_64 rng(seed);
  SCOPED_TRACE(testing::Message() << "seed " << seed);
  std::uniform_real_distribution<double> u(0, 1);
  std::string text;
  const uint64_t d = 3000;
  for (int r = 0; r < 70001; ++r) {
    text += r % 3 ? "1" : "0";
    text += " 1:1";                    // in every row: 70001
    if (r % 2 == 0) text += " 2:0.5";  // 35001
    const uint32_t k = static_cast<uint32_t>(3 + 2900 * u(rng) * u(rng) * u(rng));  // rarer upwards
    text += ' ';
    text += std::to_string(k);
    text += ":2";
    text += "\n";
  }
  test::write_file(dir.file("in.svm"), text);
  const std::string store = dir.file("s.agld");
  auto r = run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " + shell_arg(store) +
                    " --features " + std::to_string(d) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json want = spread_of(text, d, "stored");
  ASSERT_EQ(want["max"], 70001);
  ASSERT_GT(want["empty"].get<uint64_t>(), 0u);
  EXPECT_EQ(info_json(store)["feature_counts"], want);
  EXPECT_EQ(info_json(store, " --verify")["feature_counts"], want);

  // The same rows through StoreWriter, which records none: computed.
  std::unique_ptr<Store> s;
  ASSERT_TRUE(Store::open(store, &s).is_ok());
  SparseRows rows;
  DecodedChunk c;
  for (size_t k = 0; k < s->chunk_count(); ++k) {
    ASSERT_TRUE(s->read_chunk(k, &c, Store::Labels::kRaw).is_ok());
    c.append_to(&rows);
  }
  const std::string bare = dir.file("bare.agld");
  ASSERT_TRUE(test::write_store(bare, rows, 5000, ChunkCodec{}, d).is_ok());
  nlohmann::json computed = want;
  computed["source"] = "computed";
  EXPECT_EQ(info_json(bare)["feature_counts"], computed);
  EXPECT_EQ(info_json(bare)["feature_stats_bytes"], 0);
  r = run_agld("info " + shell_arg(bare));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("computed now in a pass over the rows"), std::string::npos) << r.out;

  // A split: each output's own counts (the two add up to the whole).
  r = run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " +
               shell_arg(dir.file("tr.agld")) + " --test-fraction 0.3 --test-output " +
               shell_arg(dir.file("te.agld")) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto tr = info_json(dir.file("tr.agld"))["feature_counts"];
  const auto te = info_json(dir.file("te.agld"))["feature_counts"];
  EXPECT_EQ(tr["max"].get<uint64_t>() + te["max"].get<uint64_t>(), 70001u);
  EXPECT_EQ(tr["source"], "stored");
  EXPECT_EQ(te["source"], "stored");
}

// A store with no entries at all: no feature is in any row.
TEST(InfoFeatureCounts, NoEntries) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "1\n0\n");
  const std::string store = dir.file("s.agld");
  ASSERT_EQ(run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " + shell_arg(store) +
                     " --features 4 -q")
                .exit_code,
            0);
  EXPECT_EQ(info_json(store)["feature_counts"], spread_of("1\n0\n", 4, "stored"));
  EXPECT_NE(run_agld("info " + shell_arg(store)).out.find("no feature is in any row"),
            std::string::npos);
}

// A damaged record: info fails with one line naming the store and the statistics (exit 65),
// not a crash, and not a silent recount.
TEST(InfoFeatureCounts, DamagedRecordIsAnError) {
  TempDir dir;
  std::string text;
  for (int r = 0; r < 2000; ++r) {
    text += "1 ";
    text += std::to_string(1 + r % 97);
    text += ":1 200:0.5\n";
  }
  test::write_file(dir.file("in.svm"), text);
  const std::string store = dir.file("s.agld");
  ASSERT_EQ(run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " + shell_arg(store) + " -q")
                .exit_code,
            0);
  std::string bytes = test::read_file(store);
  const uint64_t meta_offset = [&] {
    uint64_t v;
    std::memcpy(&v, bytes.data() + bytes.size() - 64, 8);
    return v;
  }();
  const size_t nul = bytes.find('\0', meta_offset);
  ASSERT_NE(nul, std::string::npos);
  bytes[nul + 3] ^= 0x20;  // in the first block
  test::write_file(store, bytes);
  auto r = run_agld("info " + shell_arg(store));
  EXPECT_EQ(r.exit_code, 65) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_NE(r.err.find(store + ": feature statistics: block 0"), std::string::npos) << r.err;
  // The rows themselves are still readable.
  EXPECT_EQ(run_agld("dump " + shell_arg(store)).exit_code, 0);
}

}  // namespace info_stats_test
}  // namespace
}  // namespace agld
