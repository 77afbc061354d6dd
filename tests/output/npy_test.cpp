// The .npy encoding of posterior.npy: NumPy format 1.0, header padded to 64 bytes.
#include <gtest/gtest.h>

#include <cstring>

#include "agld/run_output.hpp"

namespace agld {
namespace {

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

}  // namespace
}  // namespace agld
