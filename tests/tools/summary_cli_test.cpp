// `agld summary DIR`: the stansummary-style table of a run (tracked coordinates' exact
// diagnostics from the draws files, the whole vector's from diagnostics.npy), its JSON, the
// same table at the end of `agld sample`, and one-line errors for directories that are not
// runs or whose files are cut short or malformed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "test_support.hpp"

namespace agld {
namespace {
namespace summary_cli_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using test::run_agld;
using test::shell_arg;
using test::TempDir;

// A short heart_scale run (tracked: theta.1-3 and the intercept), made once for the suite.
class SummaryCli : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    const std::string store = dir_->file("heart.agld");
    auto r = run_agld("convert " + shell_arg(test::heart_scale_svm()) + " -o " + shell_arg(store) + " -q");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    run_ = dir_->file("run");
    r = run_agld("sample --train " + shell_arg(store) + " --intercept --iterations 4000 --track 1-3,intercept --seed 5 --out " +
                 shell_arg(run_));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    sample_out_ = new std::string(r.out);
  }
  static void TearDownTestSuite() {
    delete dir_;
    delete sample_out_;
  }
  // A copy of the run directory to damage.
  std::string copy_run(const std::string& name) {
    const std::string to = scratch_.file(name);
    std::filesystem::copy(run_, to, std::filesystem::copy_options::recursive);
    return to;
  }
  static void expect_one_line_error(const test::RunResult& r, const std::string& what) {
    EXPECT_TRUE(r.exit_code == 65 || r.exit_code == 66) << what << ": exit " << r.exit_code << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << what << ": " << r.err;
    EXPECT_EQ(r.err.rfind("agld: ", 0), 0u) << what << ": " << r.err;
    EXPECT_EQ(r.err.find("internal"), std::string::npos) << what << ": " << r.err;
    EXPECT_TRUE(r.out.empty()) << what;
  }
  static TempDir* dir_;
  static std::string run_;
  static std::string* sample_out_;
  TempDir scratch_;
};
TempDir* SummaryCli::dir_ = nullptr;
std::string SummaryCli::run_;
std::string* SummaryCli::sample_out_ = nullptr;

std::vector<double> read_npy(const std::string& path) {
  const std::string b = test::read_file(path);
  const size_t hl = static_cast<unsigned char>(b.at(8)) | (static_cast<unsigned char>(b.at(9)) << 8);
  std::vector<double> v((b.size() - 10 - hl) / 8);
  std::memcpy(v.data(), b.data() + 10 + hl, v.size() * 8);
  return v;
}

TEST_F(SummaryCli, JsonAgreesWithThePosteriorAndTheConfiguration) {
  auto r = run_agld("summary " + shell_arg(run_) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = nlohmann::json::parse(r.out);
  const auto cfg = nlohmann::json::parse(test::read_file(run_ + "/config.json"));
  EXPECT_EQ(s["chains"], 4);
  EXPECT_EQ(s["draws_per_chain"], cfg["result"]["draws"]);
  EXPECT_EQ(s["method"], "ptu-ca");
  ASSERT_EQ(s["columns"].size(), 5u);
  const std::vector<std::string> names = {"lp__", "theta.1", "theta.2", "theta.3", "intercept"};
  const std::vector<size_t> coords = {0, 0, 1, 2, 13};
  const std::vector<double> post = read_npy(run_ + "/posterior.npy");  // (14, 2): mean, sd
  ASSERT_EQ(post.size(), 28u);
  for (size_t t = 0; t < names.size(); ++t) {
    const auto& c = s["columns"][t];
    EXPECT_EQ(c["name"], names[t]);
    for (const char* k : {"mean", "mcse", "sd", "q5", "q50", "q95", "ess_bulk", "ess_tail", "rhat"}) {
      ASSERT_TRUE(c[k].is_number()) << names[t] << " " << k;
    }
    EXPECT_LT(c["q5"].get<double>(), c["q50"].get<double>());
    EXPECT_LT(c["q50"].get<double>(), c["q95"].get<double>());
    EXPECT_GT(c["ess_bulk"].get<double>(), 0.0);
    EXPECT_GE(c["rhat"].get<double>(), 0.99);
    if (t == 0) continue;
    // The draws files hold the kept states that posterior.npy averages (9 significant digits).
    const double mean = post[2 * coords[t]], sd = post[2 * coords[t] + 1];
    EXPECT_NEAR(c["mean"].get<double>(), mean, 1e-7 * (std::abs(mean) + sd)) << names[t];
    EXPECT_NEAR(c["sd"].get<double>(), sd, 1e-6 * sd) << names[t];
  }
  const auto& all = s["all_coordinates"];
  EXPECT_EQ(all["coordinates"], 14);
  EXPECT_EQ(all["with_rhat"], 14);
  EXPECT_EQ(all["sampled"], false);
  EXPECT_NEAR(all["max_rhat"].get<double>(), cfg["diagnostics"]["max_rhat"].get<double>(), 1e-12);
  EXPECT_EQ(all["rhat_above_1_01"], cfg["diagnostics"]["rhat_above_1_01"]);
  EXPECT_EQ(s["mixed"], cfg["diagnostics"]["mixed"]);
  // By the rows a feature is in: as the run wrote it, and adding up to the whole vector's.
  EXPECT_EQ(s["by_rows"], cfg["diagnostics"]["by_rows"]);
  uint64_t coordinates = 0, with_rhat = 0, above = 0;
  for (const auto& c : s["by_rows"]) {
    coordinates += c["coordinates"].get<uint64_t>();
    with_rhat += c["with_rhat"].get<uint64_t>();
    above += c["rhat_above_1_01"].get<uint64_t>();
  }
  EXPECT_EQ(coordinates, 14 - s["prior_exact"].get<uint64_t>());
  EXPECT_EQ(with_rhat, all["with_rhat"].get<uint64_t>());
  EXPECT_EQ(above, all["rhat_above_1_01"].get<uint64_t>());
  ASSERT_GE(s["by_rows"].size(), 2u);
  EXPECT_TRUE(s["by_rows"].back()["intercept"].get<bool>());
  EXPECT_EQ(s["by_rows"].back()["rows"], nlohmann::json::array({270, 270}));
}

TEST_F(SummaryCli, SamplePrintsTheSameTable) {
  auto r = run_agld("summary " + shell_arg(run_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const char* h : {"Mean", "MCSE", "StdDev", "5%", "50%", "95%", "ESS_bulk", "ESS_tail", "R_hat", "lp__",
                        "theta.3", "intercept", "Every coordinate", "By the training rows a feature is in"}) {
    EXPECT_NE(r.out.find(h), std::string::npos) << h << "\n" << r.out;
  }
  EXPECT_NE(sample_out_->find(r.out), std::string::npos) << "sample printed:\n" << *sample_out_ << "\nsummary:\n" << r.out;
}

// A linear run keeps Rao-Blackwellized moments: the summary says how many of posterior.npy's
// means and sds came from them, as config.json does; `agld sample` prints the same. A logistic
// run has none (JSON null, no line).
TEST_F(SummaryCli, SaysWhichMomentsAreRaoBlackwellized) {
  const std::string run = scratch_.file("linear");
  auto r = run_agld("sample --train " + shell_arg(dir_->file("heart.agld")) +
                    " --model linear --intercept --iterations 4000 --seed 5 --out " + shell_arg(run));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string sample_out = r.out;
  const auto cfg = nlohmann::json::parse(test::read_file(run + "/config.json"));
  ASSERT_TRUE(cfg["rao_blackwell"]["on"].get<bool>()) << cfg["rao_blackwell"].dump();
  const auto& rb = cfg["result"]["rao_blackwell"];
  r = run_agld("summary " + shell_arg(run) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto s = nlohmann::json::parse(r.out);
  EXPECT_EQ(s["rao_blackwell"]["conditional_draws"], rb["conditional_draws"]);
  EXPECT_EQ(s["rao_blackwell"]["means"], rb["means"]);
  EXPECT_EQ(s["rao_blackwell"]["sds"], rb["sds"]);
  // The verdict the run wrote is the one the summary reads back from diagnostics.npy.
  EXPECT_EQ(s["all_coordinates"]["with_rhat"], cfg["diagnostics"]["rhat_finite"]);
  EXPECT_EQ(s["all_coordinates"]["rhat_above_1_01"], cfg["diagnostics"]["rhat_above_1_01"]);
  EXPECT_EQ(s["mixed"], cfg["diagnostics"]["mixed"]);
  r = run_agld("summary " + shell_arg(run));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string line = "posterior.npy: " + rb["means"].dump() + " means and " + rb["sds"].dump() + " sds of 14";
  EXPECT_NE(r.out.find(line), std::string::npos) << r.out;
  EXPECT_NE(sample_out.find(r.out), std::string::npos) << "sample printed:\n" << sample_out << "\nsummary:\n" << r.out;
  r = run_agld("summary " + shell_arg(run_) + " --json");
  EXPECT_TRUE(nlohmann::json::parse(r.out)["rao_blackwell"].is_null());
  r = run_agld("summary " + shell_arg(run_));
  EXPECT_EQ(r.out.find("posterior.npy:"), std::string::npos) << r.out;
}

// A run whose diagnostics cover a seeded sample (a budget too small for all) says so.
TEST_F(SummaryCli, SaysWhenTheDiagnosticsAreASample) {
  const std::string dir = copy_run("sampled");
  auto cfg = nlohmann::json::parse(test::read_file(dir + "/config.json"));
  cfg["diagnostics"]["coordinates"] = "the tracked coordinates and a seeded uniform sample of 5 of the 14";
  test::write_file(dir + "/config.json", cfg.dump(2));
  auto r = run_agld("summary " + shell_arg(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a seeded sample"), std::string::npos) << r.out;
  r = run_agld("summary " + shell_arg(dir) + " --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out)["all_coordinates"]["sampled"], true);
}

TEST_F(SummaryCli, NotARunDirectory) {
  expect_one_line_error(run_agld("summary " + shell_arg(scratch_.file("missing"))), "missing");
  std::filesystem::create_directory(scratch_.file("empty"));
  auto r = run_agld("summary " + shell_arg(scratch_.file("empty")));
  expect_one_line_error(r, "empty");
  EXPECT_NE(r.err.find("not an agld run directory"), std::string::npos) << r.err;
  const std::string other = copy_run("other");
  test::write_file(other + "/config.json", "{\"model\": \"logistic\"}\n");
  expect_one_line_error(run_agld("summary " + shell_arg(other)), "a foreign config.json");
  // Numbers that do not fit the files: a clear error, not an allocation's failure.
  const std::string huge = copy_run("huge");
  auto big = nlohmann::json::parse(test::read_file(huge + "/config.json"));
  big["result"]["draws"] = uint64_t{1} << 60;
  test::write_file(huge + "/config.json", big.dump());
  r = run_agld("summary " + shell_arg(huge));
  expect_one_line_error(r, "a config.json with 2^60 draws");
  EXPECT_NE(r.err.find("cut short"), std::string::npos) << r.err;
  big["result"]["draws"] = "many";
  test::write_file(huge + "/config.json", big.dump());
  expect_one_line_error(run_agld("summary " + shell_arg(huge)), "draws not a number");
  std::filesystem::remove(copy_run("nodraws") + "/draws_3.csv");
  r = run_agld("summary " + shell_arg(scratch_.file("nodraws")));
  expect_one_line_error(r, "no draws_3.csv");
  EXPECT_NE(r.err.find("draws_3.csv"), std::string::npos) << r.err;
}

// Every file of the run cut at the start, after a byte, in the middle and just short of its end.
TEST_F(SummaryCli, FilesCutShortAreOneLineErrors) {
  int n = 0;
  for (const char* name : {"config.json", "draws_1.csv", "draws_4.csv", "posterior.npy", "diagnostics.npy"}) {
    const uint64_t size = std::filesystem::file_size(run_ + "/" + name);
    const uint64_t last = size - (std::string(name) == "config.json" ? 2 : 1);  // its last '\n' is optional
    for (uint64_t cut : {uint64_t{0}, uint64_t{1}, size / 2, last}) {
      const std::string dir = copy_run("cut" + std::to_string(n++));
      std::filesystem::resize_file(dir + "/" + name, cut);
      const auto r = run_agld("summary " + shell_arg(dir));
      expect_one_line_error(r, std::string(name) + " cut at " + std::to_string(cut));
      EXPECT_NE(r.err.find(name), std::string::npos) << r.err;
    }
  }
}

TEST_F(SummaryCli, AMalformedDrawNamesItsLine) {
  const std::string dir = copy_run("bad");
  std::string text = test::read_file(dir + "/draws_2.csv");
  const size_t header = text.find("lp__,");
  const size_t line3 = text.find('\n', text.find('\n', text.find('\n', header) + 1) + 1) + 1;
  text.insert(text.begin() + static_cast<std::ptrdiff_t>(line3), 'x');
  test::write_file(dir + "/draws_2.csv", text);
  const auto r = run_agld("summary " + shell_arg(dir));
  expect_one_line_error(r, "a malformed number");
  EXPECT_NE(r.err.find("draws_2.csv, line "), std::string::npos) << r.err;
}

}  // namespace summary_cli_test
}  // namespace
}  // namespace agld
