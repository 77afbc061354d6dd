// Snapshot strategies against a fake chain: the PPU / TMU bookkeeping keeps A equal to a
// fresh sum_i sh_i x_i after many steps, and PTU's shadows agree with its aggregate.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "model/model.hpp"
#include "sampler/snapshot.hpp"
#include "test_support.hpp"

namespace agld::sampler {
namespace {
namespace snapshot_test {  // this file's names (unity batches: tests/CMakeLists.txt)

// Rows picked from a matrix, as a Batch (owning its buffers).
struct OwnedBatch {
  std::vector<uint64_t> ids;
  std::vector<double> labels;
  std::vector<uint64_t> offsets{0};
  std::vector<uint32_t> indices;
  std::vector<float> values;
  OwnedBatch(const SparseRows& m, const std::vector<uint64_t>& rows) : ids(rows) {
    for (uint64_t r : rows) {
      labels.push_back(m.labels[r]);
      const auto idx = m.row_indices(r);
      const auto val = m.row_values(r);
      indices.insert(indices.end(), idx.begin(), idx.end());
      values.insert(values.end(), val.begin(), val.end());
      offsets.push_back(indices.size());
    }
    append_row_views(offsets, indices.data(), values.data(), &views);
  }
  std::vector<BatchRow> views;  // of the arrays above, made once they are complete
  OwnedBatch(const OwnedBatch&) = delete;  // the views point into this one
  Batch view() const { return Batch{ids, labels, views}; }
};

std::vector<double> margins(const Batch& b, const std::vector<double>& theta) {
  std::vector<double> m(b.size());
  for (size_t i = 0; i < b.size(); ++i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) m[i] += theta[idx[e]] * val[e];
  }
  return m;
}

// What a chain holds for its strategy: theta, A, the model, and the rows a refresh reads.
struct FakeChain {
  FakeChain(SparseRows rows, uint32_t d, std::mt19937_64& rng)
      : rows_(std::move(rows)), d_(d), theta_(d), a_(d), model_(model::find_model("logistic")->make({})) {
    std::normal_distribution<double> n01;
    for (double& t : theta_) t = n01(rng);
  }
  SnapshotParams params(uint64_t refresh) const { return {rows_.rows(), d_, refresh, 0, model_.get()}; }
  // A refresh at theta: every row, in two pieces, as a pass reader delivers them.
  void refresh(Snapshot& snap) {
    snap.begin_refresh_at(theta_, a_);
    std::vector<uint64_t> all(rows_.rows());
    std::iota(all.begin(), all.end(), 0);
    const size_t half = all.size() / 2;
    for (auto piece : {std::vector<uint64_t>(all.begin(), all.begin() + static_cast<std::ptrdiff_t>(half)),
                       std::vector<uint64_t>(all.begin() + static_cast<std::ptrdiff_t>(half), all.end())}) {
      OwnedBatch b(rows_, piece);
      snap.refresh_piece(b.view(), margins(b.view(), theta_), a_);
    }
  }
  const model::Model& model() const { return *model_; }

  SparseRows rows_;
  uint32_t d_;
  std::vector<double> theta_, a_;
  std::unique_ptr<model::Model> model_;
};

// sum_i sh_i x_i from the strategy's shadows of every row, and the scale of each sum.
void fresh_aggregate(Snapshot& snap, const SparseRows& rows, uint32_t d, std::vector<double>* a,
                     std::vector<double>* scale) {
  std::vector<uint64_t> all(rows.rows());
  std::iota(all.begin(), all.end(), 0);
  OwnedBatch b(rows, all);
  std::vector<double> sh(all.size());
  snap.shadows(b.view(), sh);
  a->assign(d, 0.0);
  scale->assign(d, 0.0);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto idx = rows.row_indices(i);
    const auto val = rows.row_values(i);
    for (size_t e = 0; e < idx.size(); ++e) {
      (*a)[idx[e]] += sh[i] * val[e];
      (*scale)[idx[e]] += std::abs(sh[i] * val[e]);
    }
  }
}

void expect_aggregate_fresh(Snapshot& snap, FakeChain& host, double rel) {
  std::vector<double> fresh, scale;
  fresh_aggregate(snap, host.rows_, host.d_, &fresh, &scale);
  double worst = 0;
  for (uint32_t j = 0; j < host.d_; ++j) {
    if (scale[j] == 0) {
      EXPECT_EQ(host.a_[j], 0.0) << "coordinate " << j;
      continue;
    }
    worst = std::max(worst, std::abs(host.a_[j] - fresh[j]) / scale[j]);
  }
  std::cout << "worst relative error of A: " << worst << std::endl;
  EXPECT_LE(worst, rel);
}

class PerRowBookkeeping : public ::testing::TestWithParam<const char*> {};

TEST_P(PerRowBookkeeping, AggregateEqualsFreshSumAfterManySteps) {
  const uint64_t seed = test::test_seed(21);
  std::mt19937_64 rng(seed);
  test::RandomMatrixSpec spec;
  spec.rows = 500;
  spec.features = 60;
  spec.max_row_nnz = 12;
  spec.long_row_prob = 0;
  const SparseRows rows = test::random_matrix(spec, rng);
  FakeChain host(rows, spec.features, rng);
  auto snap = find_snapshot(GetParam())->make(host.params(50));
  host.refresh(*snap);  // the start
  expect_aggregate_fresh(*snap, host, 1e-12);
  std::uniform_int_distribution<uint64_t> pick(0, rows.rows() - 1);
  std::normal_distribution<double> n01;
  for (uint64_t k = 0; k < 20017; ++k) {  // not a multiple of the refresh period
    std::vector<uint64_t> ids(16);
    for (auto& id : ids) id = pick(rng);  // with replacement: duplicates update once
    ids[1] = ids[0];
    OwnedBatch b(rows, ids);
    for (double& t : host.theta_) t += 0.05 * n01(rng);
    const std::vector<double> m = margins(b.view(), host.theta_);
    std::vector<double> s(ids.size());
    for (size_t i = 0; i < ids.size(); ++i) s[i] = host.model().dloss(b.labels[i], m[i]);
    snap->after_step(b.view(), s, host.a_);
    if (snap->refresh_due(k)) host.refresh(*snap);
  }
  expect_aggregate_fresh(*snap, host, 1e-9);
}

INSTANTIATE_TEST_SUITE_P(Strategies, PerRowBookkeeping, ::testing::Values("ppu", "tmu"));

TEST(PeriodicTotal, ShadowsAgreeWithTheAggregate) {
  const uint64_t seed = test::test_seed(22);
  std::mt19937_64 rng(seed);
  test::RandomMatrixSpec spec;
  spec.rows = 300;
  spec.features = 40;
  spec.long_row_prob = 0;
  const SparseRows rows = test::random_matrix(spec, rng);
  FakeChain host(rows, spec.features, rng);
  auto snap = find_snapshot("ptu")->make(host.params(10));
  host.refresh(*snap);
  expect_aggregate_fresh(*snap, host, 1e-12);
  // The snapshot point is a copy: moving theta does not move the shadows.
  std::vector<double> before, scale, after;
  fresh_aggregate(*snap, rows, spec.features, &before, &scale);
  for (double& t : host.theta_) t += 1;
  fresh_aggregate(*snap, rows, spec.features, &after, &scale);
  EXPECT_EQ(before, after);
  EXPECT_FALSE(snap->refresh_due(8));
  EXPECT_TRUE(snap->refresh_due(9));
  host.refresh(*snap);
  expect_aggregate_fresh(*snap, host, 1e-12);
}

// The default run length counts a run's refreshes with refreshes_in(); the engine makes them
// where refresh_due() says. Both must agree, for every strategy (ppu has none after its start),
// and with the registry's `periodic`.
TEST(Refreshes, CountedAsTheEngineMakesThem) {
  const auto model = model::find_model("logistic")->make(SampleOptions{});
  for (const auto& info : registered_snapshots()) {
    for (uint64_t period : {1u, 7u, 100u}) {
      const auto snap = info.make({1000, 10, period, 50, model.get()});
      uint64_t due = 0;
      for (uint64_t n = 0; n <= 1000; ++n) {
        ASSERT_EQ(snap->refreshes_in(n), due) << info.name << ", period " << period << ", " << n << " iterations";
        if (snap->refresh_due(n)) ++due;
      }
      EXPECT_EQ(info.periodic, due > 0) << info.name << ": the registry's periodic flag";
    }
  }
}

}  // namespace snapshot_test
}  // namespace
}  // namespace agld::sampler
