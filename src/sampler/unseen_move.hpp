// The exact move along the directions no row can see (ALGORITHMS.md section 8). When every
// row holds exactly one feature of each complete one-hot field (StoreMeta::fields) and the
// model has an intercept, adding t to every level of a field and taking t from the intercept
// changes no margin x_i . theta; without an intercept, so does moving one field against
// another. The likelihood is constant along these directions V and the prior N(0, s2p I) is
// isotropic, so given theta's component off V, the component along V is the prior's,
// exactly. The move draws it anew: a Gibbs step that leaves the posterior invariant and that
// no dynamics needs to mix along V for. The chains crawl along V otherwise (criteo's 26
// fields: R-hat 687 for the intercept after the default run).
//
// V's directions are constant on groups of coordinates (the fields, and the intercept): a
// direction is a vector c over the groups, sum_g c_g 1_g. With S_g = sum_{j in g} theta_j and
// the Gram matrix G = C diag(|g|) C', theta's position along V is fixed by C S, and the move
// is theta += C' s with s ~ N(-G^-1 C S, s2p G^-1): O(d) to sum and to add, O(m^3) for the
// m x m Gram matrix once. Internal to the sampler layer.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "agld/sample.hpp"
#include "agld/store.hpp"
#include "common/strided_span.hpp"

namespace agld::sampler {

// --unseen: the run's unseen_directions, unseen_fields and unseen_rule from the store's fields,
// the intercept and the prior; an unknown value is invalid_argument.
Status resolve_unseen(const Store& train, ResolvedSample* r);

class UnseenMove {
 public:
  // The move for a run of d coordinates (the intercept last, if `intercept`) on a store with
  // these fields, under the prior N(0, prior_var I). Empty when there is no direction to move
  // along (no field; one field and no intercept) or the prior is flat (the posterior is then
  // improper along V: nothing to draw).
  static std::optional<UnseenMove> make(std::span<const FeatureField> fields, bool intercept, uint64_t dim,
                                        double prior_var);

  // The directions: m.
  size_t directions() const { return static_cast<size_t>(coef_.rows()); }

  // theta's component along V drawn anew; normal() gives standard normals (m of them; all 0
  // sets it to its mean, 0: the mode along V, as agld optimize's noiseless chain does). Every
  // coordinate of a group must be current. Returns the change of |theta|^2.
  template <class Normal>
  double apply(StridedSpan<double> theta, Normal&& normal) const {
    const Eigen::VectorXd sums = group_sums(theta);
    Eigen::VectorXd z(directions());
    for (Eigen::Index i = 0; i < z.size(); ++i) z[i] = normal();
    const Eigen::VectorXd delta = shift(sums, z);
    add_to_groups(theta, delta);
    double change = 0;  // sum_g (2 delta_g S_g + |g| delta_g^2)
    for (size_t g = 0; g < groups_.size(); ++g) {
      const auto i = static_cast<Eigen::Index>(g);
      change += delta[i] * (2 * sums[i] + static_cast<double>(groups_[g].count) * delta[i]);
    }
    return change;
  }

 private:
  struct Group {
    uint64_t first = 0, count = 0;
  };
  Eigen::VectorXd group_sums(StridedSpan<const double> theta) const;
  // The change of each group's coordinates: C' s, s = -G^-1 C S + sqrt(s2p) L'^-1 z.
  Eigen::VectorXd shift(const Eigen::VectorXd& sums, const Eigen::VectorXd& z) const;
  void add_to_groups(StridedSpan<double> theta, const Eigen::VectorXd& delta) const;

  std::vector<Group> groups_;
  Eigen::MatrixXd coef_;          // m x groups: the directions
  Eigen::LLT<Eigen::MatrixXd> gram_;  // G = C diag(|g|) C' = L L'
  double prior_sd_ = 1;
};

}  // namespace agld::sampler
