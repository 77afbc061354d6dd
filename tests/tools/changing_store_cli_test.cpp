// A store cut short while `agld sample` reads it, end to end (issue #17 part 4;
// docs/reliability.md, "Faults"): one line on stderr naming the store, exit 65, never a
// crash or a core dump (tests/reader/changing_store_test.cpp tests the reader in-process).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <random>

#include "test_support.hpp"

namespace agld::test {
namespace {
namespace changing_store_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

namespace fs = std::filesystem;

int lines(const std::string& s) { return static_cast<int>(std::count(s.begin(), s.end(), '\n')); }

// The training store cut to half its size a moment after the run started: the reader finds
// it at its next read of the file, whole chunks (zstd, read with pread and checked by their
// CRC) or rows read on their own from the memory map (codec none, rr: the map's pages past
// the new end fault, which would otherwise be a SIGBUS). The run stops with one line naming
// the store; exit 65, not a signal. (ptu: a chain holds 8 d bytes, so that the reader gets most of the budget.)
TEST(ChangingStoreCli, TruncatedUnderSampleIsOneLineNotACrash) {
  TempDir dir;
  RandomMatrixSpec spec;
  spec.rows = 20000;
  spec.features = 3000;
  spec.max_row_nnz = 30;
  spec.long_row_prob = 0;
#ifdef AGLD_TEST_MEMORY_SANITIZER
  GTEST_SKIP() << "needs --memory 64M to hold less than the store, and " AGLD_TEST_MEMORY_SANITIZER
                  "'s shadow memory alone takes more; ChangingStore.* checks the same detection in-process";
#endif
  std::mt19937_64 rng(test_seed(95));
  SparseRows rows = random_matrix(spec, rng);
  for (double& y : rows.labels) y = y > 0 ? 1 : 0;
  // 320,000 rows, about 45 MB decoded: larger than the reader's share of --memory 64M
  // (about 25 MB), so that every pass reads the file again.
  const std::string block = to_libsvm(rows);
  std::string text;
  for (int i = 0; i < 16; ++i) text += block;
  write_file(dir.file("in.txt"), text);
  for (const char* codec : {"zstd", "none"}) {
    const std::string method = std::string(codec) == "none" ? "ptu-rr" : "ptu-ca";
    SCOPED_TRACE(std::string(codec) + ", " + method);
    const std::string store = dir.file(std::string("s_") + codec + ".agld");
    auto r = run_agld("convert " + shell_arg(dir.file("in.txt")) + " -o " + shell_arg(store) + " --compression " + codec +
                      " --chunk-bytes 256K -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const uint64_t size = fs::file_size(store);
    const std::string out = dir.file(std::string("run_") + codec);
    // Long enough to be running when the store is cut (the time limit bounds it if not). Cut
    // once sampling has begun, when the run has opened its draws file (a file of the run
    // directory among /proc/PID/fd's targets; O_TMPFILE's too): a fixed sleep cut it during the
    // set-up on a loaded machine, and another message came out.
    std::string cmd = "(";
    cmd += shell_arg(AGLD_BINARY);
    cmd += " sample --train " + shell_arg(store) + " --method " + method;
    cmd += " --chains 1 --epochs 1000 --time-limit 30 --memory 64M --checkpoint-every off -q --out " + shell_arg(out);
    cmd += " & pid=$!; for i in $(seq 1200); do ls -l /proc/$pid/fd 2>/dev/null | grep -qF " + shell_arg(out + "/") +
           " && break; sleep 0.05; done";
    cmd += "; truncate -s " + std::to_string(size / 2) + " " + shell_arg(store);
    cmd += "; wait $pid; echo exit=$?) 2>&1";
    r = run_shell(cmd);
    const size_t at = r.out.rfind("exit=");
    ASSERT_NE(at, std::string::npos) << r.out;
    const std::string message = r.out.substr(0, at);
    EXPECT_EQ(r.out.substr(at), "exit=65\n") << message;
    EXPECT_EQ(lines(message), 1) << message;
    EXPECT_EQ(message.rfind("agld: " + store + ": the file changed while it was being read", 0), 0u) << message;
    EXPECT_EQ(message.find("core dumped"), std::string::npos) << message;
    EXPECT_FALSE(fs::exists(out)) << "a stopped run left its directory";
  }
}

}  // namespace changing_store_cli_test
}  // namespace
}  // namespace agld::test
