// A run that fails before RunWriter::finish leaves nothing behind: not its files, and not the
// directories RunWriter::create made; a directory that was there before stays as it was.
#include <gtest/gtest.h>

#include <filesystem>

#include "agld/file.hpp"
#include "agld/run_output.hpp"
#include "test_support.hpp"

namespace agld::test {
namespace {
namespace run_writer_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(RunWriter, AnUnfinishedRunRemovesTheDirectoriesItMade) {
  TempDir dir;
  const std::string out = dir.file("a/b/run");
  {
    std::unique_ptr<RunWriter> w;
    ASSERT_TRUE(RunWriter::create(out, FileSystem::local(), &w).is_ok());
    EXPECT_TRUE(std::filesystem::is_directory(out));
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("a")));
  EXPECT_TRUE(std::filesystem::is_directory(dir.path()));
}

TEST(RunWriter, AnUnfinishedRunKeepsADirectoryThatWasThere) {
  TempDir dir;
  const std::string out = dir.file("run");
  std::filesystem::create_directories(out);
  write_file(dir.file("run/notes.txt"), "mine\n");
  {
    std::unique_ptr<RunWriter> w;
    ASSERT_TRUE(RunWriter::create(dir.file("run/new"), FileSystem::local(), &w).is_ok());
  }
  EXPECT_FALSE(std::filesystem::exists(dir.file("run/new")));
  EXPECT_EQ(list_dir(out), std::vector<std::string>{"notes.txt"});
}

// agld optimize's directory: tables and config.json only, without start(); the tables are
// (d, columns) float64 .npy files, each column in order, and a finished directory stays.
TEST(RunWriter, FinishTablesWritesTheTablesAndConfigOnly) {
  TempDir dir;
  const std::string out = dir.file("opt");
  const std::vector<double> mode = {1.5, -2.0, 0.25}, sd = {0.1, 0.2, 0.3};
  {
    std::unique_ptr<RunWriter> w;
    ASSERT_TRUE(RunWriter::create(out, FileSystem::local(), &w).is_ok());
    ASSERT_TRUE(w->finish_tables({{"mode.npy", {&mode, &sd}}}, "{}\n").is_ok());
  }
  EXPECT_EQ(list_dir(out), (std::vector<std::string>{"config.json", "mode.npy"}));
  EXPECT_EQ(read_file(out + "/config.json"), "{}\n");
  const std::string npy = read_file(out + "/mode.npy");
  const std::vector<double> interleaved = {1.5, 0.1, -2.0, 0.2, 0.25, 0.3};
  const std::string expected = encode_npy_f64(3, 2, interleaved);
  EXPECT_EQ(npy, expected);
}

}  // namespace run_writer_test
}  // namespace
}  // namespace agld::test
