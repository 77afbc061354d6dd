// --init and --metric files are read through the FileSystem (sampler/coordinate_file.hpp), so
// that faults are injected into them as into any other file: a read that fails, a file cut
// short or with a flipped byte is a one-line error naming the option and the file, and the
// file is not used.
#include "sampler/coordinate_file.hpp"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "../file/fault_fs.hpp"
#include "agld/run_output.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace coordinate_file_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::CoordinateFile;
using test::FaultFileSystem;
using test::TempDir;

constexpr uint64_t kDim = 1000;

// A (kDim, 2) float64 .npy of positive values; its size in *size.
std::string write_npy(const TempDir& dir, uint64_t* size) {
  std::vector<double> data(2 * kDim);
  for (size_t i = 0; i < data.size(); ++i) data[i] = 1 + 0.5 * static_cast<double>(i % 7);
  const std::string bytes = encode_npy_f64(kDim, 2, data);
  *size = bytes.size();
  const std::string path = dir.file("mode.npy");
  test::write_file(path, bytes);
  return path;
}

void expect_one_line(const Status& st, const std::string& option, const std::string& path) {
  EXPECT_EQ(st.message().rfind(option + " " + path + ": ", 0), 0u) << st.message();
  EXPECT_EQ(st.message().find('\n'), std::string::npos) << st.message();
}

TEST(CoordinateFileFaults, AFailedReadIsOneLineNamingTheOptionAndTheFile) {
  TempDir dir;
  uint64_t size = 0;
  const std::string path = write_npy(dir, &size);
  for (const std::string option : {"--init", "--metric"}) {
    for (uint64_t at :
         {uint64_t{0}, uint64_t{9}, uint64_t{200}, size - 1}) {  // the header, the data
      SCOPED_TRACE(option + ": the read reaching byte " + std::to_string(at) + " of " +
                   std::to_string(size) + " fails");
      FaultFileSystem ffs;
      ffs.read_error_at = at;
      std::unique_ptr<CoordinateFile> f;
      const Status st = CoordinateFile::open(option, path, kDim, 1, &f, ffs);
      EXPECT_EQ(st.code(), Status::Code::kIOError) << st.to_string();
      expect_one_line(st, option, path);
      EXPECT_NE(st.message().find("read failed: Input/output error"), std::string::npos)
          << st.message();
      EXPECT_EQ(ffs.faults_injected(), 1u);
      EXPECT_EQ(f, nullptr);
    }
  }
  // A fault past the end is never reached: the file reads as written.
  FaultFileSystem ffs;
  ffs.read_error_at = size;
  std::unique_ptr<CoordinateFile> f;
  const Status st = CoordinateFile::open("--init", path, kDim, 2, &f, ffs);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  EXPECT_TRUE(f->check_column(1, true).is_ok());
  EXPECT_EQ(f->at(kDim - 1, 1), 1 + 0.5 * static_cast<double>((2 * kDim - 1) % 7));
  EXPECT_EQ(ffs.faults_injected(), 0u);
}

TEST(CoordinateFileFaults, AShortOrDamagedFileIsOneLineNamingTheOptionAndTheFile) {
  TempDir dir;
  uint64_t size = 0;
  const std::string path = write_npy(dir, &size);
  for (uint64_t keep : {uint64_t{0}, uint64_t{5}, uint64_t{100}, size - 8, size - 1}) {
    SCOPED_TRACE("cut to " + std::to_string(keep) + " of " + std::to_string(size) + " bytes");
    FaultFileSystem ffs;
    ffs.truncate_to = keep;
    std::unique_ptr<CoordinateFile> f;
    const Status st = CoordinateFile::open("--metric", path, kDim, 2, &f, ffs);
    EXPECT_FALSE(st.is_ok());
    expect_one_line(st, "--metric", path);
  }
  // A flipped byte in the magic, in the header's shape (1000 rows read as 0000), in the data
  // (the last sd made negative: found by check_column, naming the row).
  const uint64_t shape_at = test::read_file(path).find("(1000") + 1;
  for (auto [offset, mask] :
       {std::pair<uint64_t, uint8_t>{1, 0xFF}, {shape_at, 0x01}, {size - 1, 0x80}}) {
    SCOPED_TRACE("byte " + std::to_string(offset) + " flipped");
    FaultFileSystem ffs;
    ffs.flips = {{offset, mask}};
    std::unique_ptr<CoordinateFile> f;
    Status st = CoordinateFile::open("--init", path, kDim, 2, &f, ffs);
    if (st.is_ok()) st = f->check_column(1, true);
    EXPECT_FALSE(st.is_ok());
    expect_one_line(st, "--init", path);
  }
}

}  // namespace coordinate_file_test
}  // namespace
}  // namespace agld
