// What optimize() settles before it starts (internal to the sampler layer; the tests use it
// to get the M a run steps with): the options resolved by the sampler's own rules
// (resolve.cpp: the model, the labels, the prior, the batch, the step of --precondition
// none), the preconditioner of --precondition diag (preconditioner.cpp: M and its default
// step), and the split of --memory.
#pragma once

#include <cstdint>

#include "agld/optimize.hpp"
#include "agld/store.hpp"
#include "sampler/preconditioner.hpp"

namespace agld::sampler {

struct OptimizePlan {
  uint64_t main = 0, pass = 0, test = 0;  // the readers' shares (test 0: no test store)
};

// pre null: the options are checked and resolved without reading the data (a diag run's
// default step is then not known yet: it needs the preconditioner's sample of rows).
Status prepare_optimize(const Store& train, const Store* test, const OptimizeOptions& options, ResolvedOptimize* r,
                        Preconditioner* pre, OptimizePlan* plan);

// Coordinate j's M_j under the run's preconditioner (1 without one).
inline double preconditioner_m(const Preconditioner& pre, uint64_t j) {
  return pre.level.empty() ? 1.0 : pre.level_m[pre.level[j]];
}

}  // namespace agld::sampler
