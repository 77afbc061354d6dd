// A disk that fills while `agld sample` writes its run directory, end to end (issue #17 part
// 4; docs/reliability.md, "Faults"): a real full disk, a tmpfs of a few pages mounted in a
// mount namespace of the test's own (root only: skipped otherwise; the library's handling is
// tested through the FileSystem interface, tests/sampler/disk_full_test.cpp). One line on
// stderr, exit 74, and the last complete checkpoint left, which resumes to the run that never
// stopped.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "test_support.hpp"

namespace agld::test {
namespace {
namespace disk_full_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

namespace fs = std::filesystem;

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

class DiskFullCli : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = dir_.file("heart.agld");
    auto r = run_agld("convert " + shell_arg(heart_scale_svm()) + " -o " + shell_arg(store_) + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string args(const std::string& out) const {
    return "sample --train " + shell_arg(store_) + " --method tmu-rr --chains 2 --iterations 6000 --seed 3 -q --threads 1" +
           " --out " + shell_arg(out);
  }
  TempDir dir_;
  std::string store_;
};

// The run's output on a tmpfs with room for one checkpoint and a half: the second one does
// not fit beside the first (a checkpoint replaces the previous one only once complete), and
// the run stops there, leaving the first.
TEST_F(DiskFullCli, KeepsTheLastCheckpointAndSaysSo) {
  const std::string whole = dir_.file("whole");
  auto r = run_agld(args(whole) + " --checkpoint-every off");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  // The size of the first checkpoint.
  const std::string probe = dir_.file("probe");
  r = run_shell("AGLD_TEST_KILL_AFTER_CHECKPOINT=1 " + shell_arg(AGLD_BINARY) + " " + args(probe) + " --checkpoint-every 1e-9");
  ASSERT_EQ(list_dir(probe), std::vector<std::string>{"checkpoint"});
  const uint64_t first = fs::file_size(probe + "/checkpoint");
  const uint64_t room = (first * 3 / 2 + 4095) / 4096 * 4096;

  const std::string mnt = dir_.file("mnt"), out = mnt + "/run", kept = dir_.file("kept");
  fs::create_directories(mnt);
  fs::create_directories(kept);
  const std::string err = dir_.file("err"), code = dir_.file("code"), left = dir_.file("left");
  // A mount namespace of its own: the tmpfs goes with the shell, whatever happens.
  const std::string script = "mount -t tmpfs -o size=" + std::to_string(room) + " tmpfs " + shell_arg(mnt) +
                             " || exit 77; " + shell_arg(AGLD_BINARY) + " " + args(out) + " --checkpoint-every 1e-9 2> " +
                             shell_arg(err) + "; echo $? > " + shell_arg(code) + "; ls " + shell_arg(out) + " > " +
                             shell_arg(left) + "; cp " + shell_arg(out + "/checkpoint") + " " + shell_arg(kept) +
                             " 2>/dev/null; exit 0";
  r = run_shell("unshare -m sh -c " + shell_arg(script) + " 2>&1");
  if (r.exit_code != 0) GTEST_SKIP() << "cannot mount a tmpfs (needs root): " << r.out << r.err;
  std::cout << "[ info     ] first checkpoint " << first << " bytes, a tmpfs of " << room << " bytes\n";
  const std::string message = read_file(err);
  EXPECT_EQ(read_file(code), "74\n") << message;
  EXPECT_EQ(lines(message), 1) << message;
  EXPECT_EQ(message.rfind("agld: " + out + "/checkpoint: write failed: No space left on device; the run stopped, "
                          "its last checkpoint is kept: agld sample --resume " + out + " continues it\n", 0), 0u)
      << message;
  EXPECT_EQ(read_file(left), "checkpoint\n");
  // The checkpoint left resumes (in a directory with room) to the whole run.
  ASSERT_TRUE(fs::exists(kept + "/checkpoint"));
  r = run_agld("sample --resume " + shell_arg(kept) + " -q");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(read_file(kept + "/posterior.npy") == read_file(whole + "/posterior.npy"));
  EXPECT_TRUE(read_file(kept + "/draws_1.csv").substr(0, 2000) == read_file(whole + "/draws_1.csv").substr(0, 2000));
}

}  // namespace disk_full_cli_test
}  // namespace
}  // namespace agld::test
