// The posterior's mean and sd of every coordinate over every chain's kept states (Welford),
// pooled in chain order, so that the result does not depend on the threads. Internal to the
// sampler layer.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <span>
#include <vector>

#include "common/strided_span.hpp"
#include "common/state_archive.hpp"

namespace agld::sampler {

class PooledMoments {
 public:
  explicit PooledMoments(uint64_t d) : mean_(d, 0.0), m2_(d, 0.0) {}
  static uint64_t bytes(uint64_t d) { return 16 * d; }

  // One kept iteration: every chain's state, for coordinates [j0, j1) (disjoint ranges may
  // run at once); then next_draw(), once.
  void add(std::span<const StridedSpan<const double>> states, uint64_t j0, uint64_t j1) {
    add_values(states.size(), j0, j1, [&states](size_t c, uint64_t j) { return states[c][j]; });
  }
  // The same with chain c's value of coordinate j given by value(c, j).
  template <class Value>
  void add_values(size_t k, uint64_t j0, uint64_t j1, Value value) {
    for (uint64_t j = j0; j < j1; ++j) {
      double mean = mean_[j], m2 = m2_[j];
      for (size_t c = 0; c < k; ++c) {
        const double v = value(c, j);
        const double delta = v - mean;
        mean += delta * inv_[c];
        m2 += delta * (v - mean);
      }
      mean_[j] = mean;
      m2_[j] = m2;
    }
  }
  void prepare(size_t chains) {  // before add(): the weights of this iteration's states
    inv_.resize(chains);
    for (size_t c = 0; c < chains; ++c) inv_[c] = 1.0 / static_cast<double>(count_ + c + 1);
  }
  void next_draw(size_t chains) { count_ += chains; }
  uint64_t count() const { return count_; }

  // No state kept yet (a run's next stage).
  void reset() {
    std::fill(mean_.begin(), mean_.end(), 0.0);
    std::fill(m2_.begin(), m2_.end(), 0.0);
    count_ = 0;
  }
  // Coordinate j's sd as finish() gives it.
  double sd(uint64_t j) const { return count_ > 1 ? std::sqrt(m2_[j] / static_cast<double>(count_ - 1)) : 0.0; }

  std::span<const double> mean() const { return mean_; }
  std::span<const double> m2() const { return m2_; }  // sums of squared deviations

  void save(StateWriter& out) const {
    out.section("MOMS");
    out.u64("the pooled moments' count", count_);
    out.array("the pooled means", mean_);
    out.array("the pooled sums of squares", m2_);
  }
  Status load(StateReader& in) {
    AGLD_RETURN_IF_ERROR(in.section("MOMS", "the pooled moments"));
    AGLD_RETURN_IF_ERROR(in.u64("the pooled moments' count", &count_));
    AGLD_RETURN_IF_ERROR(in.array("the pooled means", mean_));
    return in.array("the pooled sums of squares", m2_);
  }

  // Moves the mean and the sd (0 with fewer than two states) out.
  void finish(std::vector<double>* mean, std::vector<double>* sd) {
    for (double& v : m2_) v = count_ > 1 ? std::sqrt(v / static_cast<double>(count_ - 1)) : 0.0;
    *mean = std::move(mean_);
    *sd = std::move(m2_);
  }

 private:
  std::vector<double> mean_, m2_;  // swept in order: ordinary pages
  std::vector<double> inv_;
  uint64_t count_ = 0;
};

}  // namespace agld::sampler
