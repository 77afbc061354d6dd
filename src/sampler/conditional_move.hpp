// One Metropolis-Hastings step on a coordinate's conditional given all the others (the rare
// coordinates' Gibbs sweep at a refresh: sampler/rare_rows.hpp; docs/samplers.md, "Moves on the
// rare coordinates"). The conditional is exp(-U(t)), U(t) = t^2 / (2 s2p) + sum over the
// coordinate's rows of l(y_i, o_i + x_ij t) (sampler/conditional_quadrature.hpp), and the
// proposal is independent of the current value: a Gaussian at the conditional's own mean with
// kWiden times its sd, from its quadrature moments. The step leaves the conditional invariant
// whatever the proposal, and the moments make it nearly the conditional itself: the value after
// it is nearly an independent draw. Internal to the sampler layer.
#pragma once

#include <cstdint>
#include <span>

#include "model/model.hpp"
#include "sampler/conditional_quadrature.hpp"
#include "sampler/lazy_state.hpp"

namespace agld::sampler {

struct ConditionalStep {
  double value;   // the coordinate after the step
  bool accepted;  // whether the proposal was taken
};

// From `current`, with the conditional's moments m (finite, var > 0) and the chain's noise.
ConditionalStep conditional_move(std::span<const ConditionalRow> rows, const model::Model& model, double inv_prior_var,
                                 double current, const ConditionalMoments& m, Noise& noise);

}  // namespace agld::sampler
