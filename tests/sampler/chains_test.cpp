// Several chains in one run: each chain's draws are exactly those of a one-chain run with its
// id and the run's seed, for every snapshot strategy under every access order, at 1 and 2
// threads (the output does not depend on the threads); the pooled posterior is that of all
// the chains' draws; the chains start apart and mix; bad chain counts and budgets are errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <ostream>

#include <map>
#include <random>

#include "agld/reader.hpp"
#include "sampler/snapshot.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace chains_test {  // this file's names (unity batches: tests/CMakeLists.txt)

constexpr uint32_t kDim = 40;

// Keeps each chain's draws (lp__ first, then the tracked coordinates), by chain id.
class ByChain final : public SampleObserver {
 public:
  Status on_draw(const DrawRecord& d) override {
    std::vector<double> row = {static_cast<double>(d.iteration), d.lp};
    row.insert(row.end(), d.tracked.begin(), d.tracked.end());
    draws[d.chain].push_back(row);
    return Status::ok();
  }
  std::map<uint64_t, std::vector<std::vector<double>>> draws;
};

SparseRows logistic_rows(uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> n01;
  std::uniform_int_distribution<uint32_t> feature(0, kDim - 1);
  SparseRows rows;
  for (int r = 0; r < 600; ++r) {
    std::vector<uint32_t> idx;
    std::vector<float> val;
    for (int e = 0; e < 4; ++e) {
      const uint32_t j = feature(rng);
      if (std::find(idx.begin(), idx.end(), j) != idx.end()) continue;
      idx.push_back(j);
      val.push_back(static_cast<float>(n01(rng)));
    }
    std::sort(idx.begin(), idx.end());  // values are iid: their order does not matter
    rows.add_row(n01(rng) + 0.3 * idx.size() > 1 ? 1.0 : -1.0, idx, val);
  }
  return rows;
}

SampleOptions base_options(const std::string& method) {
  SampleOptions o;
  o.model = "logistic";
  o.method = method;
  o.seed = 17;
  o.batch = 300;       // 3 chains' batches hold enough nonzeros to step on all threads
  o.iterations = 300;  // 150 passes: many refreshes
  o.burn_in = 30;
  o.thin = 3;
  o.evaluations = 4;
  o.intercept = true;
  o.memory = uint64_t{512} << 20;
  o.track_default = false;
  o.track = {0, 5, 39, 40};  // 40: the intercept
  return o;
}

struct Case {
  std::string snapshot, access;
};
// ctest lists a case by its method, not its bytes.
void PrintTo(const Case& c, std::ostream* os) { *os << c.snapshot << "-" << c.access; }

class ChainsInOneRun : public ::testing::TestWithParam<Case> {};

TEST_P(ChainsInOneRun, AreTheOneChainRunsWithTheirIds) {
  const Case& c = GetParam();
  TempDir dir;
  const SparseRows rows = logistic_rows(test_seed(23));
  auto store = make_store(dir.file("s.agld"), rows, kDim, true, 64);
  auto test_store = make_store(dir.file("t.agld"), rows, kDim, true, 64);
  const std::string method = c.snapshot + "-" + c.access;

  std::map<uint64_t, std::vector<std::vector<double>>> single;
  for (uint64_t id = 2; id <= 4; ++id) {
    SampleOptions o = base_options(method);
    o.chains = 1;
    o.chain_id = id;
    o.threads = 1;
    ByChain keep;
    SampleResult r;
    Status st = sample(*store, test_store.get(), o, keep, &r);
    ASSERT_TRUE(st.is_ok()) << st.message();
    ASSERT_EQ(keep.draws.size(), 1u);
    single[id] = keep.draws[id];
    ASSERT_EQ(single[id].size(), r.draws);
  }
  for (unsigned threads : {1u, 2u}) {
    SampleOptions o = base_options(method);
    o.chains = 3;
    o.chain_id = 2;
    o.threads = threads;
    ByChain keep;
    SampleResult r;
    Status st = sample(*store, test_store.get(), o, keep, &r);
    ASSERT_TRUE(st.is_ok()) << st.message();
    for (uint64_t id = 2; id <= 4; ++id) {
      EXPECT_EQ(keep.draws[id], single[id]) << method << ", chain " << id << ", " << threads << " thread(s)";
    }
    // The pooled moments are every chain's draws; the tracked draws come back chain-major.
    ASSERT_EQ(r.tracked_draws.size(), 5u);
    for (size_t t = 0; t < 4; ++t) {
      double sum = 0;
      for (uint64_t id = 2; id <= 4; ++id) {
        for (size_t i = 0; i < single[id].size(); ++i) {
          sum += single[id][i][t + 2];
          EXPECT_EQ(r.tracked_draws[t + 1][(id - 2) * r.draws + i], single[id][i][t + 2]);
        }
      }
      const double mean = sum / static_cast<double>(3 * r.draws);
      EXPECT_NEAR(r.mean[o.track[t]], mean, 1e-9 * (1 + std::abs(mean))) << method << " tracked " << t;
    }
  }
}

// Every snapshot x access order; under a sanitizer each snapshot and each order once
// (method_each): each one's threads and shared state.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  if (kSanitizedBuild) {
    for (const MethodParts& m : method_each()) {
      if (std::none_of(cases.begin(), cases.end(), [&](const Case& c) { return c.snapshot == m.snapshot && c.access == m.access; })) {
        cases.push_back({m.snapshot, m.access});
      }
    }
    return cases;
  }
  for (const auto& s : sampler::registered_snapshots()) {
    for (const auto& a : reader_orders()) cases.push_back({std::string(s.name), a.name});
  }
  return cases;
}

INSTANTIATE_TEST_SUITE_P(EverySnapshotAndAccess, ChainsInOneRun, ::testing::ValuesIn(all_cases()),
                         [](const ::testing::TestParamInfo<Case>& p) {
                           std::string s = p.param.snapshot;
                           if (s == "ptu+") s = "ptuplus";
                           return s + "_" + p.param.access;
                         });

// Under a random order each chain reads its own sequence; with --share-batches they read the
// first chain's, and only the first chain is its one-chain run.
TEST(Chains, SharedBatchesAreTheFirstChainsSequence) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), logistic_rows(5), kDim, true, 64);
  auto run = [&](uint64_t chains, bool share) {
    SampleOptions o = base_options("sgld");
    o.chains = chains;
    o.share_batches = share;
    ByChain keep;
    SampleResult r;
    EXPECT_TRUE(sample(*store, nullptr, o, keep, &r).is_ok());
    return keep.draws;
  };
  const auto one = run(1, false);
  const auto own = run(2, false);
  const auto shared = run(2, true);
  EXPECT_EQ(shared.at(1), one.at(1));
  EXPECT_EQ(own.at(1), one.at(1));
  EXPECT_NE(shared.at(2), own.at(2));  // the second chain read other batches
}

// The chains start from independent draws of the prior: apart, not at one point.
TEST(Chains, StartDispersed) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), logistic_rows(6), kDim, true, 64);
  SampleOptions o = base_options("tmu-ca");
  o.chains = 4;
  o.iterations = 2;
  o.burn_in = 0;
  o.thin = 1;
  ByChain keep;
  SampleResult r;
  ASSERT_TRUE(sample(*store, nullptr, o, keep, &r).is_ok());
  for (size_t t = 2; t < 6; ++t) {
    std::vector<double> firsts;
    for (const auto& [id, d] : keep.draws) firsts.push_back(d.at(0)[t]);
    double lo = *std::min_element(firsts.begin(), firsts.end()), hi = *std::max_element(firsts.begin(), firsts.end());
    EXPECT_GT(hi - lo, 0.1) << "tracked " << t - 2;  // prior sd 1: four draws span about 2
  }
}

TEST(Chains, CountsAndBudgetsAreChecked) {
  TempDir dir;
  auto store = make_store(dir.file("s.agld"), logistic_rows(7), kDim, true, 64);
  SampleOptions o = base_options("tmu-ca");
  ResolvedSample r;
  o.chains = 0;
  Status st = resolve_sample(*store, nullptr, o, &r);
  EXPECT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("--chains"), std::string::npos) << st.message();
  o.chains = 4;
  o.chain_id = 0;
  st = resolve_sample(*store, nullptr, o, &r);
  EXPECT_NE(st.message().find("--chain-id"), std::string::npos) << st.message();
  // A budget for about two chains: the error says how many fit.
  o.chain_id = 1;
  o.chains = 1;
  ASSERT_TRUE(resolve_sample(*store, nullptr, o, &r).is_ok());
  const uint64_t one_chain = r.chain_bytes;
  o.chains = 100000;
  o.memory = uint64_t{256} << 20;
  st = resolve_sample(*store, nullptr, o, &r);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("chains would fit (--chains "), std::string::npos) << st.message();
  EXPECT_GT(one_chain, 0u);
}

}  // namespace chains_test
}  // namespace
}  // namespace agld::test
