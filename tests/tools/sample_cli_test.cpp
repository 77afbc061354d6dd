// `agld sample` end to end: heart_scale against Stan through the command line, the run
// directory's files, the summary, the errors, and a graceful stop on SIGINT.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_support.hpp"

namespace agld {
namespace {
namespace sample_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::run_agld;
using test::TempDir;

using test::shell_arg;
const std::string kHeart = test::heart_scale_svm();

// posterior.npy as (rows, cols, data), from its header.
struct Npy {
  size_t rows = 0, cols = 0;
  std::vector<double> data;
};
Npy read_npy(const std::string& path) {
  const std::string b = test::read_file(path);
  Npy n;
  const size_t hl = static_cast<unsigned char>(b.at(8)) | (static_cast<unsigned char>(b.at(9)) << 8);
  const std::string header = b.substr(10, hl);
  const size_t s = header.find("'shape': (");
  std::sscanf(header.c_str() + s, "'shape': (%zu, %zu)", &n.rows, &n.cols);
  n.data.resize((b.size() - 10 - hl) / 8);
  std::memcpy(n.data.data(), b.data() + 10 + hl, n.data.size() * 8);
  return n;
}

std::vector<std::vector<std::string>> read_csv(const std::string& path, bool skip_comments) {
  std::vector<std::vector<std::string>> rows;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (skip_comments && !line.empty() && line[0] == '#') continue;
    std::vector<std::string> cells;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) cells.push_back(cell);
    rows.push_back(cells);
  }
  return rows;
}

class SampleCli : public ::testing::Test {
 protected:
  void SetUp() override {
    store_ = dir_.file("heart.agld");
    auto r = run_agld("convert " + shell_arg(kHeart) + " -o " + shell_arg(store_) + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }
  TempDir dir_;
  std::string store_;
};

TEST_F(SampleCli, HeartScaleMatchesStanAndWritesTheRunDirectory) {
  const std::string out = dir_.file("run");
  auto r = run_agld("sample --train " + shell_arg(store_) + " --test " + shell_arg(store_) +
                    " --model logistic --method tmu-ca --precondition none --step 3e-3 --batch 27 --iterations 250000"
                    " --burn-in 25000 --thin 10 --seed 41 --out " + shell_arg(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("theta.1"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("test: average log-likelihood"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("13 of 13 with R-hat"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(", 0 above 1.01"), std::string::npos) << r.out;  // long enough: mixed
  EXPECT_NE(r.out.find("No R-hat above 1.01"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("have not mixed"), std::string::npos) << r.err;
  EXPECT_EQ(test::list_dir(out), (std::vector<std::string>{"config.json", "diagnostics.npy", "draws_1.csv", "draws_2.csv",
                                                           "draws_3.csv", "draws_4.csv", "metrics.csv", "posterior.npy"}));

  // posterior.npy against Stan.
  const Npy npy = read_npy(out + "/posterior.npy");
  ASSERT_EQ(npy.rows, 13u);
  ASSERT_EQ(npy.cols, 2u);
  const auto ref = read_csv(std::string(AGLD_SOURCE_DIR) + "/datasets/heart_scale.ref.csv", false);
  ASSERT_EQ(ref.size(), 14u);
  for (size_t j = 0; j < 13; ++j) {
    const double mean = std::stod(ref[j + 1][1]), sd = std::stod(ref[j + 1][2]);
    EXPECT_NEAR(npy.data[2 * j], mean, 0.1 * sd) << "coordinate " << j + 1;
    EXPECT_NEAR(npy.data[2 * j + 1] / sd, 1.0, 0.1) << "coordinate " << j + 1;
  }

  // diagnostics.npy: R-hat, ESS and MCSE of every coordinate.
  const Npy diag = read_npy(out + "/diagnostics.npy");
  ASSERT_EQ(diag.rows, 13u);
  ASSERT_EQ(diag.cols, 3u);
  for (size_t j = 0; j < 13; ++j) {
    EXPECT_LT(diag.data[3 * j], 1.01) << "coordinate " << j + 1;
    EXPECT_GT(diag.data[3 * j + 1], 1000) << "coordinate " << j + 1;
    EXPECT_NEAR(diag.data[3 * j + 2], npy.data[2 * j + 1] / std::sqrt(diag.data[3 * j + 1]), 1e-3 * npy.data[2 * j + 1]);
  }

  // draws_K.csv: a Stan CSV a chain with lp__ and the default tracked coordinates (the first 10).
  std::vector<std::string> header = {"lp__"};
  for (int j = 1; j <= 10; ++j) header.push_back("theta." + std::to_string(j));
  for (int c = 1; c <= 4; ++c) {
    const std::string file = out + "/draws_" + std::to_string(c) + ".csv";
    const auto draws = read_csv(file, true);
    ASSERT_FALSE(draws.empty());
    EXPECT_EQ(draws[0], header);
    EXPECT_EQ(draws.size(), 1 + 22500u);
    EXPECT_LT(std::stod(draws[1][0]), 0.0);  // lp__ = -U < 0 for the logistic model
    EXPECT_EQ(test::read_file(file).substr(0, 2), "# ");
  }

  // metrics.csv: 100 evaluations, the test log-likelihood of the predictive, pooled and by chain.
  const auto metrics = read_csv(out + "/metrics.csv", false);
  ASSERT_EQ(metrics.size(), 101u);
  EXPECT_EQ(metrics[0][0], "iteration");
  EXPECT_EQ(metrics[0][7], "test_loglik");
  EXPECT_EQ(metrics[0][10], "test_loglik_1");
  EXPECT_EQ(metrics[0][13], "test_loglik_4");
  const auto& last = metrics.back();
  EXPECT_EQ(last[0], "250000");
  EXPECT_EQ(last[5], "0");  // after burn-in
  const double ll = std::stod(last[7]), acc = std::stod(last[8]);
  EXPECT_LT(ll, -0.2);
  EXPECT_GT(ll, -0.6);  // a fit far better than chance (log 0.5 = -0.69)
  EXPECT_GT(acc, 0.75);
  EXPECT_EQ(last[9], "NaN");  // no MSE for a binary model
  for (int c = 10; c < 14; ++c) EXPECT_NEAR(std::stod(last[c]), ll, 0.01);  // each chain alone: about the same
  EXPECT_GT(std::stod(last[3]), 250000.0 * 27 / 270);  // passes count refreshes too

  // config.json: the resolved options and the store's identity.
  const auto cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["snapshot"], "tmu");
  EXPECT_EQ(cfg["access"], "ca");
  EXPECT_EQ(cfg["iterations"], 250000);
  EXPECT_EQ(cfg["chains"], 4);
  EXPECT_EQ(cfg["draws_files"], nlohmann::json({"draws_1.csv", "draws_2.csv", "draws_3.csv", "draws_4.csv"}));
  EXPECT_EQ(cfg["refresh"], 10);
  EXPECT_EQ(cfg["train"]["rows"], 270);
  EXPECT_TRUE(cfg.contains("agld_version"));
  EXPECT_EQ(cfg["result"]["draws"], 22500);
  EXPECT_EQ(cfg["result"]["stopped_early"], false);
  EXPECT_EQ(cfg["diagnostics"]["coordinates"], "all");
  EXPECT_EQ(cfg["diagnostics"]["mixed"], true);
  EXPECT_LT(cfg["diagnostics"]["max_rhat"].get<double>(), 1.01);
}

TEST_F(SampleCli, DefaultsRunWithoutAnyTuning) {
  const std::string out = dir_.file("run");
  auto r = run_agld("sample --train " + shell_arg(store_) + " --out " + shell_arg(out) + " --intercept --track 1-3,intercept");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto draws = read_csv(out + "/draws_1.csv", true);
  EXPECT_EQ(draws[0], (std::vector<std::string>{"lp__", "theta.1", "theta.2", "theta.3", "intercept"}));
  const auto cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["method"], "ptu-ca");
  EXPECT_GT(cfg["step"].get<double>(), 1e-4);  // neither diverges nor crawls
  EXPECT_EQ(cfg["dim"], 14);
  const Npy npy = read_npy(out + "/posterior.npy");
  EXPECT_EQ(npy.rows, 14u);
  for (double v : npy.data) EXPECT_TRUE(std::isfinite(v));
}

// A run until mixed that goes on (an ESS target no run meets): the run directory holds the last
// stage alone, consistent: its draws files (their heads say which stage), config.json's length
// and stages, every evaluation in metrics.csv; agld summary reads it.
TEST_F(SampleCli, UntilMixedKeepsTheLastStageInTheRunDirectory) {
  const std::string out = dir_.file("run");
  auto r = run_agld("sample --train " + shell_arg(store_) + " --out " + shell_arg(out) +
                    " --intercept --until-mixed on --iterations 400 --target-ess 1e9 --seed 3");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("going on to 800 (stage 1"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("past the cap"), std::string::npos) << r.err;
  const auto cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  const uint64_t stages = cfg["result"]["stages"].get<uint64_t>();
  ASSERT_GE(stages, 2u);
  EXPECT_EQ(cfg["result"]["stage_verdicts"].size(), stages);
  EXPECT_EQ(cfg["iterations"].get<uint64_t>(), uint64_t{400} << (stages - 1));
  EXPECT_EQ(cfg["burn_in"].get<uint64_t>(), uint64_t{200} << (stages - 1));
  EXPECT_TRUE(cfg["until_mixed"]["on"].get<bool>());
  const uint64_t draws = cfg["result"]["draws"].get<uint64_t>();
  EXPECT_EQ(draws, cfg["draws_per_chain"].get<uint64_t>());
  for (int c = 1; c <= 4; ++c) {
    const std::string path = out + "/draws_" + std::to_string(c) + ".csv";
    EXPECT_EQ(read_csv(path, true).size(), draws + 1) << path;  // the header and the last stage's draws
    EXPECT_NE(test::read_file(path).find("; stage " + std::to_string(stages - 1) + "\n"), std::string::npos) << path;
  }
  const auto metrics = read_csv(out + "/metrics.csv", false);
  EXPECT_EQ(metrics.back()[0], cfg["iterations"].dump());
  auto summary = run_agld("summary " + shell_arg(out));
  EXPECT_EQ(summary.exit_code, 0) << summary.err;
  EXPECT_NE(summary.out.find("Until mixed: " + std::to_string(stages) + " stages, the draws are the last one's"),
            std::string::npos) << summary.out;
}

// What a user gets with no option but the model: heart_scale (270 rows) against Stan. A small
// store's default length reads 10^7 rows a chain; every mean within 0.1 sd of Stan's (or 4
// Monte Carlo errors of the two, if that is wider), every sd within 10 %, and the run mixed.
TEST_F(SampleCli, HeartScaleWithDefaultsOnlyMatchesStan) {
  const std::string out = dir_.file("defaults");
  const uint64_t seed = test::test_seed(3);
  std::cout << "seed " << seed << "\n";
  auto r = run_agld("sample --train " + shell_arg(store_) + " --model logistic --seed " + std::to_string(seed) +
                    " --out " + shell_arg(out));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("No R-hat above 1.01"), std::string::npos) << r.out;
  const Npy npy = read_npy(out + "/posterior.npy"), diag = read_npy(out + "/diagnostics.npy");
  const auto ref = read_csv(std::string(AGLD_SOURCE_DIR) + "/datasets/heart_scale.ref.csv", false);
  ASSERT_EQ(npy.rows, 13u);
  ASSERT_EQ(ref.size(), 14u);
  double worst = 0;
  for (size_t j = 0; j < 13; ++j) {
    const double mean = std::stod(ref[j + 1][1]), sd = std::stod(ref[j + 1][2]), stan_mcse = std::stod(ref[j + 1][3]);
    const double mcse = diag.data[3 * j + 2];
    const double tol = std::max(0.1 * sd, 4 * std::hypot(mcse, stan_mcse));
    worst = std::max(worst, std::abs(npy.data[2 * j] - mean) / sd);
    EXPECT_NEAR(npy.data[2 * j], mean, tol) << "coordinate " << j + 1 << " (ESS " << diag.data[3 * j + 1] << ")";
    EXPECT_NEAR(npy.data[2 * j + 1] / sd, 1.0, 0.1) << "coordinate " << j + 1;
    EXPECT_LT(diag.data[3 * j], 1.01) << "coordinate " << j + 1;
  }
  std::cout << "largest mean error " << worst << " Stan sds\n";
}

TEST_F(SampleCli, BadOptionsAreOneLineUsageErrors) {
  const std::string base = "sample --train " + shell_arg(store_) + " --out " + shell_arg(dir_.file("bad"));
  struct Case {
    std::string args, needle;
  };
  for (const Case& c : std::vector<Case>{{" --method tmu-xx", "unknown access order 'xx'"},
                                         {" --method zzz-ca", "unknown snapshot strategy 'zzz'"},
                                         {" --model poisson", "unknown --model"},
                                         {" --memory 1M", "too small"},
                                         {" --batch 0", "--batch"},
                                         {" --track 99", "--track"},
                                         {" --step 2 --precondition none", "below --prior-var"},
                                         {" --step 1e9 --metric diag", "--step times the largest M_j"},
                                         {" --step 2", "the dense block's step is at most 1"},  // auto, the default
                                         {" --burn-in 100 --iterations 50", "--burn-in"},
                                         {" --until-mixed maybe", "--until-mixed must be auto, on or off"},
                                         {" --target-rhat 0.9", "--target-rhat must be above 1"},
                                         {" --max-passes 0", "--max-passes must be positive"},
                                         {" --rao-blackwell always", "unknown --rao-blackwell 'always' (known: auto, off)"}}) {
    auto r = run_agld(base + c.args);
    EXPECT_EQ(r.exit_code, 64) << c.args << ": " << r.err;
    EXPECT_NE(r.err.find(c.needle), std::string::npos) << c.args << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(dir_.file("bad")));  // options are checked first
}

TEST_F(SampleCli, LogisticNeedsBinaryLabels) {
  const std::string text = dir_.file("real.svm"), real = dir_.file("real.agld");
  test::write_file(text, "0.5 1:1\n1.5 2:1\n");
  ASSERT_EQ(run_agld("convert " + shell_arg(text) + " -o " + shell_arg(real) + " -q --task regression").exit_code, 0);
  auto r = run_agld("sample --train " + shell_arg(real) + " --out " + shell_arg(dir_.file("r")));
  EXPECT_EQ(r.exit_code, 64);
  EXPECT_NE(r.err.find("binary labels"), std::string::npos) << r.err;
  EXPECT_EQ(run_agld("sample --model linear --iterations 100 -q --train " + shell_arg(real) + " --out " + shell_arg(dir_.file("r"))).exit_code, 0);
}

TEST_F(SampleCli, DivergenceSuggestsASmallerStepAndLeavesNoFiles) {
  const std::string out = dir_.file("div");
  auto r = run_agld("sample --train " + shell_arg(store_) + " --model linear --step 0.5 --iterations 100000 --method sgld --out " + shell_arg(out));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("diverged"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("smaller --step"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(out));  // the directory the run made goes too
}

TEST_F(SampleCli, SigintStopsTheRunWithCompleteOutputs) {
  const std::string out = dir_.file("stop");
  // The signal goes three seconds after the checkpoint at the end of burn-in appears
  // (iteration 10; the first kept state is at 1,010), not after the start: a loaded machine or
  // a sanitizer build can take longer than that to start (it did: no state kept), and the ASan
  // build on a loaded machine took more than a second for those 1,000 iterations.
  auto r = test::run_shell(std::string(AGLD_BINARY) + " sample --train " + shell_arg(store_) +
                           " --iterations 2000000000 --burn-in 10 --thin 1000 --out " + shell_arg(out) +
                           " -q & pid=$!; for i in $(seq 600); do [ -e " + shell_arg(out + "/checkpoint") +
                           " ] && break; sleep 0.1; done; sleep 3; kill -INT $pid; wait $pid; echo exit=$?");
  EXPECT_NE(r.out.find("exit=0"), std::string::npos) << r.out << r.err;
  const auto cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["result"]["stopped_early"], true);
  const uint64_t kept = cfg["result"]["draws"].get<uint64_t>();
  EXPECT_GT(kept, 0u);
  EXPECT_EQ(read_npy(out + "/posterior.npy").rows, 13u);
  EXPECT_EQ(read_npy(out + "/diagnostics.npy").rows, 13u);
  for (int c = 1; c <= 4; ++c) {  // every chain's file complete, with every kept state
    const std::string file = out + "/draws_" + std::to_string(c) + ".csv";
    EXPECT_EQ(read_csv(file, true).size(), 1 + kept) << file;
    EXPECT_NE(test::read_file(file).find("(stopped early)"), std::string::npos) << file;
  }
  r = run_agld("summary " + shell_arg(out));  // a run stopped early is a complete run
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("(stopped early)"), std::string::npos) << r.out;
}

}  // namespace sample_cli_test
}  // namespace
}  // namespace agld

namespace agld {
namespace {
namespace sample_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

TEST(SampleCliTimeLimit, StopsWithCompleteOutputsAndALastEvaluation) {
  TempDir dir;
  const std::string store = dir.file("heart.agld"), out = dir.file("run");
  ASSERT_EQ(run_agld("convert '" + kHeart + "' -o '" + store + "' -q").exit_code, 0);
  auto r = run_agld("sample --train '" + store + "' --test '" + store + "' --iterations 2000000000 --burn-in 10 --thin 1000 --time-limit 0.5 -q --out '" + out + "'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto cfg = nlohmann::json::parse(test::read_file(out + "/config.json"));
  EXPECT_EQ(cfg["result"]["stopped_early"], true);
  EXPECT_LT(cfg["result"]["seconds"].get<double>(), 5.0);
  const auto metrics = read_csv(out + "/metrics.csv", false);
  ASSERT_GE(metrics.size(), 2u);
  EXPECT_LT(std::stod(metrics.back()[7]), 0.0);  // the test log-likelihood where it stopped
}

}  // namespace sample_cli_test
}  // namespace
}  // namespace agld
