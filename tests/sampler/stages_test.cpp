// A run until mixed (docs/samplers.md, "Until mixed"): the stages' plan, the decision at a
// stage's end, and the run itself: it goes on while it has not mixed and the next stage fits
// the cap, keeps only the last stage's draws, and a run that mixes in its first stage is the
// run of one length, bit for bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <random>

#include "sampler/stages.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace stages_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::decide_stage;
using sampler::Stage;
using sampler::stage_of;
using sampler::StageCost;
using sampler::StageVerdict;

ResolvedSample first_stage() {
  ResolvedSample r;
  r.iterations = 1000;
  r.burn_in = 500;
  r.thin = 5;
  r.draws = 100;
  r.eval_every = 10;
  r.until_mixed = true;
  r.target_rhat = 1.01;
  r.target_ess = 400;
  return r;
}

TEST(Stages, DoubleTheLengthAndKeepTheSecondHalf) {
  const ResolvedSample r = first_stage();
  const Stage s0 = stage_of(r, 0);
  EXPECT_EQ(s0.iterations, 1000u);
  EXPECT_EQ(s0.burn_in, 500u);
  EXPECT_EQ(s0.draws, 100u);
  for (uint64_t s = 1; s <= 4; ++s) {
    const Stage st = stage_of(r, s);
    EXPECT_EQ(st.iterations, 1000u << s);
    EXPECT_EQ(st.burn_in, stage_of(r, s - 1).iterations) << "a stage keeps what follows the stage before";
    EXPECT_EQ(st.thin, 5u << s);
    EXPECT_EQ(st.draws, 100u) << "as many kept draws as the first stage (its memory)";
    EXPECT_EQ(st.eval_every, 10u << s);
  }
  // A given burn-in shorter than half: the later stages keep half, thinned to at most the
  // first stage's draws.
  ResolvedSample b = r;
  b.burn_in = 100;
  b.thin = 3;
  b.draws = 300;
  const Stage s1 = stage_of(b, 1);
  EXPECT_EQ(s1.burn_in, 1000u);
  EXPECT_LE(s1.draws, 300u);
  EXPECT_EQ(s1.draws, 1000u / s1.thin);
  EXPECT_EQ(sampler::staged(b, s1).length_rule.find("doubled 1 time until mixed") != std::string::npos, true);
}

StageVerdict verdict(double rhat, double ess) {
  StageVerdict v;
  v.add(rhat, ess, 1.01, 400, 0);
  v.add(1.001, 5000, 1.01, 400, 1);
  v.max_rhat_at = "theta.1";
  v.min_ess_at = "theta.1";
  return v;
}

TEST(Stages, StopWhereMixedOrWhereTheNextStageWouldPassACap) {
  const ResolvedSample r = first_stage();
  const Stage s0 = stage_of(r, 0);
  StageCost c;
  c.passes = 20;
  c.setup_passes = 0.5;
  c.seconds = 100;
  c.max_passes = 80;
  auto d = decide_stage(r, s0, verdict(1.005, 450), c);
  EXPECT_TRUE(d.mixed);
  EXPECT_FALSE(d.go_on);
  d = decide_stage(r, s0, verdict(1.02, 450), c);  // an R-hat above the target
  EXPECT_FALSE(d.mixed);
  EXPECT_TRUE(d.go_on) << d.reason;
  d = decide_stage(r, s0, verdict(1.005, 399), c);  // an ESS below it
  EXPECT_TRUE(d.go_on) << d.reason;
  d = decide_stage(r, s0, StageVerdict{}, c);  // no R-hat at all: not mixed
  EXPECT_FALSE(d.mixed);
  c.passes = 40.3;  // the next stage would read 0.5 + 2 x 39.8 = 80.1 passes
  d = decide_stage(r, s0, verdict(1.02, 450), c);
  EXPECT_FALSE(d.go_on);
  EXPECT_NE(d.reason.find("past the cap of 80.0"), std::string::npos) << d.reason;
  c.passes = 20;
  c.time_limit = 199;  // the next stage would take the sampling to about 200 s
  d = decide_stage(r, s0, verdict(1.02, 450), c);
  EXPECT_FALSE(d.go_on);
  EXPECT_NE(d.reason.find("--time-limit"), std::string::npos) << d.reason;
  c.time_limit.reset();
  c.max_passes = 0;  // no cap in passes: the stages' own limit
  d = decide_stage(r, stage_of(r, sampler::kMaxStage), verdict(1.02, 450), c);
  EXPECT_FALSE(d.go_on) << d.reason;
  EXPECT_TRUE(decide_stage(r, stage_of(r, sampler::kMaxStage - 1), verdict(1.02, 450), c).go_on);
}

// Keeps what a run directory keeps: each chain's draws since the last stage began, and every
// evaluation.
class StageRecorder final : public SampleObserver {
 public:
  Status on_start(const ResolvedSample& run) override {
    starts.push_back(run);
    return Status::ok();
  }
  Status on_stage(const ResolvedSample& run) override {
    stages.push_back(run);
    draws.clear();
    return Status::ok();
  }
  Status on_draw(const DrawRecord& d) override {
    draws[d.chain].push_back(d.iteration);
    return Status::ok();
  }
  Status on_eval(const EvalRecord& e) override {
    evals.push_back(e.iteration);
    return Status::ok();
  }
  std::vector<ResolvedSample> starts, stages;
  std::map<uint64_t, std::vector<uint64_t>> draws;
  std::vector<uint64_t> evals;
};

SparseRows rows_of(uint64_t seed, size_t n, uint32_t d) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  SparseRows rows;
  for (size_t r = 0; r < n; ++r) {
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (uint32_t j = 0; j < d; ++j) {
      if (rng() % 3 == 0) continue;
      idx.push_back(j);
      val.push_back(static_cast<float>(n01(rng)));
    }
    rows.add_row(n01(rng) > 0 ? 1.0 : -1.0, idx, val);
  }
  return rows;
}

SampleOptions options() {
  SampleOptions o;
  o.seed = 11;
  o.chains = 3;
  o.batch = 50;
  o.iterations = 240;
  o.evaluations = 8;
  o.intercept = true;
  o.memory = uint64_t{512} << 20;
  o.until_mixed = "on";
  return o;
}

TEST(UntilMixed, GoesOnToTheCapAndKeepsOnlyTheLastStage) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(5), 400, 12), 12, true);
  SampleOptions o = options();
  o.until_mixed = "off";
  StageRecorder one;
  SampleResult first;
  ASSERT_TRUE(sample(*store, nullptr, o, one, &first).is_ok());
  const double passes = first.last_eval->passes;
  // An ESS no run reaches: the run goes on while the next stage fits 4.5 times the first's
  // passes (stages of 1, 2 and 4 times its iterations), then stops, not mixed.
  o.until_mixed = "on";
  o.target_ess = 1e12;
  o.max_passes = 4.5 * passes;
  StageRecorder rec;
  SampleResult r;
  const Status st = sample(*store, nullptr, o, rec, &r);
  ASSERT_TRUE(st.is_ok()) << st.message();
  std::cout << "first stage " << passes << " passes; " << r.stop_reason << std::endl;
  ASSERT_EQ(r.run.stage, 2u);
  ASSERT_EQ(rec.stages.size(), 2u);
  EXPECT_EQ(r.stage_verdicts.size(), 3u);
  EXPECT_NE(r.stop_reason.find("past the cap"), std::string::npos);
  EXPECT_EQ(r.run.iterations, 4 * first.run.iterations);
  EXPECT_EQ(r.run.burn_in, 2 * first.run.iterations);
  EXPECT_EQ(rec.stages[0].burn_in, first.run.iterations);
  EXPECT_EQ(rec.stages[1].iterations, r.run.iterations);
  // The draws: only the last stage's, each chain the result's count, all after its burn-in.
  ASSERT_EQ(rec.draws.size(), 3u);
  for (const auto& [chain, its] : rec.draws) {
    EXPECT_EQ(its.size(), r.draws) << "chain " << chain;
    EXPECT_GE(r.draws, first.draws - 1);
    for (uint64_t it : its) {
      EXPECT_GT(it, r.run.burn_in);
      EXPECT_LE(it, r.run.iterations);
      EXPECT_EQ((it - r.run.burn_in) % r.run.thin, 0u);
    }
  }
  // The evaluations go on over every stage, in order, the last at the last iteration.
  ASSERT_FALSE(rec.evals.empty());
  EXPECT_TRUE(std::is_sorted(rec.evals.begin(), rec.evals.end()));
  EXPECT_EQ(std::adjacent_find(rec.evals.begin(), rec.evals.end()), rec.evals.end());
  EXPECT_EQ(rec.evals.back(), r.run.iterations);
  EXPECT_GT(r.last_eval->passes, 3 * passes);
  EXPECT_LE(r.last_eval->passes, 4.5 * passes);
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(double)) == 0);
}

TEST(UntilMixed, MixedInItsFirstStageIsTheRunOfOneLength) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(6), 400, 12), 12, true);
  SampleOptions o = options();
  o.target_rhat = 100;  // targets every run meets
  o.target_ess = 0;
  StageRecorder rec;
  SampleResult staged;
  ASSERT_TRUE(sample(*store, nullptr, o, rec, &staged).is_ok());
  EXPECT_EQ(staged.run.stage, 0u);
  EXPECT_TRUE(rec.stages.empty());
  EXPECT_NE(staged.stop_reason.find("mixed"), std::string::npos) << staged.stop_reason;
  o.until_mixed = "off";
  StageRecorder one;
  SampleResult fixed;
  ASSERT_TRUE(sample(*store, nullptr, o, one, &fixed).is_ok());
  EXPECT_TRUE(same_bits(staged.mean, fixed.mean));
  EXPECT_TRUE(same_bits(staged.sd, fixed.sd));
  EXPECT_TRUE(same_bits(staged.rhat, fixed.rhat));
  EXPECT_EQ(rec.draws, one.draws);
  EXPECT_EQ(rec.evals, one.evals);
}

TEST(UntilMixed, OnByDefaultOffWhereTheLengthIsGiven) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), rows_of(test_seed(7), 400, 12), 12, true);
  SampleOptions o;
  o.memory = uint64_t{512} << 20;
  ResolvedSample r;
  ASSERT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
  EXPECT_TRUE(r.until_mixed) << r.until_mixed_rule;
  for (int given = 0; given < 4; ++given) {
    SampleOptions g = o;
    if (given == 0) g.iterations = 5000;
    if (given == 1) g.epochs = 30;
    if (given == 2) g.burn_in = 100;
    if (given == 3) g.thin = 2;
    ASSERT_TRUE(resolve_sample(*store, nullptr, g, &r).is_ok());
    EXPECT_FALSE(r.until_mixed) << given;
    EXPECT_NE(r.until_mixed_rule.find("off"), std::string::npos);
    g.until_mixed = "on";
    ASSERT_TRUE(resolve_sample(*store, nullptr, g, &r).is_ok());
    EXPECT_TRUE(r.until_mixed) << given;
  }
  o.until_mixed = "off";
  ASSERT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
  EXPECT_FALSE(r.until_mixed);
  // Bad values: one line each.
  auto bad = [&](auto set, const std::string& says) {
    SampleOptions b;
    b.memory = o.memory;
    set(b);
    const Status st = resolve_sample(*store, nullptr, b, &r);
    EXPECT_EQ(st.code(), Status::Code::kInvalidArgument) << says;
    EXPECT_NE(st.message().find(says), std::string::npos) << st.message();
  };
  bad([](SampleOptions& b) { b.until_mixed = "maybe"; }, "--until-mixed");
  bad([](SampleOptions& b) { b.target_rhat = 1; }, "--target-rhat");
  bad([](SampleOptions& b) { b.target_ess = -1; }, "--target-ess");
  bad([](SampleOptions& b) { b.max_passes = 0.0; }, "--max-passes");
  bad([](SampleOptions& b) { b.until_mixed = "on", b.iterations = 10, b.burn_in = 8; }, "4 kept states");
}

}  // namespace stages_test
}  // namespace
}  // namespace agld::test
