// `agld optimize` end to end: the output directory (mode.npy like posterior.npy, config.json),
// a line per epoch on stderr unless -q, the test metrics at the mode, and bad input as a
// one-line error with its sysexits code and no directory left behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace agld {
namespace {
namespace optimize_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::run_agld;
using test::shell_arg;
using test::TempDir;

// A float64 .npy as (rows, cols, data), from its header.
struct Npy {
  size_t rows = 0, cols = 0;
  std::vector<double> data;
};
Npy read_npy(const std::string& path) {
  const std::string b = test::read_file(path);
  Npy n;
  const size_t hl = static_cast<unsigned char>(b.at(8)) | (static_cast<unsigned char>(b.at(9)) << 8);
  const std::string header = b.substr(10, hl);
  EXPECT_NE(header.find("'descr': '<f8'"), std::string::npos) << header;
  const size_t s = header.find("'shape': (");
  std::sscanf(header.c_str() + s, "'shape': (%zu, %zu)", &n.rows, &n.cols);
  n.data.resize((b.size() - 10 - hl) / 8);
  std::memcpy(n.data.data(), b.data() + 10 + hl, n.data.size() * 8);
  return n;
}

class OptimizeCli : public ::testing::Test {
 protected:
  void SetUp() override {
    train_ = dir_.file("heart.agld");
    test_ = dir_.file("heart_test.agld");
    auto r = run_agld("convert " + shell_arg(test::heart_scale_svm()) + " -o " + shell_arg(train_) +
                      " -q --test-fraction 0.2 --test-output " + shell_arg(test_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  TempDir dir_;
  std::string train_, test_;
};

TEST_F(OptimizeCli, WritesTheModeAndConfig) {
  const std::string out = dir_.file("mode");
  auto r = run_agld("optimize --train " + shell_arg(train_) + " --test " + shell_arg(test_) +
                    " --model logistic --intercept --epochs 200 --out " + shell_arg(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(test::list_dir(out), (std::vector<std::string>{"config.json", "mode.npy"}));
  EXPECT_NE(r.err.find("epoch 0: "), std::string::npos) << r.err;  // a line per epoch
  EXPECT_NE(r.out.find("stopped by tolerance"), std::string::npos) << r.out;
  const nlohmann::json cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["command"], "optimize");
  EXPECT_EQ(cfg["model"], "logistic");
  EXPECT_EQ(cfg["precondition"], "diag");
  EXPECT_EQ(cfg["result"]["stop_reason"], "tolerance");
  EXPECT_LE(cfg["result"]["rel_grad_norm"].get<double>(), 1e-6);
  EXPECT_GT(cfg["result"]["passes"].get<double>(), 2.0);
  EXPECT_EQ(cfg["trace"].size(), cfg["result"]["epochs"].get<size_t>() + 1);
  const double ll = cfg["result"]["test"]["loglik"].get<double>(), acc = cfg["result"]["test"]["accuracy"].get<double>();
  EXPECT_TRUE(ll < 0 && ll > -0.7) << ll;  // better than the base rate's log 1/2
  EXPECT_TRUE(acc > 0.7 && acc <= 1) << acc;
  EXPECT_TRUE(cfg["result"]["test"]["mse"].is_null());
  // (d, 2): the mode and the conditional Laplace sd, the intercept last, as posterior.npy.
  const Npy m = read_npy(out + "/mode.npy");
  ASSERT_EQ(m.rows, 14u);
  ASSERT_EQ(m.cols, 2u);
  EXPECT_EQ(cfg["mode_npy"]["columns"], (nlohmann::json{"mode", "laplace_sd_conditional"}));
  for (size_t j = 0; j < m.rows; ++j) {
    EXPECT_TRUE(std::isfinite(m.data[2 * j])) << j;
    EXPECT_TRUE(m.data[2 * j + 1] > 0 && m.data[2 * j + 1] < 1) << j;  // below the prior's sd
  }
  // -q: no epoch lines and no summary.
  const std::string quiet = dir_.file("quiet");
  r = run_agld("optimize --train " + shell_arg(train_) + " --epochs 200 -q --out " + shell_arg(quiet));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_EQ(r.out, "");
}

TEST_F(OptimizeCli, NotConvergedIsAWarning) {
  const std::string out = dir_.file("short");
  auto r = run_agld("optimize --train " + shell_arg(train_) + " --epochs 1 -q --out " + shell_arg(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("not converged"), std::string::npos) << r.err;
  const nlohmann::json cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["result"]["stop_reason"], "epochs");
}

TEST_F(OptimizeCli, SigintStopsAtTheLastSnapshotWithCompleteOutputs) {
  const std::string out = dir_.file("stop");
  auto r = test::run_shell(std::string(AGLD_BINARY) + " optimize --train " + shell_arg(train_) +
                           " --batch 1 --tol 0 --epochs 1000000000 -q --out " + shell_arg(out) +
                           " & pid=$!; sleep 1; kill -INT $pid; wait $pid; echo exit=$?");
  EXPECT_NE(r.out.find("exit=0"), std::string::npos) << r.out << r.err;
  const nlohmann::json cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["result"]["stop_reason"], "stopped");
  EXPECT_EQ(read_npy(out + "/mode.npy").rows, 13u);
}

TEST_F(OptimizeCli, BadInputIsAOneLineErrorAndLeavesNoDirectory) {
  const std::string text = dir_.file("real.svm"), real = dir_.file("real.agld");
  test::write_file(text, "0.5 1:1\n1.5 2:1\n");
  ASSERT_EQ(run_agld("convert " + shell_arg(text) + " -o " + shell_arg(real) + " -q --task regression").exit_code, 0);
  const std::string out = dir_.file("bad/nested");
  struct Case {
    std::string args;
    int code;
    std::string needle;
  };
  const std::string train = " --train " + shell_arg(train_);
  for (const Case& c : std::vector<Case>{
           {train + " --precondition jacobi", 64, "unknown --precondition 'jacobi' (known: diag, none)"},
           {" --train " + shell_arg(real) + " --model logistic", 64, "binary labels"},
           {" --train " + shell_arg(dir_.file("missing.agld")), 66, "missing.agld"},
           {train + " --model poisson", 64, "unknown --model"},
           {train + " --access zz", 64, "unknown --access"},
           {train + " --memory 1M", 64, "too small"},
           {train + " --precondition none --step 5", 64, "below --prior-var"},
           {train + " --precondition none --step 0.9 --batch 1 --prior-var 10 --model linear", 64, "diverged in epoch"}}) {
    auto r = run_agld("optimize" + c.args + " -q --out " + shell_arg(out));  // -q: no epoch lines
    EXPECT_EQ(r.exit_code, c.code) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << c.args << ": " << r.err;
    EXPECT_FALSE(std::filesystem::exists(dir_.file("bad"))) << c.args;
  }
}

}  // namespace optimize_cli_test
}  // namespace
}  // namespace agld
