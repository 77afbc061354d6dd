// The posterior predictive on the test rows (ALGORITHMS.md section 5), pooled over the chains
// and for each chain alone: per test row, log-sum-exp of log p(y_t | theta_s) and the sum of
// the predictions over the states averaged so far. Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "model/model.hpp"
#include "common/state_archive.hpp"

namespace agld::sampler {

class Predictive {
 public:
  Predictive(uint64_t test_rows, size_t chains, const model::Model& model);
  static uint64_t bytes(uint64_t test_rows, size_t chains) { return test_rows * (16 + 8 * chains); }

  // One evaluation. With `pool`, the chains' current states join the average; otherwise
  // (burn-in) the figures are of the current states alone.
  void begin(bool pool);
  // Test rows with each chain's margins (margins[c][i]).
  void add(const Batch& rows, std::span<const std::span<const double>> margins);
  // Fills the test figures of e (test_loglik, test_accuracy or test_mse, chain_test_loglik, samples).
  void end(EvalRecord* e);

  // A new average: no state in it (a run's next stage, docs/samplers.md "Until mixed").
  void reset();

  // Between evaluations: the running sums of every test row and the states averaged.
  void save(StateWriter& out) const;
  Status load(StateReader& in);

 private:
  const model::Model& model_;
  size_t k_;
  std::vector<double> lse_, pred_;  // pooled: a row's log-sum-exp, its summed prediction
  std::vector<double> chain_lse_;   // [row * k + c]
  uint64_t samples_ = 0;            // states of each chain in the average
  bool pool_ = false;
  double ll_ = 0, sq_ = 0;
  uint64_t right_ = 0, rows_ = 0;
  std::vector<double> chain_ll_;
};

}  // namespace agld::sampler
