// `agld sample --checkpoint-every` and `--resume DIR` end to end (docs/reliability.md): a run
// killed with SIGKILL after a checkpoint (a test hook, then at seeded random moments) and
// resumed leaves the run directory of the run that was never killed: every file byte for
// byte, except the wall times (metrics.csv's seconds and eval_seconds, config.json's
// result.seconds, the draws files' elapsed-time comment) and the two gauges of the process
// (metrics.csv's bytes_read: a resumed reader reads again what its cache held; memory_bytes;
// config.json's reader_bytes, from the resident set when the run started).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <random>
#include <sstream>

#include "test_support.hpp"

namespace agld::test {
namespace {
namespace resume_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

const std::string kHeart = heart_scale_svm();

// metrics.csv with the columns that are wall times or process gauges blanked.
std::string comparable_metrics(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  std::vector<bool> blank;
  while (std::getline(in, line)) {
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    if (blank.empty()) {
      for (const std::string& c : cells) {
        blank.push_back(c == "seconds" || c == "eval_seconds" || c == "bytes_read" || c == "memory_bytes");
      }
    } else {
      for (size_t i = 0; i < cells.size() && i < blank.size(); ++i) {
        if (blank[i]) cells[i].assign(1, '-');
      }
    }
    for (const std::string& c : cells) {
      out += c;
      out += ',';
    }
    out += "\n";
  }
  return out;
}

// A draws file without its elapsed-time comment.
std::string comparable_draws(const std::string& text) {
  std::istringstream in(text);
  std::string line, out;
  while (std::getline(in, line)) {
    if (line.rfind("#  Elapsed Time", 0) != 0) out += line + "\n";
  }
  return out;
}

std::string comparable_config(const std::string& text) {
  nlohmann::json j = nlohmann::json::parse(text);
  j["result"].erase("seconds");
  // The readers' share: what the budget leaves after the process's resident set when the run
  // started, which differs between any two runs (the resumed run keeps the killed one's).
  j.erase("reader_bytes");
  return j.dump(1);
}

// Every file of run directory b is that of a, but for the wall times and gauges.
void expect_same_run(const std::string& a, const std::string& b) {
  const std::vector<std::string> files = list_dir(a);
  ASSERT_EQ(files, list_dir(b)) << b;
  for (const std::string& f : files) {
    const std::string x = read_file(a + "/" + f), y = read_file(b + "/" + f);
    if (f == "metrics.csv") {
      EXPECT_EQ(comparable_metrics(x), comparable_metrics(y)) << f;
    } else if (f.rfind("draws_", 0) == 0) {
      EXPECT_EQ(comparable_draws(x), comparable_draws(y)) << f;
    } else if (f == "config.json") {
      EXPECT_EQ(comparable_config(x), comparable_config(y)) << f;
    } else {
      EXPECT_TRUE(x == y) << f << " differs";
    }
  }
}

class ResumeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = dir_.file("heart.agld");
    auto r = run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(store_) + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  std::string args(const std::string& out, unsigned threads) const {
    return "sample --train " + shell_arg(store_) + " --test " + shell_arg(store_) +
           " --method tmu-rr --chains 2 --iterations 6000 --seed 3 -q --threads " + std::to_string(threads) +
           " --out " + shell_arg(out);
  }
  TempDir dir_;
  std::string store_;
};

TEST_F(ResumeCli, KilledAfterACheckpointAndResumedIsTheWholeRun) {
  for (unsigned threads : {1u, 2u}) {
    SCOPED_TRACE(std::to_string(threads).append(" thread(s)"));
    const std::string whole = dir_.file(std::string("whole").append(std::to_string(threads)));
    auto r = run_agld(args(whole, threads) + " --checkpoint-every off");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const std::string killed = dir_.file(std::string("killed").append(std::to_string(threads)));
    r = run_shell("AGLD_TEST_KILL_AFTER_CHECKPOINT=3 " + shell_arg(AGLD_BINARY) + " " + args(killed, threads) +
                  " --checkpoint-every 1e-9");
    ASSERT_NE(r.exit_code, 0) << "the hook did not kill the run";
    // Only the checkpoint: every other file of a run is linked into place when it ends.
    ASSERT_EQ(list_dir(killed), std::vector<std::string>{"checkpoint"});
    // What a kill between the link and the rename of a checkpoint's commit leaves beside it
    // (docs/reliability.md): the resumed run removes it.
    const pid_t dead = ::fork();
    if (dead == 0) ::_exit(0);
    ASSERT_EQ(::waitpid(dead, nullptr, 0), dead);
    write_file(killed + "/checkpoint.tmp." + std::to_string(dead) + ".7", read_file(killed + "/checkpoint"));
    // A new run into it is refused: it would lose the checkpoint.
    r = run_agld(args(killed, threads));
    EXPECT_EQ(r.exit_code, 64);
    EXPECT_NE(r.err.find("--resume"), std::string::npos) << r.err;
    // Options that are not the run's are refused, naming the option; --threads may change.
    r = run_agld("sample --resume " + shell_arg(killed) + " --seed 4 -q");
    EXPECT_EQ(r.exit_code, 64);
    EXPECT_NE(r.err.find("option seed was 3, now 4"), std::string::npos) << r.err;
    r = run_agld("sample --resume " + shell_arg(killed) + " --seed 3 -q --threads " + std::to_string(threads));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    expect_same_run(whole, killed);
    EXPECT_FALSE(std::filesystem::exists(killed + "/checkpoint"));  // the run is complete
    // Nothing left to resume.
    r = run_agld("sample --resume " + shell_arg(killed) + " -q");
    EXPECT_EQ(r.exit_code, 66) << r.err;
  }
}

// kill -9 at seeded random moments while checkpoints are written as often as the run can:
// either the run had no checkpoint yet and left nothing, or it resumes to the whole run.
TEST_F(ResumeCli, KillNineAtRandomMomentsThenResume) {
  const std::string whole = dir_.file("whole");
  auto r = run_agld(args(whole, 2) + " --checkpoint-every off");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::mt19937_64 rng(test_seed(91));
  int resumed = 0;
  const int kills = kSanitizedBuild ? 3 : 6;  // each run is slower under a sanitizer
  for (int i = 0; i < kills; ++i) {
    const std::string out = dir_.file(std::string("run").append(std::to_string(i)));
    const double delay = std::uniform_real_distribution<double>(0.05, 0.6)(rng);
    std::string cmd = "(";
    cmd.append(shell_arg(AGLD_BINARY)).append(" ").append(args(out, 2));
    cmd.append(" --checkpoint-every 0.02 & pid=$!; sleep ").append(std::to_string(delay));
    cmd.append("; kill -9 $pid; wait $pid) 2>/dev/null");
    r = run_shell(cmd);
    if (!std::filesystem::exists(out)) continue;
    const std::vector<std::string> left = list_dir(out);
    if (left.empty()) continue;  // killed before its first checkpoint
    // (A kill while the finished run linked its files in place leaves some beside the
    // checkpoint, which is removed last: resuming rewrites them all.)
    if (std::find(left.begin(), left.end(), "checkpoint") != left.end()) {
      r = run_agld("sample --resume " + shell_arg(out) + " -q --threads 2");
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ++resumed;
    }
    // Killed after it finished (the run was faster than the delay): complete either way.
    expect_same_run(whole, out);
  }
  std::cerr << "[ info     ] " << resumed << " of " << kills << " killed runs resumed from a checkpoint\n";
}

TEST_F(ResumeCli, ADamagedCheckpointIsOneLine) {
  const std::string out = dir_.file("run");
  auto r = run_shell("AGLD_TEST_KILL_AFTER_CHECKPOINT=1 " + shell_arg(AGLD_BINARY) + " " + args(out, 1) +
                     " --checkpoint-every 1e-9");
  ASSERT_EQ(list_dir(out), std::vector<std::string>{"checkpoint"});
  std::string bytes = read_file(out + "/checkpoint");
  const std::string good = bytes;
  bytes[bytes.size() / 2] ^= 1;
  write_file(out + "/checkpoint", bytes);
  r = run_agld("sample --resume " + shell_arg(out) + " -q");
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("checksum does not match"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  write_file(out + "/checkpoint", good.substr(0, good.size() - 100));
  r = run_agld("sample --resume " + shell_arg(out) + " -q");
  EXPECT_EQ(r.exit_code, 65);
  EXPECT_NE(r.err.find("truncated"), std::string::npos) << r.err;
  write_file(out + "/checkpoint", "");
  r = run_agld("sample --resume " + shell_arg(out) + " -q");
  EXPECT_EQ(r.exit_code, 65) << r.err;
  r = run_agld("sample --train " + shell_arg(store_) + " --out " + shell_arg(dir_.file("x")) + " --checkpoint-every 5q");
  EXPECT_EQ(r.exit_code, 64) << r.err;
  EXPECT_NE(r.err.find("expected a duration"), std::string::npos) << r.err;
}

}  // namespace resume_cli_test
}  // namespace
}  // namespace agld::test
