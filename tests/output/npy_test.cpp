// The .npy encoding of posterior.npy (NumPy format 1.0, header padded to 64 bytes) and its
// decoding (agld summary): round trips, and every malformed file a corruption error.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <utility>

#include "agld/run_output.hpp"

namespace agld {
namespace {
namespace npy_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(Npy, HeaderAndDataFollowFormatOne) {
  const std::vector<double> data = {1.5, -2.0, 0.25, 3.0, 1e-300, -0.0};
  const std::string npy = encode_npy_f64(3, 2, data);
  ASSERT_GE(npy.size(), 10u);
  EXPECT_EQ(npy.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  const size_t header_len = static_cast<unsigned char>(npy[8]) | (static_cast<unsigned char>(npy[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  const std::string header = npy.substr(10, header_len);
  EXPECT_EQ(header.back(), '\n');
  EXPECT_NE(header.find("'descr': '<f8'"), std::string::npos) << header;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  EXPECT_NE(header.find("'shape': (3, 2)"), std::string::npos) << header;
  ASSERT_EQ(npy.size(), 10 + header_len + data.size() * 8);
  std::vector<double> back(data.size());
  std::memcpy(back.data(), npy.data() + 10 + header_len, data.size() * 8);
  EXPECT_EQ(back, data);
}

TEST(Npy, LargeShapesStayAligned) {
  const std::string npy = encode_npy_f64(54686453, 2, {});
  const size_t header_len = static_cast<unsigned char>(npy[8]) | (static_cast<unsigned char>(npy[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_NE(npy.find("'shape': (54686453, 2)"), std::string::npos);
}

ByteSpan bytes(const std::string& s) { return {reinterpret_cast<const std::byte*>(s.data()), s.size()}; }

TEST(Npy, DecodesWhatItEncodes) {
  const std::vector<double> data = {1.5, -2.0, 0.25, 3.0, std::nan(""), -0.0};
  const std::string npy = encode_npy_f64(2, 3, data);
  NpyView v;
  ASSERT_TRUE(decode_npy_f64(bytes(npy), &v).is_ok());
  EXPECT_EQ(v.rows, 2u);
  EXPECT_EQ(v.cols, 3u);
  EXPECT_EQ(v.at(0, 2), 0.25);
  EXPECT_EQ(v.at(1, 0), 3.0);
  EXPECT_TRUE(std::isnan(v.at(1, 1)));
  ASSERT_TRUE(decode_npy_f64(bytes(encode_npy_f64(0, 3, {})), &v).is_ok());
  EXPECT_EQ(v.rows, 0u);
}

TEST(Npy, MalformedFilesAreCorruption) {
  const std::string good = encode_npy_f64(2, 3, std::vector<double>(6, 1.0));
  std::vector<std::pair<std::string, std::string>> bad = {
      {"", "no NumPy magic"},
      {"\x93NUMPX" + good.substr(6), "no NumPy magic"},
      {good.substr(0, 40), "cut short in its header"},
      {good.substr(0, good.size() - 1), "cut short"},
      {good + "x", "bytes of data"},
  };
  std::string f4 = good;
  f4.replace(f4.find("<f8"), 3, "<f4");
  bad.emplace_back(f4, "dtype");
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  bad.emplace_back(fortran, "Fortran");
  std::string shape = good;
  shape.replace(shape.find("(2, 3)"), 6, "(2, x)");
  bad.emplace_back(shape, "shape");
  std::string huge = good;
  huge.replace(huge.find("(2, 3)"), 6, "(99999999999999, 3)");
  bad.emplace_back(huge, "");  // a shape far beyond the data (the header also outgrew its stated length)
  for (const auto& [file, what] : bad) {
    NpyView v;
    const Status st = decode_npy_f64(bytes(file), &v);
    EXPECT_EQ(st.code(), Status::Code::kCorruption) << what << ": " << st.to_string();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.message();
  }
}

}  // namespace npy_test
}  // namespace
}  // namespace agld
