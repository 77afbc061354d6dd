// agld convert --fields and agld info's fields, from the command line: converting `agld gen`'s
// output records exactly gen's categorical fields (src/gen/shapes.hpp), each trimmed to the
// levels its rows hold (a level no row holds at a field's end cannot be told from the next
// field's); a row against declared fields exits 65 naming the file and line; a bad SPEC 64.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "agld/feature_stats.hpp"
#include "agld/store.hpp"
#include "gen/shapes.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace fields_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::run_agld;
using test::shell_arg;
using test::TempDir;

nlohmann::json info_json(const std::string& store) {
  auto r = run_agld("info " + shell_arg(store) + " --json");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return nlohmann::json::parse(r.out, nullptr, false);
}

// gen's fields of the shape, 0-based, each trimmed to the features the store's rows hold.
nlohmann::json gen_fields_seen(const std::string& shape, const std::string& store_path) {
  gen::Shape s;
  EXPECT_TRUE(gen::make_shape(shape, &s).is_ok());
  std::unique_ptr<Store> store;
  EXPECT_TRUE(Store::open(store_path, &store).is_ok());
  std::vector<bool> seen(store->meta().features);
  EXPECT_TRUE(scan_feature_stats(*store, [&](const FeatureStatsBlock& b) {
                for (size_t i = 0; i < b.count.size(); ++i) seen[b.first + i] = b.count[i] > 0;
                return Status::ok();
              }).is_ok());
  nlohmann::json out = nlohmann::json::array();
  for (const gen::Field& f : s.fields) {
    const uint64_t begin = f.begin - 1, end = std::min<uint64_t>(begin + f.size, seen.size());
    uint64_t lo = end, hi = begin;
    for (uint64_t j = begin; j < end; ++j) {
      if (seen[j]) lo = std::min(lo, j), hi = j;
    }
    EXPECT_LT(lo, end) << "a field with no level in any row";
    out.push_back({{"first", lo}, {"count", hi - lo + 1}});
  }
  return out;
}

void expect_gen_fields_found(const std::string& shape, uint64_t rows) {
  TempDir dir;
  const std::string text = dir.file("g.svm"), store = dir.file("g.agld");
  ASSERT_EQ(run_agld("gen --shape " + shape + " --rows " + std::to_string(rows) + " --seed 5 -o " +
                     shell_arg(text) + " --quiet")
                .exit_code,
            0);
  auto r = run_agld("convert " + shell_arg(text) + " -o " + shell_arg(store));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  gen::Shape s;
  ASSERT_TRUE(gen::make_shape(shape, &s).is_ok());
  EXPECT_NE(r.err.find(std::to_string(s.fields.size()) + " one-hot fields (detected)"), std::string::npos)
      << r.err;
  const nlohmann::json want = gen_fields_seen(shape, store);
  EXPECT_EQ(info_json(store)["fields"], want);
  // They make sense only in the numbering of gen's fields: the first one is gen's first field.
  EXPECT_GE(want[0]["first"].get<uint64_t>(), s.fields[0].begin - 1u);
}

TEST(FieldsCli, GenCriteoFieldsAreDetected) { expect_gen_fields_found("criteo", 20000); }

// kdd12's d is 54.7M: the conversion's per-feature passes take about a second.
TEST(FieldsCli, GenKdd12FieldsAreDetected) { expect_gen_fields_found("kdd12", 5000); }

// The user's path end to end: gen's criteo rows converted, then sample and optimize with an
// intercept move along the 26 fields' directions (config.json, the draws' header); --unseen off
// does not.
TEST(FieldsCli, SampleAndOptimizeMoveAlongTheConvertedFields) {
  TempDir dir;
  const std::string text = dir.file("g.svm"), store = dir.file("g.agld");
  ASSERT_EQ(run_agld("gen --shape criteo --rows 5000 --seed 5 -o " + shell_arg(text) + " --quiet").exit_code, 0);
  ASSERT_EQ(run_agld("convert " + shell_arg(text) + " -o " + shell_arg(store) + " -q").exit_code, 0);
  auto config = [&](const std::string& out) {
    return nlohmann::json::parse(test::read_file(out + "/config.json"), nullptr, false);
  };
  for (const std::string unseen : {"auto", "off"}) {
    const std::string out = dir.file("run-" + unseen);
    auto r = run_agld("sample --train " + shell_arg(store) + " --intercept --chains 2 --epochs 2 --unseen " + unseen +
                      " --memory 2G --out " + shell_arg(out) + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json c = config(out);
    const uint64_t want = unseen == "auto" ? 26 : 0;
    EXPECT_EQ(c["unseen"]["directions"], want) << c["unseen"].dump();
    EXPECT_NE(test::read_file(out + "/draws_1.csv").find(fmt::format("unseen directions = {} (", want)), std::string::npos);
  }
  const std::string mode = dir.file("mode");
  auto r = run_agld("optimize --train " + shell_arg(store) + " --intercept --epochs 2 --memory 2G --out " +
                    shell_arg(mode) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(config(mode)["unseen_directions"], 26);
}

TEST(FieldsCli, InfoListsThem) {
  TempDir dir;
  // 1-based: a constant column 1, fields 2-4 and 5-6, numeric 7.
  test::write_file(dir.file("in.svm"), "1 1:1 2:1 5:1 7:0.5\n0 1:1 4:1 6:1\n1 1:1 3:1 5:1 7:2\n");
  auto r = run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " + shell_arg(dir.file("s.agld")) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_agld("info " + shell_arg(dir.file("s.agld")));
  EXPECT_NE(r.out.find("fields       3 complete one-hot fields: 1 (1 level), 2-4 (3 levels), 5-6 (2 levels)\n"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(info_json(dir.file("s.agld"))["fields"],
            nlohmann::json::parse(R"([{"first":0,"count":1},{"first":1,"count":3},{"first":4,"count":2}])"));

  // Many: the first four, how many are left out, the last.
  std::string wide;
  for (int r2 = 0; r2 < 2; ++r2) {
    wide += "1";
    for (int f = 0; f < 9; ++f) wide += fmt::format(" {}:1", 1 + 2 * f + r2);
    wide += "\n";
  }
  test::write_file(dir.file("wide.svm"), wide);
  r = run_agld("convert " + shell_arg(dir.file("wide.svm")) + " -o " + shell_arg(dir.file("w.agld")) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_agld("info " + shell_arg(dir.file("w.agld")));
  EXPECT_NE(r.out.find("fields       9 complete one-hot fields: 1-2 (2 levels), 3-4 (2 levels), 5-6 (2 "
                       "levels), 7-8 (2 levels), ... (4 more), 17-18 (2 levels)\n"),
            std::string::npos)
      << r.out;

  r = run_agld("convert " + shell_arg(dir.file("in.svm")) + " -o " + shell_arg(dir.file("n.agld")) +
               " -q --fields none");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = run_agld("info " + shell_arg(dir.file("n.agld")));
  EXPECT_NE(r.out.find("fields       none recorded\n"), std::string::npos) << r.out;
  EXPECT_EQ(info_json(dir.file("n.agld"))["fields"], nlohmann::json::array());
}

TEST(FieldsCli, ARowAgainstDeclaredFieldsExits65WithItsLine) {
  TempDir dir;
  const std::string in = dir.file("in.svm");
  test::write_file(in, "1 1:1 3:1\n0 2:1 4:1\n1 2:1\n");
  auto r = run_agld("convert " + shell_arg(in) + " -o " + shell_arg(dir.file("s.agld")) + " --fields 1-2,3-4");
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_EQ(r.err, "agld: " + in +
                       ":3: field 2 (features 3-4): the row holds none of its features; --fields "
                       "claims exactly one with value 1\n");
  EXPECT_EQ(test::list_dir(dir.path()), std::vector<std::string>{"in.svm"});
  r = run_agld("convert " + shell_arg(in) + " -o " + shell_arg(dir.file("s.agld")) + " --fields 1-2 -q");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(FieldsCli, ABadSpecExits64) {
  TempDir dir;
  const std::string in = dir.file("in.svm");
  test::write_file(in, "1 1:1 3:1\n");
  auto r = run_agld("convert " + shell_arg(in) + " -o " + shell_arg(dir.file("s.agld")) + " --fields 3-4,1-3");
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_EQ(r.err, "agld: --fields: ranges 1-3 and 3-4 overlap\n");
  EXPECT_EQ(test::list_dir(dir.path()), std::vector<std::string>{"in.svm"});
}

}  // namespace fields_cli_test
}  // namespace
}  // namespace agld
