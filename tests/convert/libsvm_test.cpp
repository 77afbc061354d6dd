// The LIBSVM parser: what real files contain is accepted; every malformed case is rejected
// with its line, column and what was expected.
#include <gtest/gtest.h>

#include <random>

#include "convert/libsvm.hpp"

namespace agld {
namespace {
namespace libsvm_test {  // this file's names (unity batches: tests/CMakeLists.txt)

ParsedBlock parse(std::string_view text, ParseOptions opt = {}) {
  ParsedBlock b;
  parse_block(text, 1, opt, &b);
  return b;
}

TEST(Libsvm, AcceptsWhatRealFilesContain) {
  const std::string text =
      "+1 1:0.5 3:1\n"             // + label
      "-1 2:1e-3 4:2.5E+2\r\n"     // exponents, CRLF
      "0\t5:-1\t6:+3 # comment\n"  // tabs, 0 label, + value, trailing comment
      "\n"                         // blank line
      "# a comment line\n"
      "   \n"
      "2.75 qid:7 9:1 7:2 8:3\n"   // real label, qid, unsorted
      "1 10:1#c\n"                 // comment right after a value
      "-1";                        // empty row, no final newline
  ParsedBlock b = parse(text);
  ASSERT_TRUE(b.errors.empty()) << b.errors[0].what;
  ASSERT_EQ(b.rows.rows(), 6u);
  EXPECT_EQ(b.rows.labels, (std::vector<double>{1, -1, 0, 2.75, 1, -1}));
  EXPECT_EQ(b.rows.offsets, (std::vector<uint64_t>{0, 2, 4, 6, 9, 10, 10}));
  EXPECT_EQ(b.rows.indices, (std::vector<uint32_t>{0, 2, 1, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(b.rows.values, (std::vector<float>{0.5f, 1, 1e-3f, 250, -1, 3, 2, 3, 1, 1}));
  EXPECT_EQ(b.row_line, (std::vector<uint64_t>{1, 2, 3, 7, 8, 9}));
  EXPECT_EQ(b.qid_line, 7u);
  EXPECT_EQ(b.empty_rows, 1u);
  EXPECT_EQ(b.max_index, 10u);
  EXPECT_EQ(b.lines, 9u);
  ASSERT_EQ(b.row_sq_norm.size(), 6u);
  EXPECT_DOUBLE_EQ(b.row_sq_norm[0], 0.25 + 1);
  EXPECT_NEAR(b.row_sq_norm[1], 250.0 * 250.0 + 1e-6, 1e-6);  // 1e-3 and 250
  EXPECT_EQ(b.row_sq_norm[5], 0.0);
}

TEST(Libsvm, ZeroBasedIndices) {
  ParseOptions opt;
  opt.index_base = 0;
  ParsedBlock b = parse("1 0:1 4:2\n", opt);
  ASSERT_TRUE(b.errors.empty());
  EXPECT_EQ(b.rows.indices, (std::vector<uint32_t>{0, 4}));
  EXPECT_TRUE(has_index_zero("1 0:1 4:2\n"));
  EXPECT_TRUE(has_index_zero("1 3:1\n-1\t0:2\n"));
  EXPECT_FALSE(has_index_zero("1 10:1 20:2 qid:0\n"));
}

TEST(Libsvm, UnderflowRoundsToZeroAndDenormalsKept) {
  ParsedBlock b = parse("1 1:1e-50 2:1e-40\n");
  ASSERT_TRUE(b.errors.empty()) << b.errors[0].what;
  EXPECT_EQ(b.rows.values[0], 0.0f);
  EXPECT_GT(b.rows.values[1], 0.0f);
}

struct BadCase {
  const char* text;
  uint64_t line;
  uint64_t column;
  const char* expect;  // a substring of the message
  int base = 1;
  uint64_t features = 0;
};

class LibsvmRejects : public ::testing::TestWithParam<BadCase> {};

TEST_P(LibsvmRejects, WithLineColumnAndReason) {
  const BadCase& c = GetParam();
  ParseOptions opt;
  opt.index_base = c.base;
  if (c.features) opt.features = c.features;
  ParsedBlock b = parse(c.text, opt);
  ASSERT_EQ(b.errors.size(), 1u) << c.text;
  EXPECT_EQ(b.errors[0].line, c.line) << b.errors[0].what;
  EXPECT_EQ(b.errors[0].column, c.column) << b.errors[0].what;
  EXPECT_NE(b.errors[0].what.find(c.expect), std::string::npos) << b.errors[0].what;
}

INSTANTIATE_TEST_SUITE_P(
    EveryMalformedCase, LibsvmRejects,
    ::testing::Values(
        BadCase{"1 1:1\n1 0:1\n", 2, 3, "index 0 in a 1-based file"},
        BadCase{"1 3:1 5:2 3:4\n", 1, 11, "duplicate feature index 3"},
        BadCase{"1 5:1 3:2 5:4\n", 1, 11, "duplicate feature index 5"},  // unsorted row
        BadCase{"1 2:nan\n", 1, 5, "not finite"},
        BadCase{"1 2:inf\n", 1, 5, "not finite"},
        BadCase{"1 2:-Infinity\n", 1, 5, "not finite"},
        BadCase{"1 2:1e39\n", 1, 5, "out of float32 range"},
        BadCase{"1 0.5\n", 1, 3, "a value without an index"},
        BadCase{"1 :0.5\n", 1, 3, "expected a feature index before ':'"},
        BadCase{"abc 1:1\n", 1, 1, "expected a numeric label"},
        BadCase{"nan 1:1\n", 1, 1, "is not finite"},
        BadCase{"1 11:1\n", 1, 3, "above --features 10", 1, 10},
        BadCase{"1 10:1\n", 1, 3, "above --features 10", 0, 10},
        BadCase{"1 -3:1\n", 1, 3, "negative feature index '-3'"},
        BadCase{"1 2:0.5abc\n", 1, 8, "unexpected 'abc' after the value of feature 2"},
        BadCase{"1 2:0.5:3\n", 1, 8, "unexpected ':3'"},
        BadCase{"1 2:\n", 1, 5, "expected a value after"},
        BadCase{"1 2:x\n", 1, 5, "expected a numeric value for feature 2"},
        BadCase{"1 2x:1\n", 1, 3, "expected INDEX:VALUE"},
        BadCase{"1 99999999999:1\n", 1, 3, "too large"},
        BadCase{"1abc 2:1\n", 1, 1, "expected a numeric label"}));

TEST(Libsvm, IndicesOfEveryLengthAnywhereInTheBlock) {
  // Indices of 1 to 10 digits, in rows cut at every position relative to the block end,
  // so that the 8-digits-at-a-time path and its fallback near the end are both exercised.
  std::mt19937_64 rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    std::vector<uint32_t> expect;
    uint64_t prev = 0;
    const int n = 1 + static_cast<int>(rng() % 6);
    text += "1";
    for (int k = 0; k < n; ++k) {
      const int digits = 1 + static_cast<int>(rng() % 10);
      uint64_t lo = prev + 1, hi = 1;
      for (int d = 0; d < digits; ++d) hi *= 10;
      hi = std::min<uint64_t>(hi - 1, 4294967296ull);
      if (lo > hi) break;
      const uint64_t idx = lo + rng() % (hi - lo + 1);
      text += ' ';
      text += std::to_string(idx);
      text += rng() % 2 ? ":1" : ":0.5";
      expect.push_back(static_cast<uint32_t>(idx - 1));
      prev = idx;
    }
    if (rng() % 2) text += "\n";
    ParsedBlock b = parse(text);
    ASSERT_TRUE(b.errors.empty()) << text << ": " << b.errors[0].what;
    EXPECT_EQ(b.rows.indices, expect) << text;
  }
  ParsedBlock b = parse("1 4294967297:1\n");
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_NE(b.errors[0].what.find("too large"), std::string::npos);
  b = parse("1 123456789012345678901234567890:1\n");
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_NE(b.errors[0].what.find("too large"), std::string::npos);
}

TEST(Libsvm, BinaryTaskRejectsOtherLabels) {
  ParseOptions opt;
  opt.binary_labels_only = true;
  ParsedBlock b = parse("1 1:1\n0.5 1:1\n", opt);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_EQ(b.errors[0].line, 2u);
  EXPECT_NE(b.errors[0].what.find("not a binary label"), std::string::npos);
}

TEST(Libsvm, StopsAtFirstErrorUnlessSkipping) {
  const std::string text = "1 1:1\nbad\n1 2:1\n1 0:1\n1 3:1\n";
  ParsedBlock b = parse(text);
  EXPECT_EQ(b.rows.rows(), 1u);
  ASSERT_EQ(b.errors.size(), 1u);
  EXPECT_EQ(b.errors[0].line, 2u);
  ParseOptions skip;
  skip.skip_bad_lines = true;
  b = parse(text, skip);
  EXPECT_EQ(b.rows.rows(), 3u);
  EXPECT_EQ(b.skipped, 2u);
  ASSERT_EQ(b.errors.size(), 2u);
  EXPECT_EQ(b.errors[1].line, 4u);
  EXPECT_EQ(b.row_line, (std::vector<uint64_t>{1, 3, 5}));
}

}  // namespace libsvm_test
}  // namespace
}  // namespace agld
