// The options of `agld optimize` (include/agld/options.hpp): one line each, in the order of
// `agld optimize --help`. Their defaults are OptimizeOptions' initializers.
#include "agld/options.hpp"

namespace agld {
namespace {

using OO = OptimizeOptions;
using OF = OptionField<OptimizeOptions>;

constexpr OF kOptimizeOptions[] = {
    {.key = "model",
     .member = &OO::model,
     .help = "the GLM"},
    {.key = "precondition",
     .member = &OO::precondition,
     .help = "diag: the sampler's diagonal preconditioner (--step is then in its metric); none"},
    {.key = "step",
     .member = &OO::step,
     .help = "step size eta (default: the sampler's, from the store; see docs/samplers.md)"},
    {.key = "batch",
     .member = &OO::batch,
     .help = "rows a minibatch (default min(100, max(1, N/100)): at least 100 steps an epoch)"},
    {.key = "access",
     .member = &OO::access,
     .help = "the minibatches' access order"},
    {.key = "epochs",
     .member = &OO::epochs,
     .help = "at most this many epochs (a full-gradient pass and a pass of minibatches each)"},
    {.key = "tol",
     .member = &OO::tol,
     .help = "stop when the gradient's norm in M's metric is below this fraction of the start's"},
    {.key = "memory",
     .member = &OO::memory,
     .help = "memory budget of the whole process",
     .kind = OptionKind::kSize},
    {.key = "seed",
     .member = &OO::seed,
     .help = "seed of the preconditioner's sample and of random orders"},
    {.key = "noise_var",
     .member = &OO::noise_var,
     .help = "linear model: the noise variance"},
    {.key = "prior_var",
     .member = &OO::prior_var,
     .help = "prior variance of every coordinate"},
    {.key = "intercept",
     .member = &OO::intercept,
     .help = "append a constant feature (the last coordinate)",
     .kind = OptionKind::kFlag},
};

}  // namespace

std::span<const OptionField<OptimizeOptions>> optimize_option_fields() { return kOptimizeOptions; }

}  // namespace agld
