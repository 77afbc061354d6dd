// A run that fails before RunWriter::finish leaves nothing behind: not its files, and not the
// directories RunWriter::create made; a directory that was there before stays as it was.
#include <gtest/gtest.h>

#include <filesystem>

#include "agld/file.hpp"
#include "agld/run_output.hpp"
#include "test_support.hpp"

namespace agld::test {
namespace {

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

}  // namespace
}  // namespace agld::test
