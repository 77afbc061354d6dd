// The mode of the posterior `agld sample` targets (the MAP), and a diagonal Laplace sd per
// coordinate, by preconditioned SVRG on the store's readers (docs/samplers.md, "The mode
// (`agld optimize`)").
//
// A plain service function like sample(): optimize() never prints and never writes a file. It
// reports each epoch through an OptimizeObserver and returns the mode; the CLI writes it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

struct OptimizeOptions {
  std::string model = "logistic";  // as SampleOptions: the same target
  double noise_var = 1;
  double prior_var = 1;
  bool intercept = false;
  std::string precondition = "diag";  // diag | none: the sampler's M (sampler/preconditioner.hpp)
  std::optional<double> step;     // eta, in M's metric under diag; default docs/samplers.md
  std::optional<uint64_t> batch;  // rows a minibatch; default min(100, max(1, N / 100))
  std::string access = "ca";      // the minibatches' order (a reader order: ca, rr, ra, br)
  uint64_t epochs = 20;           // at most this many epochs (a full-gradient pass and a pass of minibatches)
  double tol = 1e-6;              // stop when |g|_M <= tol |g(0)|_M at a snapshot
  uint64_t memory = uint64_t{8} << 30;  // the whole process's budget, bytes
  uint64_t seed = 0;              // the preconditioner's sample and random orders
};

// The options with every default resolved against the store.
struct ResolvedOptimize {
  OptimizeOptions given;    // as given, unchanged
  std::optional<double> noise_var;  // the model's noise variance (linear; none for binary labels)
  uint64_t rows = 0;        // N
  uint64_t dim = 0;         // d, including the intercept
  double step = 0;
  std::string step_rule;
  uint64_t batch = 0;
  uint64_t iterations_per_epoch = 0;  // ceil(N / batch)
  // The preconditioner (diag): its levels, M's range, lambda and the row kick of the step rule,
  // and the rows its setup read (counted in the passes).
  uint64_t precondition_levels = 0;
  double precondition_m_min = 0, precondition_m_max = 0, precondition_lambda = 0, precondition_kick = 0;
  uint64_t setup_rows = 0;
  // The directions no row sees (the store's one-hot fields beside the intercept): the mode's
  // component along them is set exactly, to 0, at every snapshot (docs/samplers.md).
  uint64_t unseen_directions = 0;
  uint64_t state_bytes = 0;   // the optimizer's arrays
  uint64_t reader_bytes = 0;  // the readers' shares
  std::vector<std::string> warnings;
};

// The state at a snapshot x~: where each epoch begins, after its full-gradient pass.
struct OptimizeEpoch {
  uint64_t epoch = 0;       // epochs of minibatch steps made before this snapshot
  double objective = 0;     // U(x~) = |x~|^2 / (2 prior_var) + sum_i l(y_i, x~ . x_i)
  double grad_norm = 0;     // |grad U(x~)|_M = sqrt(sum_j M_j g_j^2)
  double rel_grad_norm = 0; // grad_norm / that at the start (x = 0)
  double passes = 0;        // training rows read / N: setup, full passes and minibatches
  double seconds = 0;
  uint64_t bytes_read = 0;  // stored bytes of the training store read
};

class OptimizeObserver {
 public:
  virtual ~OptimizeObserver() = default;
  virtual Status on_start(const ResolvedOptimize& run) { (void)run; return Status::ok(); }
  // After each full-gradient pass, the start's included. A failure stops the run.
  virtual Status on_epoch(const OptimizeEpoch& epoch) { (void)epoch; return Status::ok(); }
  // Polled between iterations; true stops at the last snapshot (the result is complete).
  virtual bool stop_requested() { return false; }
};

struct OptimizeResult {
  ResolvedOptimize run;
  // d each: the mode (the last snapshot x~) and the diagonal Laplace sd 1 / sqrt(H_jj),
  // H_jj = 1/prior_var + sum_i l''(y_i, x~ . x_i) x_ij^2. That is the sd of coordinate j
  // given all the others under the Laplace approximation: a lower bound on its marginal sd
  // (far below it along collinear directions; docs/samplers.md).
  std::vector<double> mode, sd;
  std::vector<OptimizeEpoch> epochs;  // every snapshot, the start's first
  // "tolerance" (|g|_M <= tol |g(0)|_M), "epochs" (--epochs made) or "stopped" (asked to).
  std::string stop_reason;
  uint64_t rows_read = 0;   // every row read: the setup, the full passes, the minibatches
  uint64_t grad_evals = 0;  // s_i computations (SVRG computes two a minibatch row)
  // Test metrics at the mode (plug-in: the likelihood at x~, not the posterior predictive);
  // NaN without a test store, and accuracy (logistic) or MSE (linear) NaN for the other model.
  double test_loglik = 0, test_accuracy = 0, test_mse = 0;
  double seconds = 0;
};

// Fills every default against the training store and checks the options (no data read).
Status resolve_optimize(const Store& train, const Store* test, const OptimizeOptions& options,
                        ResolvedOptimize* out);

// Finds the mode. test may be null. A non-finite state, or an objective that rises far above
// where it started, stops with invalid_argument naming the epoch and suggesting a smaller step.
Status optimize(const Store& train, const Store* test, const OptimizeOptions& options,
                OptimizeObserver& observer, OptimizeResult* out);

}  // namespace agld
