// What fuzz/summary_fuzz found (docs/reliability.md), kept as tests: a run directory's
// files, however damaged, are an error naming the file, never a crash.
#include <gtest/gtest.h>

#include "agld/run_summary.hpp"
#include "test_support.hpp"

namespace agld {
namespace {

// config.json with a number too large for a double: nlohmann::json throws out_of_range
// (406), not parse_error, which summarize_run did not catch: `agld summary` was terminated.
TEST(SummaryFuzzFindings, ConfigNumberOutOfRangeIsCorruption) {
  test::TempDir dir;
  test::write_file(dir.file("config.json"), "{\"method\": \"tmu-ca\", \"step\": 3.773345036E5512087}\n");
  RunSummary s;
  const Status st = summarize_run(dir.path().string(), FileSystem::local(), &s);
  EXPECT_EQ(st.code(), Status::Code::kCorruption) << st.to_string();
  EXPECT_NE(st.message().find("config.json"), std::string::npos) << st.message();
  EXPECT_NE(st.message().find("not valid JSON"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace agld
