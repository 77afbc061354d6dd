// The options of `agld sample` (include/agld/options.hpp): one line each, in the order of
// `agld sample --help`. Their defaults are SampleOptions' initializers; docs/samplers.md says
// how the unset ones are resolved.
#include "agld/options.hpp"

namespace agld {
namespace {

using S = SampleOptions;
using F = OptionField<SampleOptions>;

constexpr F kSampleOptions[] = {
    {.key = "model",
     .member = &S::model,
     .help = "the GLM"},
    {.key = "method",
     .member = &S::method,
     .help = "SNAPSHOT-ACCESS[-DYNAMICS] (e.g. tmu-ca, ptu-ra-hmc2; the first dynamics "
             "listed below when none is named) or an alias (a paper's name). Default ptu-ca; on a store "
             "converted with --keep-order, ptu-rr (docs/samplers.md)"},
    {.key = "step",
     .member = &S::step,
     .help = "the dynamics' step size, eta or h (docs/samplers.md, \"Dynamics\"; default: from the store's "
             "statistics and a sample of rows, h the square root of ld's; under diag in M's "
             "metric; see docs/samplers.md)"},
    {.key = "friction",
     .member = &S::friction,
     .help = "the underdamped dynamics' friction, D_f or gamma (default "
             "1/h, where the gradient noise heats the chain as ld's does; lower keeps more "
             "momentum and more noise: docs/samplers.md, \"Dynamics\")"},
    {.key = "precondition",
     .member = &S::precondition,
     .help = "diag: a diagonal preconditioner from the store's per-feature statistics (--step is "
             "then in its metric); none"},
    {.key = "metric",
     .member = &S::metric,
     .help = "the metric M under diag (default auto): diag (a diagonal from the statistics); block (a dense K x K block "
             "on the intercept and the most frequent features, K^2 at most batch x nonzeros a row, "
             "diagonal elsewhere); dense (every coordinate, d <= 4096); auto (block, dense when K "
             "reaches d); or a .npy: d x 2 with a standard deviation per coordinate in column 1 (a run's "
             "posterior.npy; M_j = sd_j^2, capped by what one row brings to a minibatch) or d x d, M "
             "itself (docs/samplers.md, \"A dense metric\")"},
    {.key = "init",
     .member = &S::init,
     .help = "start the chains around column 0 of a .npy of a row per coordinate (agld optimize's "
             "mode.npy, a run's posterior.npy), spread by its column 1 if it has one, else by the "
             "prior's sd"},
    {.key = "rao_blackwell",
     .member = &S::rao_blackwell,
     .help = "auto: posterior.npy takes a coordinate's mean and sd from its conditional given "
             "the others at the refreshes (ptu and tmu; every coordinate's under the linear model, "
             "by quadrature under the logistic for the coordinates in fewer rows than a pass has "
             "iterations, 64 to 1,024) where their "
             "Monte Carlo error is the smaller; off: from the kept draws alone (docs/samplers.md, "
             "\"Rao-Blackwellized moments\")"},
    {.key = "gibbs",
     .member = &S::gibbs,
     .help = "auto: at each refresh, each coordinate whose conditional --rao-blackwell computes by "
             "quadrature (the logistic model's, in few rows) takes an exact Metropolis step on "
             "that conditional, in turn (a Gibbs sweep), and the refresh is taken again at the moved "
             "state (a pass, counted); off: they move by the dynamics alone (docs/samplers.md)"},
    {.key = "unseen",
     .member = &S::unseen,
     .help = "auto: draw the posterior along the directions no row can see (the store's complete "
             "one-hot fields beside the intercept; agld info lists them) exactly, at each "
             "refresh; off: leave them to the dynamics (docs/samplers.md)"},
    {.key = "noise_correction",
     .member = &S::noise_correction,
     .help = "auto: take the minibatch gradient's estimated noise out of the injected noise, per "
             "level of M and on the dense block (at most 3/4 of it); off: the dynamics' noise as "
             "specified (docs/samplers.md, \"Gradient noise\")"},
    {.key = "batch",
     .member = &S::batch,
     .help = "rows a minibatch (default min(N, max(100, N/1000)): at most 1000 iterations a pass)"},
    {.key = "chains",
     .member = &S::chains,
     .help = "chains in the run, from dispersed starts"},
    {.key = "chain_id",
     .member = &S::chain_id,
     .help = "the first chain's id (chains are ID ... ID+K-1; a chain is the same in any run with "
             "its id and seed)"},
    {.key = "share_batches",
     .member = &S::share_batches,
     .help = "random orders: every chain reads the same batches (less I/O, chains no longer "
             "independent given the data)",
     .kind = OptionKind::kFlag},
    {.key = "threads",
     .member = &S::threads,
     .help = "threads the chains run on (0, the default: every core; the draws do not depend on "
             "it)",
     .resumable = true},
    {.key = "epochs",
     .member = &S::epochs,
     .help = "run length of each chain in passes of minibatches (default: 20 passes of the data, "
             "refreshes included; see docs/samplers.md)"},
    {.key = "iterations",
     .member = &S::iterations,
     .help = "run length of each chain in iterations"},
    {.key = "burn_in",
     .member = &S::burn_in,
     .help = "iterations of each chain before states are kept (default half the run)"},
    {.key = "thin",
     .member = &S::thin,
     .help = "keep every T-th state (default: 4 d / nnz of a batch, at most what keeps 100 states "
             "a chain)"},
    {.key = "refresh",
     .member = &S::refresh,
     .help = "iterations between snapshot refreshes (default one pass)"},
    {.key = "snapshot_batch",
     .member = &S::snapshot_batch,
     .help = "ptu+: rows of a refresh (default max(batch, N/10))"},
    {.key = "time_limit",
     .member = &S::time_limit,
     .help = "stop after this many seconds of sampling (outputs complete, as with SIGINT)",
     .resumable = true},
    {.key = "until_mixed",
     .member = &S::until_mixed,
     .help = "on: run the length, then double it (keeping each stage's second half) until every "
             "coordinate's R-hat is at most --target-rhat and its ESS at least --target-ess, or the "
             "next stage would pass --max-passes or --time-limit; off: the length once; auto (the "
             "default): on unless --iterations, --epochs, --burn-in or --thin is given "
             "(docs/samplers.md, \"Until mixed\")"},
    {.key = "target_rhat",
     .member = &S::target_rhat,
     .help = "--until-mixed: the largest R-hat of a mixed run"},
    {.key = "target_ess",
     .member = &S::target_ess,
     .help = "--until-mixed: the smallest ESS of a mixed run (0: R-hat alone)"},
    {.key = "max_passes",
     .member = &S::max_passes,
     .help = "--until-mixed: no stage that would read more passes of the data than this (default "
             "4 times the first stage's)",
     .resumable = true},
    {.key = "evaluations",
     .member = &S::evaluations,
     .help = "test evaluations (rows of metrics.csv) over the run"},
    {.key = "memory",
     .member = &S::memory,
     .help = "memory budget of the whole process",
     .kind = OptionKind::kSize},
    {.key = "seed",
     .member = &S::seed,
     .help = "seed of the chains and of their access orders"},
    {.key = "track",
     .member = &S::track,
     .help = "the coordinates of the draws files, 0-based (--track gives them as 1-based feature "
             "numbers)",
     .flag = false},
    {.key = "track_default",
     .member = &S::track_default,
     .help = "the draws files track the default coordinates (no --track)",
     .kind = OptionKind::kFlag,
     .flag = false},
    {.key = "noise_var",
     .member = &S::noise_var,
     .help = "linear model: the noise variance"},
    {.key = "prior_var",
     .member = &S::prior_var,
     .help = "prior variance of every coordinate"},
    {.key = "intercept",
     .member = &S::intercept,
     .help = "append a constant feature (the last coordinate)",
     .kind = OptionKind::kFlag},
    {.key = "dense",
     .member = &S::dense,
     .help = "update every coordinate every step (no lazy updates; for tests)",
     .kind = OptionKind::kFlag},
};

}  // namespace

std::span<const OptionField<SampleOptions>> sample_option_fields() { return kSampleOptions; }

}  // namespace agld
