// The table of dynamics. Adding one: its step factory's declaration and one line.
#include "sampler/dynamics.hpp"

#include <cmath>

#include "common/registry.hpp"

namespace agld::sampler {

GaussianStep ld_step(const DynamicsParams&);
GaussianStep hmc_step(const DynamicsParams&);
GaussianStep hmc2_step(const DynamicsParams&);
GaussianStep svrhmc_step(const DynamicsParams&);
double hmc2_eval_shift(const DynamicsParams&);

namespace {
// The first is the default (a method that names no dynamics).
constexpr DynamicsInfo kDynamics[] = {
    {"ld", "overdamped Langevin (AGLD eq. 5)", 1, ld_step},
    {"hmc", "underdamped, Euler (SGHMC; Li et al. Alg. 1/2)", 2, hmc_step},
    {"hmc2", "underdamped, symmetric splitting, G at the midpoint (Li et al. Alg. 3/4)", 2,
     hmc2_step, hmc2_eval_shift},
    {"svrhmc", "underdamped, exact Ornstein-Uhlenbeck noise (Zou, Xu and Gu 2018)", 2, svrhmc_step},
};
}  // namespace

std::span<const DynamicsInfo> registered_dynamics() { return kDynamics; }

const DynamicsInfo* find_dynamics(std::string_view name) {
  return find_by_name<DynamicsInfo>(kDynamics, name);
}

const DynamicsInfo& default_dynamics() { return kDynamics[0]; }

double inverse_prior_var(double prior_var) { return std::isinf(prior_var) ? 0.0 : 1.0 / prior_var; }

}  // namespace agld::sampler
