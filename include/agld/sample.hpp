// Sampling the posterior of a generalised linear model from a store: the AGLD family of
// Langevin samplers (docs/samplers.md; the exact specification is ALGORITHMS.md).
//
// A plain service function in the style of cmdstan's services: sample() never prints and
// never writes a file. It reports through a SampleObserver (draws, evaluations, progress)
// and returns the posterior summary; the CLI wires the observer to the run directory.
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "agld/file.hpp"
#include "agld/status.hpp"
#include "agld/store.hpp"

namespace agld {

struct SampleOptions {
  std::string model = "logistic";  // logistic | linear
  double noise_var = 1;            // linear model: y ~ N(theta . x, noise_var)
  double prior_var = 1;            // theta ~ N(0, prior_var I)
  bool intercept = false;          // append a constant feature 1 as the last coordinate
  // SNAPSHOT-ACCESS[-DYNAMICS] or a paper alias (sample_methods()); the dynamics ld (overdamped
  // Langevin) when not given, or hmc, hmc2, svrhmc (underdamped). Default (docs/samplers.md,
  // "Defaults"): ptu-ca; on a store whose rows kept their source order, ptu-rr, which needs
  // the decoded store to fit the reader's share of --memory (else resolving is an error that
  // says what to do).
  std::optional<std::string> method;
  uint64_t chains = 4;             // K chains in one run, from dispersed starts
  uint64_t chain_id = 1;           // the first chain's id: chains are chain_id ... chain_id + K - 1
  // Random orders: every chain reads the same batches (one sequence) instead of its own.
  bool share_batches = false;
  unsigned threads = 0;            // threads the chains run on (0: every core); no effect on the output
  // The dynamics' step: eta (ld, svrhmc) or h (hmc, hmc2); default from the store's statistics
  // (docs/samplers.md, "Defaults").
  std::optional<double> step;
  // The underdamped dynamics' friction: D_f (hmc, hmc2), gamma (svrhmc); default
  // docs/samplers.md, "Dynamics". Ignored by ld.
  std::optional<double> friction;
  // A constant diagonal preconditioner M: "diag" (from the per-feature statistics; the default)
  // or "none".
  // With diag, eta is the step in M's metric: coordinate j steps eta M_j.
  std::string precondition = "diag";
  // With diag, the metric M (docs/samplers.md, "A dense metric"): "diag" (from the per-feature
  // statistics), "block" (a dense block on the intercept and the most frequent features), "dense"
  // (every coordinate), "auto" (block; the default, empty) or a float64 .npy: d x 2 with a
  // standard deviation per coordinate in column 1 (M_j = sd_j^2, capped by what one row brings
  // to a minibatch), or d x d, M itself.
  std::string metric;
  // The chains' start (as Stan's init): around column 0 of a float64 .npy of d rows (agld
  // optimize's mode.npy, a run's posterior.npy), x_0 = init + sd z with sd column 1 if the file
  // has one, else the prior's sd. Empty: x_0 drawn from the prior.
  std::string init;
  std::optional<uint64_t> batch;   // rows a minibatch; default min(N, 100)
  std::optional<double> epochs;    // run length per chain in passes of minibatches ...
  std::optional<uint64_t> iterations;  // ... or in iterations (default: docs/samplers.md)
  std::optional<uint64_t> burn_in;     // iterations of each chain; default half the run
  std::optional<uint64_t> thin;        // keep every thin-th state of each chain after burn-in
  std::optional<uint64_t> refresh;     // D, iterations between snapshot refreshes; default a pass
  std::optional<uint64_t> snapshot_batch;  // ptu+: rows of a refresh; default max(batch, N / 10)
  std::optional<double> time_limit;    // seconds of sampling; the run then stops early
  // The run length in stages (docs/samplers.md, "Until mixed"): "on" runs the length, then
  // doubles it (keeping the second half of each stage) until every coordinate has mixed
  // (R-hat at most target_rhat, ESS at least target_ess) or the next stage would pass
  // max_passes or time_limit; "off" runs the length once; "auto" (the default) is on unless
  // --iterations, --epochs, --burn-in or --thin fixes the run.
  std::string until_mixed = "auto";
  double target_rhat = 1.01;
  double target_ess = 400;
  std::optional<double> max_passes;    // default: 4 times the first stage's passes
  uint64_t evaluations = 100;          // test-set evaluations over the run
  uint64_t memory = uint64_t{8} << 30; // the whole process's budget, bytes
  uint64_t seed = 0;
  std::vector<uint64_t> track;         // coordinates written to draws_K.csv (0-based; d-1 = intercept)
  bool track_default = true;           // track = the first 10 features and the intercept
  bool dense = false;                  // update every coordinate every step (for tests)
  // posterior.npy's moments: "auto" takes, coordinate by coordinate, the Rao-Blackwellized
  // estimate (the conditional moments at each refresh after burn-in) where the model's
  // conditionals are Gaussian (linear) and its Monte Carlo error is the smaller, else the kept
  // draws'; "off" the kept draws' alone (docs/samplers.md, "Rao-Blackwellized moments").
  std::string rao_blackwell = "auto";
  std::string gibbs = "auto";
  // The directions no row can see (the store's complete one-hot fields beside the intercept,
  // or against each other): "auto" draws the posterior's component along them exactly at
  // each refresh (each pass for strategies without one); "off" leaves them to the dynamics
  // (docs/samplers.md, "Directions the data cannot see").
  std::string unseen = "auto";
  // The minibatch gradient's noise: "auto" takes its estimated variance out of the injected
  // noise, per level of M and on the dense block (at most 3/4 of it); "off" injects the
  // dynamics' noise as specified (docs/samplers.md, "Gradient noise").
  std::string noise_correction = "auto";
};

// The least share of the dynamics' noise the gradient noise's correction leaves a level of M or
// a direction of the dense block (docs/samplers.md, "Gradient noise"): a run that reaches it
// has more gradient noise there than the dynamics should inject, and says so.
inline constexpr double kLeastNoiseShare = 0.25;

// A run resolved against its store: the options as given, and every value the run uses,
// each default resolved (docs/samplers.md, "Defaults"), with the rule that chose it.
struct ResolvedSample {
  SampleOptions given;      // as given, unchanged (a resumed run's: its checkpoint's)
  std::string method;       // SNAPSHOT-ACCESS[-DYNAMICS] or the alias given
  std::string method_rule;  // "given", or why the default method was chosen
  // The default method chose a random order because the store kept its source order: the
  // memory plan must then keep the whole store in the reader's cache.
  bool random_for_order = false;
  std::string snapshot;   // none | full | ptu | ptu+ | ppu | tmu
  std::string access;     // ca | rr | ra | br
  std::string dynamics;   // ld | hmc | hmc2 | svrhmc
  // What the units and the model are, from their tables: the strategy refreshes from
  // snapshot_batch rows of the access order (ptu+); the dynamics keeps a momentum a
  // coordinate (friction applies); the model's noise variance (linear; none for binary labels).
  bool refresh_subsample = false;
  bool underdamped = false;
  std::optional<double> noise_var;
  uint64_t rows = 0;      // N
  uint64_t dim = 0;       // d, including the intercept
  double step = 0;
  double friction = 0;    // the underdamped dynamics' (0 when not underdamped)
  std::string friction_rule;
  uint64_t batch = 0, iterations = 0, burn_in = 0, thin = 1, refresh = 0, snapshot_batch = 0;
  double epochs = 0;              // the run's length in passes of minibatches: iterations x batch / N
  std::vector<uint64_t> track;    // the coordinates of the draws files (0-based)
  uint64_t eval_every = 0;        // iterations between evaluations
  uint64_t draws = 0;             // kept states planned per chain
  uint64_t chain_bytes = 0;       // one chain's state
  // The chains' lazy state keeps each coordinate's stamp in its record (faster at large d, 4
  // bytes a coordinate more) when that fits --memory, else apart (the memory plan's choice).
  bool stamps_in_record = true;
  uint64_t state_bytes = 0;       // every chain's state and the shared accumulators
  uint64_t reader_bytes = 0;      // the training reader's share
  std::string step_rule;          // how the step was chosen, for config.json
  // |theta| beyond which a chain's state is outside the posterior: a divergence that stops
  // the run (docs/samplers.md, "Divergence"); infinite under a flat prior.
  double divergence_radius = 0;
  // The preconditioner (diag): its levels, the range of M, the estimated largest eigenvalue
  // of the preconditioned Hessian, and the training rows it read (counted in passes).
  uint64_t precondition_levels = 0;
  double precondition_m_min = 0, precondition_m_max = 0, precondition_lambda = 0, precondition_kick = 0;
  // Coordinates whose M the visit rule lowered (docs/samplers.md, "The visit rule").
  uint64_t precondition_visit_lowered = 0;
  // The kick cap t (0: none) and the coordinates it lowered (docs/samplers.md, "The step").
  double precondition_kick_cap = 0;
  uint64_t precondition_kick_capped = 0;
  // The metric's shape (docs/samplers.md, "A dense metric"): "diag", "block" (a dense block
  // of metric_block coordinates, diagonal elsewhere) or "dense" (every coordinate), and why.
  std::string metric = "diag";
  uint64_t metric_block = 0;
  std::string metric_rule;
  uint64_t setup_rows = 0;
  // Whether the run keeps Rao-Blackwellized moments (sampler/rao_blackwell.hpp), why or why
  // not, and from how many refreshes of each chain.
  bool rao_blackwell = false;
  std::string rao_blackwell_rule;
  uint64_t rao_blackwell_refreshes = 0;
  // Under a model whose conditionals are not Gaussian: the coordinates whose conditionals are
  // computed by quadrature, those in at most rare_rows training rows (0: Gaussian
  // conditionals, of every coordinate), how many, and the (row, coordinate) pairs a chain
  // gathers at a refresh.
  uint64_t rao_blackwell_rare_rows = 0, rao_blackwell_rare_coordinates = 0, rao_blackwell_rare_pairs = 0;
  // The Gibbs sweep over those coordinates at each refresh (sampler/rare_rows.hpp;
  // docs/samplers.md, "The rare coordinates' Gibbs sweep"), and why or why not. gibbs_planned:
  // what the default length counted (a second pass a refresh), before the memory decided.
  bool gibbs = false, gibbs_planned = false;
  std::string gibbs_rule;
  // The exact moves along the directions no row can see (sampler/unseen_move.hpp): how many
  // directions (0: none), from how many fields, and why.
  uint64_t unseen_directions = 0, unseen_fields = 0;
  std::string unseen_rule;
  // Whether the injected noise gives way to the gradient's (sampler/gradient_noise.hpp), and
  // why; in a result, the least share of its noise any level or block direction of any chain
  // kept at the last retempering (1: none taken).
  bool noise_correction = false;
  std::string noise_correction_rule;
  double least_noise_share = 1;
  // In a result, the dense block's least step over the chains at the end (0: no block);
  // DenseHead::retemper raises it where the block's gradient noise allows.
  double block_step = 0;
  std::string length_rule;        // how the run length was chosen
  // Stages (docs/samplers.md, "Until mixed"): whether the run doubles its length until mixed,
  // and why; its targets; its cap in passes (0: kMaxPassesFactor times the first stage's).
  // iterations, burn_in, thin, eval_every, draws and epochs above are the first stage's, or
  // (in a result, and to an observer) those of the stage that ran last.
  bool until_mixed = false;
  std::string until_mixed_rule;
  double target_rhat = 0, target_ess = 0, max_passes = 0;
  uint64_t stage = 0;             // 0: the first stage
  // One stream per chain (a random order, not --share-batches), or one for all.
  bool own_streams = false;
  // The online diagnostics (diagnostics.npy): every coordinate, or a stated subset.
  uint64_t diagnosed = 0;         // coordinates covered
  std::string diagnosed_rule;     // "all", or which subset and why
  // Things the user should know before trusting the run (e.g. cyclic access on a store
  // whose rows kept their source order); the CLI prints them and config.json keeps them.
  std::vector<std::string> warnings;
};

struct MethodInfo {
  std::string name;      // SNAPSHOT-ACCESS[-DYNAMICS], or an alias
  std::string means;     // for an alias: the SNAPSHOT-ACCESS[-DYNAMICS] it stands for
  std::string summary;
  std::string dynamics;  // ld | hmc | hmc2 | svrhmc
  std::string snapshot, access;  // its snapshot strategy and access order (an alias's too)
};
// Every snapshot strategy with every access order and every dynamics (ld's without a suffix),
// and the papers' names.
std::vector<MethodInfo> sample_methods();
std::vector<std::string> sample_models();

// A kept state of one chain: iteration j (the state after j steps), lp__ = -U(theta_j)
// estimated from the chain's minibatch of iteration j (exact for full-batch methods), and
// the tracked coordinates.
struct DrawRecord {
  uint64_t chain = 1;  // the chain's id
  uint64_t iteration = 0;
  double lp = 0;
  std::vector<double> tracked;
};

// One evaluation (a row of metrics.csv).
struct EvalRecord {
  uint64_t iteration = 0;
  double seconds = 0;          // sampling wall time, evaluations excluded
  double eval_seconds = 0;     // wall time spent in evaluations so far
  double passes = 0;           // training rows read / N, refresh passes included
  uint64_t grad_evals = 0;     // component gradient evaluations (s_i computations)
  bool burn_in = false;        // at or before burn-in: test metrics are of this state alone
  uint64_t samples = 0;        // states of each chain averaged in the predictive (1 during burn-in)
  double test_loglik = 0;      // mean over test rows of log p(y | x, posterior), pooled over
                               // the chains; NaN without test
  std::vector<double> chain_test_loglik;  // the same for each chain alone (empty without test)
  double test_accuracy = 0;    // logistic; NaN otherwise
  double test_mse = 0;         // linear: MSE of the posterior-mean prediction; NaN otherwise
  uint64_t bytes_read = 0;     // stored bytes of the training store read from the file
  uint64_t memory_bytes = 0;   // resident set of the process
};

struct Progress {
  uint64_t iteration = 0, iterations = 0;
  double passes = 0, seconds = 0;
  uint64_t rows = 0, bytes_read = 0;
  uint64_t memory_bytes = 0, memory_budget = 0;
  std::optional<double> test_loglik;  // the latest evaluation's
};

class SampleObserver {
 public:
  virtual ~SampleObserver() = default;
  // Before the first iteration, with every option resolved. A failure stops the run.
  virtual Status on_start(const ResolvedSample& run) { (void)run; return Status::ok(); }
  virtual Status on_draw(const DrawRecord& draw) { (void)draw; return Status::ok(); }
  virtual Status on_eval(const EvalRecord& eval) { (void)eval; return Status::ok(); }
  // The run goes on to stage run.stage, twice as long (docs/samplers.md, "Until mixed"): the
  // draws kept so far are burn-in now, and the kept draws start again. A failure stops the run.
  virtual Status on_stage(const ResolvedSample& run) { (void)run; return Status::ok(); }
  // About twice a second.
  virtual void on_progress(const Progress& progress) { (void)progress; }
  // Called by sample() from the thread that called it, never concurrently.
  // Polled between iterations; true stops the run early (its result is still complete).
  virtual bool stop_requested() { return false; }
  // Checkpoints (docs/reliability.md): at an iteration where every chain is current, the run
  // asks whether to save its state now (burn_in_ended: the first such iteration after
  // burn-in); if so, on_checkpoint gets `save`, which streams the whole state into a file
  // (the CLI: the run directory's `checkpoint`, replaced atomically). A failure stops the run.
  virtual bool checkpoint_due(uint64_t iteration, bool burn_in_ended) {
    (void)iteration, (void)burn_in_ended;
    return false;
  }
  virtual Status on_checkpoint(uint64_t iteration, const std::function<Status(WritableFile&)>& save) {
    (void)iteration, (void)save;
    return Status::ok();
  }
};

// R-hat above this says the chains have not mixed (Vehtari et al. 2021): the sampler's
// count, config.json's verdict and agld summary's all use it.
inline constexpr double kRhatLimit = 1.01;

// The whole-vector diagnostics in a line: the worst coordinates of diagnostics.npy.
struct DiagnosticsSummary {
  uint64_t covered = 0;            // coordinates with diagnostics
  uint64_t finite = 0;             // coordinates with a finite R-hat (covered, or a Rao-Blackwellized mean)
  double max_rhat = 0;             // NaN when none is finite
  uint64_t max_rhat_at = 0;        // 0-based coordinate
  uint64_t rhat_above = 0;         // coordinates with R-hat > kRhatLimit
  double min_ess = 0;              // NaN when none is finite
  uint64_t min_ess_at = 0;
};

// The coordinates whose feature is in [min_rows, max_rows] training rows (the store's per-feature
// statistics), and how their R-hats stand: where a run that has not mixed has not (the rare
// levels of a one-hot field, or the common ones). The intercept is a class of its own
// (min_rows = max_rows = the rows).
struct RowsClass {
  uint64_t min_rows = 0, max_rows = 0;
  bool intercept = false;
  uint64_t coordinates = 0;   // features in that many rows
  uint64_t with_rhat = 0;     // of them with a finite R-hat (covered, or a Rao-Blackwellized mean)
  uint64_t rhat_above = 0;    // R-hat > kRhatLimit
  uint64_t rhat_above_1_1 = 0;
  double max_rhat = std::numeric_limits<double>::quiet_NaN();  // NaN while none is finite
  uint64_t max_rhat_at = 0;   // 0-based coordinate
};

struct SampleResult {
  ResolvedSample run;
  uint64_t draws = 0;          // kept states of each chain
  std::vector<double> mean;    // d: posterior mean of each coordinate over every chain's kept states
  std::vector<double> sd;      // d: posterior sd (0 with fewer than two states)
  // d each: split-R-hat, effective sample size and Monte Carlo standard error of the mean,
  // computed online (docs/samplers.md); NaN for a coordinate not covered or with too few states.
  std::vector<double> rhat, ess, mcse;
  DiagnosticsSummary diagnostics;
  // The R-hats by the rows a coordinate's feature is in: 1, 2-10, 11-100, ... (a class a power
  // of 10, those with some feature), then the intercept's; empty when the store records no
  // per-feature statistics. Coordinates in no row are not in it (prior_exact).
  std::vector<RowsClass> by_rows;
  // With Rao-Blackwellized moments (ResolvedSample::rao_blackwell): the conditional draws they
  // came from (every chain's refreshes after burn-in), and the coordinates whose mean (and
  // mcse) and whose sd posterior.npy takes from them rather than from the kept draws.
  uint64_t rb_samples = 0, rb_means = 0, rb_sds = 0;
  // With the rare coordinates' Gibbs sweep (ResolvedSample::gibbs): its Metropolis steps over
  // the run, every chain's, and how many were accepted.
  uint64_t sweep_proposed = 0, sweep_accepted = 0;
  // Coordinates in no training row (with the store's per-feature statistics and a finite
  // prior): the likelihood does not involve them, so their posterior is the prior exactly;
  // posterior.npy holds its mean 0 and sd sqrt(prior_var) (MCSE 0), diagnostics.npy no R-hat or
  // ESS, and the verdict does not count them.
  uint64_t prior_exact = 0;
  // The kept draws of lp__ (first) and of each tracked coordinate, for exact diagnostics:
  // each chain-major (chain c's draws at [c * draws, (c + 1) * draws)).
  std::vector<std::vector<double>> tracked_draws;
  std::optional<EvalRecord> last_eval;
  double seconds = 0;          // whole run, evaluations included
  bool stopped_early = false;
  // Why the run stopped where it did: its one length, the targets met, or a cap (then it
  // has not mixed). With until_mixed, each stage's verdict, in order.
  std::string stop_reason;
  std::vector<std::string> stage_verdicts;
};

// Fills every default of options against the training store and checks the combination.
// The memory check is here too: a budget too small for the method is invalid_argument
// with the amount needed.
Status resolve_sample(const Store& train, const Store* test, const SampleOptions& options,
                      ResolvedSample* out);

// Runs the sampler. test may be null (no test metrics). A non-finite state stops the run
// with invalid_argument suggesting a smaller step.
Status sample(const Store& train, const Store* test, const SampleOptions& options,
              SampleObserver& observer, SampleResult* out);

}  // namespace agld
