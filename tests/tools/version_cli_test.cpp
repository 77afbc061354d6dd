// The build's identity (cmake/agld_version.cmake): "VERSION+COMMIT", the git commit from
// `git describe --always --dirty`, "unknown" for sources without .git (a tarball). It is what
// `agld --version` prints and what a checkpoint records (ResumeChecks.RefusesAnotherBuild).
#include <gtest/gtest.h>

#include <filesystem>

#include "agld/version.hpp"
#include "test_support.hpp"

namespace agld::test {
namespace {
namespace version_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(Version, IsTheProjectVersionAndTheCommit) {
  EXPECT_EQ(std::string(kVersion), std::string(kProjectVersion) + "+" + kGitCommit);
  auto r = run_agld("--version");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("agld ") + kVersion + "\n");
  // Built from a git work tree (with git on the PATH): a commit, not "unknown".
  const std::string src = AGLD_SOURCE_DIR;
  if (std::filesystem::exists(src + "/.git") && run_shell("git -C " + shell_arg(src) + " rev-parse HEAD").exit_code == 0) {
    EXPECT_NE(std::string(kGitCommit), "unknown");
  }
}

// Sources without .git (a release tarball) still configure: the commit is "unknown".
TEST(Version, WithoutGitTheCommitIsUnknown) {
  TempDir dir;
  std::filesystem::create_directories(dir.file("src"));
  write_file(dir.file("src/version.cpp.in"), read_file(std::string(AGLD_SOURCE_DIR) + "/src/version.cpp.in"));
  const std::string out = dir.file("version.cpp");
  auto r = run_shell("cmake -DSOURCE_DIR=" + shell_arg(dir.path().string()) + " -DVERSION=9.8.7 -DOUT=" + shell_arg(out) +
                     " -P " + shell_arg(std::string(AGLD_SOURCE_DIR) + "/cmake/agld_version.cmake"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string text = read_file(out);
  EXPECT_NE(text.find("kVersion = \"9.8.7+unknown\""), std::string::npos) << text;
  EXPECT_NE(text.find("kGitCommit = \"unknown\""), std::string::npos) << text;
}

}  // namespace version_cli_test
}  // namespace
}  // namespace agld::test
