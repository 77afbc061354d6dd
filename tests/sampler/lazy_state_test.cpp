// LazyState's catch-ups: sync brings every coordinate current; catch_up_rows (before a
// refresh) brings exactly the coordinates whose bit is set, and leaves the others' positions,
// momenta and stamps as they were, so that a later sync jumps them over the whole gap.
#include <gtest/gtest.h>

#include <vector>

#include "literal_dynamics.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/lazy_state.hpp"
#include "sampler_test_support.hpp"

namespace agld::test {
namespace {
namespace lazy_state_test {  // this file's names (unity batches: tests/CMakeLists.txt)

using sampler::LazyState;
using sampler::Noise;

LazyState make_state(uint64_t d, const std::string& dynamics, bool aggregate = true, bool stamps_in_record = true) {
  sampler::DynamicsParams p;
  p.step = 0.01;
  p.friction = 1;
  std::vector<sampler::CoordinateDynamics> levels;
  levels.emplace_back(*sampler::find_dynamics(dynamics), p, 16);
  return LazyState(d, std::move(levels), 1.0, nullptr, aggregate, stamps_in_record);
}

template <typename View>
std::vector<double> copy(View v) {
  std::vector<double> out(v.size());
  for (size_t j = 0; j < v.size(); ++j) out[j] = v[j];
  return out;
}

class CatchUpRows : public ::testing::TestWithParam<std::string> {};

TEST_P(CatchUpRows, BringsTheMarkedCoordinatesAlone) {
  constexpr uint64_t d = 150;  // three bit words, the last one partly beyond d
  LazyState state = make_state(d, GetParam());
  Noise noise(test_seed(61));
  std::vector<uint64_t> bits((d + 63) / 64 + 1, 0);  // a word more than d needs: ignored
  std::vector<bool> marked(d);
  for (uint64_t j = 0; j < d; ++j) marked[j] = j % 3 == 0 || j == 64 || j == 149;
  for (uint64_t j = 0; j < d; ++j) {
    if (marked[j]) bits[j / 64] |= uint64_t{1} << (j % 64);
  }
  bits.back() = ~uint64_t{0};
  for (uint64_t j = 0; j < d; ++j) state.a()[j] = 0.5;
  for (uint64_t j = 0; j < d; ++j) state.x()[j] = 1.0 + static_cast<double>(j);
  const std::vector<double> x0 = copy(state.x()), p0 = copy(state.p());

  double sq = -1;
  ASSERT_TRUE(state.catch_up_rows(40, noise, bits, &sq));
  double want_sq = 0;
  for (uint64_t j = 0; j < d; ++j) {
    if (marked[j]) {
      EXPECT_NE(state.x(static_cast<uint32_t>(j)), x0[j]) << "coordinate " << j << " is marked: brought to 40";
      want_sq += state.x(static_cast<uint32_t>(j)) * state.x(static_cast<uint32_t>(j));
    } else {
      EXPECT_EQ(state.x(static_cast<uint32_t>(j)), x0[j]) << "coordinate " << j << " is not marked: left alone";
      if (state.has_momentum()) {
        EXPECT_EQ(state.p()[j], p0[j]) << "coordinate " << j;
      }
    }
  }
  EXPECT_DOUBLE_EQ(sq, want_sq);
  // The marked ones are current: bringing them to 40 again draws nothing and moves nothing.
  const std::vector<double> x1 = copy(state.x());
  Noise copy = noise;
  for (uint64_t j = 0; j < d; ++j) {
    if (marked[j]) state.bring(static_cast<uint32_t>(j), 40, noise);
  }
  for (uint64_t j = 0; j < d; ++j) {
    if (marked[j]) {
      EXPECT_EQ(state.x(static_cast<uint32_t>(j)), x1[j]) << "coordinate " << j;
    }
  }
  EXPECT_EQ(noise(), copy()) << "bringing current coordinates drew noise";
  // A sync then brings the others over their whole gap of 40 steps, and every coordinate is current.
  ASSERT_TRUE(state.sync(40, noise));
  for (uint64_t j = 0; j < d; ++j) {
    if (!marked[j]) {
      EXPECT_NE(state.x(static_cast<uint32_t>(j)), x0[j]) << "coordinate " << j;
    }
  }
  Noise after = noise;
  for (uint64_t j = 0; j < d; ++j) state.bring(static_cast<uint32_t>(j), 40, noise);
  EXPECT_EQ(noise(), after());
}

// Both layouts (the stamp in the record's last slot, or in an array of its own), with and
// without an aggregate: each number written through its view reads back through every
// accessor, apart from its neighbours', and the levels the stamps carry survive the writes (a
// coordinate's jump uses its own level: a wrong one would move it by another step).
TEST_P(CatchUpRows, RecordsKeepEachNumberAndStampApart) {
  for (int layout = 0; layout < 4; ++layout) {
    const bool aggregate = layout & 1, in_record = layout & 2;
    sampler::DynamicsParams p;
    p.step = 0.01;
    p.friction = 1;
    std::vector<sampler::CoordinateDynamics> levels;
    levels.emplace_back(*sampler::find_dynamics(GetParam()), p, 16);
    p.step = 0.002;
    levels.emplace_back(*sampler::find_dynamics(GetParam()), p, 16);
    constexpr uint64_t d = 37;
    std::vector<uint8_t> level(d);
    for (uint64_t j = 0; j < d; ++j) level[j] = static_cast<uint8_t>(j % 3 == 0);
    LazyState state(d, levels, 1.0, level.data(), aggregate, in_record);
    const int dim = state.has_momentum() ? 2 : 1;
    EXPECT_EQ(LazyState::bytes_per_coordinate(dim, aggregate, in_record),
              in_record ? 8u * (dim + aggregate + 1) : 8u * (dim + aggregate) + 4u);
    EXPECT_EQ(state.has_aggregate(), aggregate);
    for (uint64_t j = 0; j < d; ++j) {
      state.x()[j] = 1.0 + static_cast<double>(j);
      if (state.has_momentum()) state.p()[j] = -2.0 - static_cast<double>(j);
      if (aggregate) state.a()[j] = 0.5 * static_cast<double>(j);
    }
    for (uint64_t j = 0; j < d; ++j) {
      const uint32_t jj = static_cast<uint32_t>(j);
      EXPECT_EQ(state.x(jj), 1.0 + static_cast<double>(j));
      if (state.has_momentum()) {
        EXPECT_EQ(state.p()[j], -2.0 - static_cast<double>(j));
      }
      EXPECT_EQ(state.a(jj), aggregate ? 0.5 * static_cast<double>(j) : 0.0);
      EXPECT_TRUE(state.finite(jj));
    }
    // One step of each coordinate through bring, against the same step at its level's dynamics.
    Noise noise(7), twin_noise(7);
    for (uint64_t j = 0; j < d; ++j) {
      const uint32_t jj = static_cast<uint32_t>(j);
      double x = state.x(jj), pj = state.has_momentum() ? static_cast<double>(state.p()[j]) : 0.0;
      const double a = state.a(jj);
      state.bring(jj, 1, noise);
      const sampler::GaussianJumps& jumps = levels[level[j]].jumps;
      if (state.has_momentum()) {
        jumps.apply(x, pj, a, 1, twin_noise);
        EXPECT_EQ(static_cast<double>(state.p()[j]), pj) << "coordinate " << j;
      } else {
        x = jumps.apply(x, a, 1, twin_noise());
      }
      EXPECT_EQ(state.x(jj), x) << "coordinate " << j << (aggregate ? ", with an aggregate" : "")
                                << (in_record ? ", stamps in the records" : ", stamps apart");
      if (aggregate) {
        EXPECT_EQ(state.a(jj), 0.5 * static_cast<double>(j)) << "a jump leaves A_j";
      }
    }
  }
}

// Before a refresh the chain zeroes the aggregate entries of the coordinates some row has
// (the others are never added to, so they are 0 already): exactly the marked entries, in both
// layouts, and nothing else of a record (position, momentum, stamp); with no bits, every entry.
TEST_P(CatchUpRows, ZeroAggregateWritesTheMarkedEntriesAlone) {
  for (const bool in_record : {true, false}) {
    constexpr uint64_t d = 150;
    LazyState state = make_state(d, GetParam(), /*aggregate=*/true, in_record);
    std::vector<uint64_t> bits((d + 63) / 64, 0);
    std::vector<bool> marked(d);
    for (uint64_t j = 0; j < d; ++j) {
      marked[j] = j % 5 == 1 || j == 63 || j == 64 || j == 149;
      if (marked[j]) bits[j / 64] |= uint64_t{1} << (j % 64);
    }
    for (uint64_t j = 0; j < d; ++j) {
      state.x()[j] = 1.0 + static_cast<double>(j);
      if (state.has_momentum()) state.p()[j] = -1.0 - static_cast<double>(j);
      state.a()[j] = 0.25 + static_cast<double>(j);
    }
    Noise noise(test_seed(62));
    ASSERT_TRUE(state.sync(3, noise));  // every stamp at offset 0 of iteration 3
    const std::vector<double> x0 = copy(state.x()), p0 = copy(state.p());
    state.zero_aggregate(bits);
    for (uint64_t j = 0; j < d; ++j) {
      const uint32_t jj = static_cast<uint32_t>(j);
      EXPECT_EQ(state.a(jj), marked[j] ? 0.0 : 0.25 + static_cast<double>(j))
          << "coordinate " << j << (in_record ? ", stamps in the records" : ", stamps apart");
      EXPECT_EQ(state.x(jj), x0[j]) << "coordinate " << j;
      if (state.has_momentum()) {
        EXPECT_EQ(state.p()[j], p0[j]) << "coordinate " << j;
      }
    }
    // The stamps are intact: every coordinate is still current at 3 (bringing it draws nothing).
    Noise before = noise;
    for (uint64_t j = 0; j < d; ++j) state.bring(static_cast<uint32_t>(j), 3, noise);
    EXPECT_EQ(noise(), before());
    state.zero_aggregate({});
    for (uint64_t j = 0; j < d; ++j) EXPECT_EQ(state.a(static_cast<uint32_t>(j)), 0.0) << "coordinate " << j;
  }
  // Without an aggregate there is nothing to zero, and nothing else is written.
  LazyState plain = make_state(70, GetParam(), /*aggregate=*/false);
  for (uint64_t j = 0; j < 70; ++j) plain.x()[j] = 2.0 + static_cast<double>(j);
  const std::vector<uint64_t> all(2, ~uint64_t{0});
  plain.zero_aggregate(all);
  plain.zero_aggregate({});
  for (uint64_t j = 0; j < 70; ++j) EXPECT_EQ(plain.x(static_cast<uint32_t>(j)), 2.0 + static_cast<double>(j));
}

INSTANTIATE_TEST_SUITE_P(EveryDynamics, CatchUpRows, ::testing::ValuesIn(sampler::dynamics_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

}  // namespace lazy_state_test
}  // namespace
}  // namespace agld::test
