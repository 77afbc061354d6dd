// agld convert --fields: declared fields are checked on every row and recorded; a row against
// them fails the conversion at its file and line, leaving nothing; auto detects the complete
// one-hot fields of each output (both parts of a split, shuffled or not, any threads); none
// records none; a bad SPEC is a usage error; the detection's memory counts against --memory.
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "agld/convert.hpp"
#include "agld/store.hpp"
#include "convert_test_support.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace fields_convert_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::convert_one;
using test::TempDir;

StoreMeta meta_of(const std::string& path) {
  std::unique_ptr<Store> s;
  Status st = Store::open(path, &s);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return st.is_ok() ? s->meta() : StoreMeta{};
}

std::vector<FeatureField> F(std::initializer_list<std::pair<uint64_t, uint64_t>> ranges) {
  std::vector<FeatureField> out;
  for (auto [a, b] : ranges) out.push_back({a, b - a + 1});
  return out;
}

// 1-based text: numeric features 1-2 (never 1), a constant column 3, fields 4-7 and 8-10
// (levels 6 and 9 in no row: inside their fields), a numeric feature 11.
std::string mixed_text(size_t rows, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::string s;
  const int a[] = {4, 5, 7}, b[] = {8, 10};
  for (size_t r = 0; r < rows; ++r) {
    s += r % 3 ? "1" : "0";
    if (r % 4) s += " 1:0.5";
    // Appended piece by piece: g++ 12 -O3 warns falsely (-Wrestrict) on " " + to_string here.
    s += " 2:";
    s += std::to_string(2 + rng() % 5);
    s += " 3:1 ";
    s += std::to_string(r < 3 ? a[r] : a[rng() % 3]);
    s += ":1 ";
    s += std::to_string(r < 2 ? b[r] : b[rng() % 2]);
    s += ":1";
    if (r % 5 == 0) s += " 11:3.5";
    s += "\n";
  }
  return s;
}

TEST(ConvertFields, DetectsFieldsBesideNumericFeaturesAndAConstantColumn) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), mixed_text(5000, 1));
  for (bool shuffle : {true, false}) {
    for (int threads : {1, 2}) {
      SCOPED_TRACE(testing::Message() << "shuffle " << shuffle << " threads " << threads);
      ConvertOptions opt;
      opt.shuffle = shuffle;
      opt.threads = threads;
      opt.chunk_rows = 300;  // many chunks, across parse blocks
      ConvertReport rep;
      ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("out.agld"), opt, &rep).is_ok());
      const auto want = F({{2, 2}, {3, 6}, {7, 9}});  // 0-based
      EXPECT_EQ(meta_of(dir.file("out.agld")).fields, want);
      EXPECT_EQ(rep.fields, want);
      EXPECT_FALSE(rep.fields_declared);
      EXPECT_EQ(rep.field_detect_bytes, 4 * rep.features);
    }
  }
}

// One row spoils each candidate in turn: a row holding two levels, a level with value 2, a
// row holding none. The field it spoils is not recorded; the others are.
TEST(ConvertFields, NoFalsePositives) {
  TempDir dir;
  const std::string good = mixed_text(200, 2);
  const struct {
    const char* name;
    const char* row;
    std::vector<FeatureField> want;
  } cases[] = {
      {"two levels", "1 2:3 3:1 4:1 5:1 8:1\n", F({{2, 2}, {7, 9}})},
      {"value 2", "1 2:3 3:1 4:1 10:2\n", F({{2, 2}, {3, 6}})},
      {"none", "1 2:3 3:1 4:1\n", F({{2, 2}, {3, 6}})},
      {"constant column missing", "1 2:3 4:1 8:1\n", F({{3, 6}, {7, 9}})},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.name);
    test::write_file(dir.file("in.svm"), good + c.row + good);
    ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("out.agld")).is_ok());
    EXPECT_EQ(meta_of(dir.file("out.agld")).fields, c.want);
  }
}

// Each part records the fields of its own rows: here both parts hold every level.
TEST(ConvertFields, ATestSplitRecordsThemInBothParts) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), mixed_text(4000, 3));
  for (bool shuffle : {true, false}) {
    SCOPED_TRACE(shuffle);
    ConvertOptions opt;
    opt.shuffle = shuffle;
    opt.test_fraction = 0.3;
    opt.test_output = dir.file("test.agld");
    ConvertReport rep;
    ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("train.agld"), opt, &rep).is_ok());
    const auto want = F({{2, 2}, {3, 6}, {7, 9}});
    EXPECT_EQ(meta_of(dir.file("train.agld")).fields, want);
    EXPECT_EQ(meta_of(dir.file("test.agld")).fields, want);
    EXPECT_EQ(rep.fields, want);
    EXPECT_EQ(rep.test_fields, want);
    EXPECT_GT(rep.test_rows, 1000u);
  }
}

TEST(ConvertFields, NoneRecordsNone) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), mixed_text(100, 4));
  ConvertOptions opt;
  opt.fields = "none";
  ConvertReport rep;
  ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("out.agld"), opt, &rep).is_ok());
  EXPECT_TRUE(meta_of(dir.file("out.agld")).fields.empty());
  EXPECT_EQ(rep.field_detect_bytes, 0u);
}

// Declared ranges are recorded as given (levels no row holds included, past the largest
// index too), in the source's numbers: 1-based, or 0-based.
TEST(ConvertFields, DeclaredFieldsAreRecorded) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), mixed_text(300, 5));
  ConvertOptions opt;
  opt.fields = "8-10,3,4-7";
  ConvertReport rep;
  ASSERT_TRUE(convert_one(dir.file("in.svm"), dir.file("out.agld"), opt, &rep).is_ok());
  EXPECT_EQ(meta_of(dir.file("out.agld")).fields, F({{2, 2}, {3, 6}, {7, 9}}));
  EXPECT_EQ(rep.fields, F({{2, 2}, {3, 6}, {7, 9}}));
  EXPECT_TRUE(rep.fields_declared);

  test::write_file(dir.file("short.svm"), "1 1:1 3:1\n0 2:1 3:1\n");
  opt.fields = "1-2,3-5";
  ASSERT_TRUE(convert_one(dir.file("short.svm"), dir.file("short.agld"), opt).is_ok());
  const StoreMeta m = meta_of(dir.file("short.agld"));
  EXPECT_EQ(m.fields, F({{0, 1}, {2, 4}}));
  EXPECT_EQ(m.features, 5u);  // the declared field reaches past the largest index, 3

  test::write_file(dir.file("zero.svm"), "1 0:1 2:1\n0 1:1 3:1\n1 0:1 3:1\n");
  opt.fields = "0-1,2-3";
  ASSERT_TRUE(convert_one(dir.file("zero.svm"), dir.file("zero.agld"), opt).is_ok());
  EXPECT_EQ(meta_of(dir.file("zero.agld")).fields, F({{0, 1}, {2, 3}}));
}

// A row against a declared field: a data error naming the file, the line, the field and what
// the row holds; nothing is left at the outputs. Under --skip-bad-lines the row is skipped.
TEST(ConvertFields, ARowAgainstADeclaredFieldFailsAtItsLine) {
  TempDir dir;
  const std::string good = mixed_text(150000, 6);  // 4.4 MB: the bad row is in the second block
  const struct {
    const char* row;
    const char* what;
  } cases[] = {
      {"1 2:3 3:1 5:1\n", "field 3 (features 8-10): the row holds none of its features; --fields "
                          "claims exactly one with value 1"},
      {"1 2:3 3:1 5:1 7:1 8:1\n", "field 2 (features 4-7): the row holds 2 of its features (5, 7); "
                                  "--fields claims exactly one"},
      {"1 2:3 3:0.5 5:1 8:1\n", "field 1 (feature 3): the row holds feature 3 with value 0.5; "
                                "--fields claims value 1"},
  };
  const std::string in = dir.file("in.svm");
  for (const auto& c : cases) {
    SCOPED_TRACE(c.row);
    test::write_file(in, good + c.row + good);
    for (bool split : {false, true}) {
      ConvertOptions opt;
      opt.fields = "3,4-7,8-10";
      if (split) {
        opt.test_fraction = 0.2;
        opt.test_output = dir.file("test.agld");
      }
      Status st = convert_one(in, dir.file("out.agld"), opt);
      EXPECT_EQ(st.code(), Status::Code::kDataError) << st.to_string();
      EXPECT_EQ(st.message(), in + ":150001: " + c.what);
      EXPECT_EQ(test::list_dir(dir.path()), std::vector<std::string>{"in.svm"});
    }
    ConvertOptions opt;
    opt.fields = "3,4-7,8-10";
    opt.skip_bad_lines = true;
    ConvertReport rep;
    ASSERT_TRUE(convert_one(in, dir.file("out.agld"), opt, &rep).is_ok());
    EXPECT_EQ(rep.rows, 300000u);
    EXPECT_EQ(rep.skipped_lines, 1u);
    ASSERT_EQ(rep.skipped_examples.size(), 1u);
    EXPECT_EQ(rep.skipped_examples[0], in + ":150001: " + c.what);
    EXPECT_EQ(meta_of(dir.file("out.agld")).fields, F({{2, 2}, {3, 6}, {7, 9}}));
    std::filesystem::remove(dir.file("out.agld"));
  }
}

TEST(ConvertFields, ABadSpecIsAUsageError) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "1 1:1 2:1\n0 1:1 3:1\n");
  test::write_file(dir.file("zero.svm"), "1 0:1 2:1\n");
  const struct {
    const char* spec;
    std::optional<uint64_t> features;
    const char* file;
    const char* message;
  } cases[] = {
      {"1-3,3-5", std::nullopt, "in.svm", "--fields: ranges 1-3 and 3-5 overlap"},
      {"5-2", std::nullopt, "in.svm", "--fields: range 5-2 is reversed"},
      {"2-9", 8, "in.svm", "--fields: range 2-9 is past --features 8"},
      {"1-x", std::nullopt, "in.svm", "--fields: '1-x' is not a range A-B of feature numbers"},
      {"", std::nullopt, "in.svm", "--fields: '' is not a range A-B of feature numbers"},
      {"1-2,", std::nullopt, "in.svm", "--fields: '' is not a range A-B of feature numbers"},
      {"0-1", std::nullopt, "in.svm", "--fields: range 0-1 holds feature 0, and the source is 1-based"},
      {"1-3", 3, "zero.svm", "--fields: range 1-3 is past the last feature, 2 (the source is 0-based, --features 3)"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.spec);
    ConvertOptions opt;
    opt.fields = c.spec;
    opt.features = c.features;
    Status st = convert_one(dir.file(c.file), dir.file("out.agld"), opt);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.to_string();
    EXPECT_EQ(st.message().rfind(c.message, 0), 0u) << st.message();
    EXPECT_FALSE(std::filesystem::exists(dir.file("out.agld")));
  }
}

// With --features, the detection's 4 bytes a feature join the statistics' 16 in the budget.
TEST(ConvertFields, DetectionMemoryCountsAgainstTheBudget) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "1 1:1 3:2\n0 2:0.5\n");
  const uint64_t mib = uint64_t{1} << 20;
  auto run = [&](const char* fields) {
    ConvertOptions opt;
    opt.features = 3'000'000;  // 57.2 MiB at 20 bytes, 45.8 at 16
    opt.memory = 115 * mib;
    opt.fields = fields;
    return convert_one(dir.file("in.svm"), dir.file("out.agld"), opt);
  };
  EXPECT_TRUE(run("none").is_ok());
  Status st = run("auto");
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << st.to_string();
  EXPECT_EQ(st.message(),
            "--memory 115M is too small for the per-feature statistics and the detection of "
            "one-hot fields of 3000000 features (16 + 4 bytes a feature: 58M) and 64M for the "
            "rest: give --memory 122M or more (or --fields none)");
}

}  // namespace fields_convert_test
}  // namespace
}  // namespace agld
