// What fuzz/convert_fuzz and fuzz/libsvm_fuzz found (docs/reliability.md), kept as tests.
// Some findings were undefined behaviour that only a sanitizer sees (a memcpy to or from the
// null data() of an empty vector, of 0 bytes): in the ASan + UBSan suite (scripts/sanitize.sh)
// the unfixed code aborts in these tests; in every build they check the results.
#include <gtest/gtest.h>

#include "agld/convert.hpp"
#include "agld/store.hpp"
#include "convert/shuffle.hpp"
#include "convert_test_support.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace fuzz_findings_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::TempDir;

// Rows with no entries through the external shuffle: a block of empty rows only has null
// arrays, and so do the output and a run's row before the first entry (shuffle.cpp: add,
// next, Run::advance, put_record; the last found by the ASan + UBSan suite in
// Convert.ExternalShuffleMatchesInMemoryShuffle).
TEST(ConvertFuzzFindings, EmptyRowsThroughTheShuffleInMemoryAndSpilled) {
  TempDir dir;
  SparseRows empty;
  for (int r = 0; r < 20000; ++r) empty.add_row(r % 2 ? 1.0 : -1.0, {}, {});
  // In memory; spilled to runs; spilled to so many runs that some are merged (put_record).
  for (uint64_t memory : {uint64_t{1} << 30, uint64_t{256} << 10, uint64_t{100} << 10}) {
    SCOPED_TRACE("memory " + std::to_string(memory));
    ExternalShuffler sh(7, memory, dir.path().string());
    for (size_t r = 0; r < empty.rows(); ++r) ASSERT_TRUE(sh.add(empty, r, r).is_ok());
    ASSERT_TRUE(sh.finish().is_ok());
    if (memory < (uint64_t{1} << 20)) {
      EXPECT_GT(sh.runs(), 0u) << "meant to spill";
    }
    SparseRows out;
    bool done = false;
    while (!done) ASSERT_TRUE(sh.next(&out, 997, 1 << 20, &done).is_ok());
    EXPECT_EQ(out.rows(), empty.rows());
    EXPECT_EQ(out.nnz(), 0u);
  }
}

// The smallest case convert_fuzz found: a file of one empty row, shuffled (the default).
TEST(ConvertFuzzFindings, AFileOfEmptyRowsConverts) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "-1\n1\n");
  ConvertOptions opt;
  opt.threads = 1;
  ConvertReport report;
  const Status st = test::convert_one(dir.file("in.svm"), dir.file("out.agld"), opt, &report);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(report.rows, 2u);
  EXPECT_EQ(report.nnz, 0u);
}

// A compressed input is read as a stream: the first block starts from an empty carry (the
// text after the last newline of the block before), which was copied from a buffer never
// allocated (convert.cpp: TextBuffer::assign).
TEST(ConvertFuzzFindings, CompressedInputStartsFromAnEmptyCarry) {
  TempDir dir;
  test::write_file(dir.file("in.svm"), "1 1:0.5 3:1\n-1 2:1\n");
  const auto r = test::run_shell("gzip -k " + test::shell_arg(dir.file("in.svm")));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ConvertOptions opt;
  opt.threads = 1;
  ConvertReport report;
  const Status st = test::convert_one(dir.file("in.svm.gz"), dir.file("out.agld"), opt, &report);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_EQ(report.rows, 2u);
  EXPECT_EQ(report.nnz, 3u);
}

}  // namespace fuzz_findings_test
}  // namespace
}  // namespace agld
