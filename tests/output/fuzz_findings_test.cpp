// What fuzz/summary_fuzz found (docs/reliability.md), kept as tests: a run directory's
// files, however damaged, are an error naming the file, never a crash.
#include <gtest/gtest.h>

#include "agld/run_summary.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace fuzz_findings_test {  // this file's names (unity batches: tests/CMakeLists.txt)

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

// config.json with a float where an integer belongs ("chain_id": 1.7e60): nlohmann's get<uint64_t>
// cast it (undefined behaviour, UBSan's float-cast-overflow). Now corruption naming the key; a
// negative count is no longer wrapped to 2^64 - 1 either.
TEST(SummaryFuzzFindings, ConfigFloatOrNegativeForAnIntegerIsCorruption) {
  for (const char* chains : {"1777777777777777777777777777777777777777777777777777777777777", "2.5", "-1"}) {
    test::TempDir dir;
    test::write_file(dir.file("config.json"),
                     std::string("{\"method\": \"tmu-ca\", \"model\": \"linear\", \"chains\": ") + chains + "}\n");
    RunSummary s;
    const Status st = summarize_run(dir.path().string(), FileSystem::local(), &s);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << chains << ": " << st.to_string();
    EXPECT_NE(st.message().find("not the configuration of an agld run"), std::string::npos) << st.message();
    EXPECT_NE(st.message().find("chains: expected an integer"), std::string::npos) << st.message();
  }
}

}  // namespace fuzz_findings_test
}  // namespace
}  // namespace agld
