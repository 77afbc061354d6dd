// The option tables (include/agld/options.hpp): every option once, its JSON round trip, what a
// resumed run may change.
#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>

#include "agld/options.hpp"

namespace agld {
namespace {
namespace options_test {  // this file's names (unity batches: tests/CMakeLists.txt)

template <class O>
void expect_unique_keys(std::span<const OptionField<O>> fields) {
  std::set<std::string> keys;
  for (const OptionField<O>& f : fields) {
    EXPECT_TRUE(keys.insert(std::string(f.key)).second) << "key " << f.key << " twice";
    EXPECT_FALSE(f.help.empty()) << f.key << " has no help";
    EXPECT_EQ(f.key.find('-'), std::string_view::npos) << f.key << ": keys use underscores, flags dashes";
  }
}

TEST(OptionTables, KeysAreUniqueAndHaveHelp) {
  expect_unique_keys(sample_option_fields());
  expect_unique_keys(optimize_option_fields());
  EXPECT_EQ(option_flag("snapshot_batch"), "--snapshot-batch");
}

// Only the options that do not change the draws may be given anew to a resumed run.
// What changes no draw: the threads; and where the run stops: the time limit, the cap in passes.
TEST(OptionTables, OnlyThreadsAndTheRunsCapsAreResumable) {
  std::set<std::string> resumable;
  for (const auto& f : sample_option_fields()) {
    if (f.resumable) resumable.insert(std::string(f.key));
  }
  EXPECT_EQ(resumable, (std::set<std::string>{"threads", "time_limit", "max_passes"}));
}

// Every option set away from its default comes back from JSON as it was: the checkpoint's
// record of the options loses nothing.
TEST(OptionJson, EverySampleOptionRoundTrips) {
  SampleOptions o;
  o.model = "linear";
  o.noise_var = 2.5;
  o.prior_var = INFINITY;
  o.intercept = true;
  o.method = "tmu-rr-hmc2";
  o.chains = 3;
  o.chain_id = 7;
  o.share_batches = true;
  o.threads = 2;
  o.step = 1e-3;
  o.friction = 0.25;
  o.precondition = "none";
  o.metric = "m.npy";
  o.init = "i.npy";
  o.batch = 17;
  o.epochs = 1.5;
  o.iterations = 1000;
  o.burn_in = 100;
  o.thin = 3;
  o.refresh = 9;
  o.snapshot_batch = 34;
  o.time_limit = 60;
  o.until_mixed = "on";
  o.target_rhat = 1.05;
  o.target_ess = 100;
  o.max_passes = 200;
  o.evaluations = 5;
  o.memory = uint64_t{3} << 30;
  o.seed = 99;
  o.track = {0, 4, uint64_t{1} << 33};
  o.track_default = false;
  o.dense = true;
  o.rao_blackwell = "off";
  o.gibbs = "off";
  o.unseen = "off";
  o.noise_correction = "off";
  const std::string text = options_json(o);
  SampleOptions back;
  ASSERT_TRUE(options_from_json(text, &back).is_ok());
  EXPECT_EQ(options_json(back), text);
  EXPECT_TRUE(std::isinf(back.prior_var));
  EXPECT_EQ(back.method, o.method);
  EXPECT_EQ(back.track, o.track);
  EXPECT_EQ(back.memory, o.memory);
  // The defaults differ from every value above: each field was written and read.
  EXPECT_NE(options_json(SampleOptions{}), text);
  const std::string defaults = options_json(SampleOptions{});
  for (const auto& f : sample_option_fields()) {
    SampleOptions one;
    ASSERT_TRUE(options_from_json(text, &one).is_ok());
    std::visit([&](auto member) { one.*member = SampleOptions{}.*member; }, f.member);
    EXPECT_NE(options_json(one), text) << f.key << " is not read back";
  }
}

TEST(OptionJson, AbsentKeysKeepTheirDefaultsAndWrongTypesNameTheirKey) {
  SampleOptions o;
  ASSERT_TRUE(options_from_json(R"({"seed": 5})", &o).is_ok());
  EXPECT_EQ(o.seed, 5u);
  EXPECT_EQ(o.model, "logistic");
  EXPECT_FALSE(o.step.has_value());
  Status st = options_from_json(R"({"chains": -1})", &o);
  EXPECT_EQ(st.code(), Status::Code::kInvalidArgument);
  EXPECT_NE(st.message().find("chains"), std::string::npos) << st.message();
  st = options_from_json(R"({"step": "fast"})", &o);
  EXPECT_NE(st.message().find("step"), std::string::npos) << st.message();
  EXPECT_FALSE(options_from_json("[1, 2]", &o).is_ok());
  EXPECT_FALSE(options_from_json("{", &o).is_ok());
}

TEST(OptionJson, EveryOptimizeOptionRoundTrips) {
  OptimizeOptions o;
  o.model = "linear";
  o.noise_var = 3;
  o.prior_var = 0.5;
  o.intercept = true;
  o.precondition = "none";
  o.step = 0.1;
  o.batch = 12;
  o.access = "rr";
  o.epochs = 3;
  o.tol = 1e-3;
  o.memory = uint64_t{1} << 30;
  o.seed = 4;
  const std::string text = options_json(o);
  OptimizeOptions back;
  ASSERT_TRUE(options_from_json(text, &back).is_ok());
  EXPECT_EQ(options_json(back), text);
  for (const auto& f : optimize_option_fields()) {
    OptimizeOptions one = back;
    std::visit([&](auto member) { one.*member = OptimizeOptions{}.*member; }, f.member);
    EXPECT_NE(options_json(one), text) << f.key << " is not read back";
  }
}

}  // namespace options_test
}  // namespace
}  // namespace agld
