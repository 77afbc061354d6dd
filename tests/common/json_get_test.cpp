// json_get / json_at (src/common/json_get.hpp): integers are read only from JSON integers in
// the target type's range; anything else is nlohmann's type_error naming the key.
#include "common/json_get.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace agld {
namespace {
namespace json_get_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using nlohmann::json;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const json::type_error& e) {
    return e.what();
  }
  return "no error";
}

TEST(JsonGet, IntegersInRangeAreRead) {
  const json j = json::parse(R"({"u": 18446744073709551615, "i": -5, "z": 0, "small": 4294967295})");
  EXPECT_EQ(json_at<uint64_t>(j, "u"), UINT64_MAX);
  EXPECT_EQ(json_at<int64_t>(j, "i"), -5);
  EXPECT_EQ(json_at<int>(j, "i"), -5);
  EXPECT_EQ(json_at<uint64_t>(j, "z"), 0u);
  EXPECT_EQ(json_at<unsigned>(j, "small"), 4294967295u);
}

// The fuzz finding: "chain_id": 1.7e60 was cast to uint64_t (undefined behaviour).
TEST(JsonGet, AFloatForAnIntegerIsATypeErrorNamingTheKey) {
  const json j = json::parse(R"({"chain_id": 1777777777777777777777777777777777777777777777777777777777777,
                                 "half": 2.5, "whole": 2.0})");
  const std::string e = error_of([&] { json_at<uint64_t>(j, "chain_id"); });
  EXPECT_NE(e.find("type_error.302"), std::string::npos) << e;
  EXPECT_NE(e.find("chain_id: expected an integer in [0, 18446744073709551615], found 1.7"), std::string::npos)
      << e;
  EXPECT_NE(error_of([&] { json_at<uint64_t>(j, "half"); }), "no error");
  EXPECT_NE(error_of([&] { json_at<uint64_t>(j, "whole"); }), "no error");  // written by us as 2, never 2.0
}

TEST(JsonGet, OutOfTheTypesRangeIsATypeError) {
  const json j = json::parse(R"({"neg": -1, "big": 4294967296, "huge": 18446744073709551615})");
  EXPECT_NE(error_of([&] { json_at<uint64_t>(j, "neg"); }).find("neg: expected an integer"), std::string::npos);
  EXPECT_NE(error_of([&] { json_at<unsigned>(j, "big"); }).find("big: expected an integer in [0, 4294967295]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { json_at<int64_t>(j, "huge"); }), "no error");
}

TEST(JsonGet, OtherTypesKeepNlohmannsChecksAndNameTheKey) {
  const json j = json::parse(R"({"s": "x", "b": true, "d": 1e300, "n": 3, "list": [1, 2, 3], "bad": [1, -2]})");
  EXPECT_EQ(json_at<std::string>(j, "s"), "x");
  EXPECT_TRUE(json_at<bool>(j, "b"));
  EXPECT_EQ(json_at<double>(j, "d"), 1e300);
  EXPECT_EQ(json_at<double>(j, "n"), 3.0);
  EXPECT_EQ(json_at<std::vector<uint64_t>>(j, "list"), (std::vector<uint64_t>{1, 2, 3}));
  EXPECT_NE(error_of([&] { json_at<std::vector<uint64_t>>(j, "bad"); }).find("bad: expected an integer"),
            std::string::npos);
  EXPECT_NE(error_of([&] { json_at<std::vector<uint64_t>>(j, "s"); }).find("s: expected an array, found a string"),
            std::string::npos);
  const std::string e = error_of([&] { json_at<std::string>(j, "b"); });
  EXPECT_NE(e.find("b: type must be string"), std::string::npos) << e;
  EXPECT_THROW(json_at<bool>(j, "absent"), json::out_of_range);
}

}  // namespace json_get_test
}  // namespace
}  // namespace agld
