// kill -9 of `agld convert` at seeded random moments (issue #17's tests): whenever it dies,
// the output path holds nothing, or the complete store (killed after its commit: byte for
// byte that of an uninterrupted conversion), and neither the output's directory nor the
// shuffle's --temp-dir holds a temporary file. The moments are spread uniformly over an
// uninterrupted conversion's measured time (and a little past it), so that every stage is hit:
// reading and parsing, the shuffle's buffer and its spilled runs, the merge, the metadata
// and the commit. The local file system writes through unnamed O_TMPFILE files and the
// shuffle's runs are unnamed too, so a kill leaves nothing to clean (on a file system
// without O_TMPFILE a kill -9 leaves OUTPUT.tmp.PID.N behind: faults_test.cpp).
//
// ConvertKilled (default suite): 24 kills (8 under a sanitizer) of a conversion of 64 MB with --memory 64M, which
// spills sorted runs to --temp-dir and merges them into the output (about 0.4 s uninterrupted
// on the development VM). ConvertKilledLong (label long): the same 200 times, to reach the
// short windows (the commit's).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "agld/store.hpp"
#include "test_support.hpp"

namespace agld {
namespace {
namespace kill_test {  // this file's names (unity batches: tests/CMakeLists.txt)

namespace fs = std::filesystem;
using test::TempDir;
using Clock = std::chrono::steady_clock;

std::string libsvm_text(size_t rows, uint64_t seed, uint32_t features) {
  test::RandomMatrixSpec spec;
  spec.rows = rows;
  spec.features = features;
  spec.max_row_nnz = 20;
  std::mt19937_64 rng(seed);
  return test::to_libsvm(test::random_matrix(spec, rng));
}

// Starts agld with args, stdout and stderr to /dev/null.
pid_t spawn_agld(const std::vector<std::string>& args) {
  std::vector<std::string> argv_s = {AGLD_BINARY};
  argv_s.insert(argv_s.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_s) argv.push_back(s.data());
  argv.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
    }
    ::execv(argv[0], argv.data());
    ::_exit(127);
  }
  return pid;
}

std::string names(const std::vector<std::string>& v) {
  std::string s = "{";
  for (const std::string& x : v) s += (s.size() > 1 ? ", " : "") + x;
  return s + "}";
}

// Converts input (args added) to time it and keep its store, then `kills` times
// kills it at a seeded random moment in [0, 1.1 x its time) and checks what is left.
void kill_at_random_moments(const std::string& input, const std::vector<std::string>& extra, int kills,
                            uint64_t default_seed) {
  TempDir ref_dir;
  auto args_for = [&](const fs::path& out, const fs::path& spill) {
    std::vector<std::string> a = {"convert", input, "-o", (out / "x.agld").string(), "--temp-dir", spill.string(),
                                  "--threads", "2", "--seed", "5", "--quiet"};
    a.insert(a.end(), extra.begin(), extra.end());
    return a;
  };
  // Twice: the second, with the input in the page cache as the killed ones have it, is timed.
  double seconds = 0;
  for (int run = 0; run < 2; ++run) {
    const auto t0 = Clock::now();
    int status = 0;
    const pid_t ref = spawn_agld(args_for(ref_dir.path(), ref_dir.path()));
    ASSERT_GT(ref, 0);
    ASSERT_EQ(::waitpid(ref, &status, 0), ref);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "status " << status;
    seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  }
  const std::string want = test::read_file(ref_dir.file("x.agld"));
  std::cout << "[ info     ] an uninterrupted conversion: " << seconds << " s, " << want.size() << " bytes\n";

  std::mt19937_64 rng(test::test_seed(default_seed));  // prints the seed
  std::uniform_real_distribution<double> moment(0, 1.1 * seconds);
  int nothing = 0, complete = 0;
  for (int i = 0; i < kills; ++i) {
    const double at = moment(rng);
    SCOPED_TRACE("kill " + std::to_string(i) + " at " + std::to_string(at) + " s");
    TempDir out, spill;
    int status = 0;
    const pid_t pid = spawn_agld(args_for(out.path(), spill.path()));
    ASSERT_GT(pid, 0);
    std::this_thread::sleep_for(std::chrono::duration<double>(at));
    ASSERT_EQ(::kill(pid, SIGKILL), 0);
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    const std::vector<std::string> left = test::list_dir(out.path());
    EXPECT_TRUE(test::list_dir(spill.path()).empty()) << names(test::list_dir(spill.path()));
    if (left.empty()) {
      ++nothing;
      continue;
    }
    ASSERT_EQ(left, std::vector<std::string>{"x.agld"}) << names(left);
    EXPECT_TRUE(test::read_file(out.file("x.agld")) == want) << "a store other than the uninterrupted one";
    ++complete;
  }
  std::cout << "[ info     ] " << kills << " kills: " << nothing << " left nothing, " << complete
            << " came after the commit (the whole store)\n";
  EXPECT_GT(nothing, 0);
}

// 64 MB of text with --memory 64M: the shuffle spills sorted runs to --temp-dir and merges
// them into the output (about 0.4 s on the development VM).
std::string spilling_input(const TempDir& in) {
  const std::string input = in.file("in.txt");
  std::string text;
  const std::string block = libsvm_text(20000, 81, 30000);
  text.reserve((64u << 20) + block.size());
  while (text.size() < (64u << 20)) text += block;
  test::write_file(input, text);
  return input;
}

TEST(ConvertKilled, AtRandomMomentsLeavesNothingOrTheWholeStore) {
  TempDir in;
  // Under a sanitizer (kSanitizedBuild) a third of the kills: each conversion is slower there, and
  // what the sanitizer checks (the paths to a kill) differs little from kill to kill.
  kill_at_random_moments(spilling_input(in), {"--memory", "64M", "--chunk-bytes", "256K"},
                         test::kSanitizedBuild ? 8 : 24, 83);
}

TEST(ConvertKilledLong, AtRandomMomentsLeavesNothingOrTheWholeStore) {
  TempDir in;
  kill_at_random_moments(spilling_input(in), {"--memory", "64M", "--chunk-bytes", "256K"}, 200, 87);
}

}  // namespace kill_test
}  // namespace
}  // namespace agld
