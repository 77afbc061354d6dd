// The exact move along the directions no row can see (sampler/unseen_move.hpp).
#include "sampler/unseen_move.hpp"

#include <cmath>

namespace agld::sampler {

Status resolve_unseen(const Store& train, ResolvedSample* r) {
  const SampleOptions& o = r->given;
  const std::vector<FeatureField>& fields = train.meta().fields;
  r->unseen_directions = r->unseen_fields = 0;
  if (o.unseen != "auto" && o.unseen != "off") {
    return Status::invalid_argument("--unseen must be auto or off, got '" + o.unseen + "'");
  }
  if (o.unseen == "off") {
    r->unseen_rule = "off (--unseen off)";
  } else if (fields.empty()) {
    r->unseen_rule = "none: the store lists no complete one-hot field (agld info)";
  } else if (!std::isfinite(o.prior_var)) {
    r->unseen_rule = "none: under a flat prior the posterior is improper along the fields' directions";
  } else if (const auto move = UnseenMove::make(fields, o.intercept, r->dim, o.prior_var)) {
    r->unseen_directions = move->directions();
    r->unseen_fields = fields.size();
    r->unseen_rule = std::to_string(fields.size()) + " complete one-hot field" + (fields.size() > 1 ? "s" : "") +
                     (o.intercept ? " beside the intercept" : " against each other") +
                     ": drawn exactly at each refresh";
  } else {
    r->unseen_rule = "none: one complete one-hot field and no --intercept";
  }
  return Status::ok();
}

std::optional<UnseenMove> UnseenMove::make(std::span<const FeatureField> fields, bool intercept, uint64_t dim,
                                           double prior_var) {
  const size_t m = fields.size();
  if (!std::isfinite(prior_var) || m == 0 || (m == 1 && !intercept)) return std::nullopt;
  UnseenMove u;
  for (const FeatureField& f : fields) u.groups_.push_back({f.first, f.count});
  // Beside the intercept: field i against the intercept (m directions); without: field i
  // against the last field (m - 1). Either spans every direction constant on the groups
  // that no row sees: sum_g t_g over a row's groups is 0 for every row.
  if (intercept) u.groups_.push_back({dim - 1, 1});
  const size_t n = intercept ? m : m - 1, last = u.groups_.size() - 1;
  u.coef_ = Eigen::MatrixXd::Zero(static_cast<Eigen::Index>(n), static_cast<Eigen::Index>(u.groups_.size()));
  for (size_t i = 0; i < n; ++i) {
    u.coef_(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(i)) = 1;
    u.coef_(static_cast<Eigen::Index>(i), static_cast<Eigen::Index>(last)) = -1;
  }
  Eigen::VectorXd sizes(static_cast<Eigen::Index>(u.groups_.size()));
  for (size_t g = 0; g < u.groups_.size(); ++g) sizes[static_cast<Eigen::Index>(g)] = static_cast<double>(u.groups_[g].count);
  u.gram_.compute(u.coef_ * sizes.asDiagonal() * u.coef_.transpose());
  u.prior_sd_ = std::sqrt(prior_var);
  return u;
}

Eigen::VectorXd UnseenMove::group_sums(StridedSpan<const double> theta) const {
  Eigen::VectorXd s(static_cast<Eigen::Index>(groups_.size()));
  for (size_t g = 0; g < groups_.size(); ++g) {
    double sum = 0;
    for (uint64_t j = groups_[g].first; j < groups_[g].first + groups_[g].count; ++j) sum += theta[j];
    s[static_cast<Eigen::Index>(g)] = sum;
  }
  return s;
}

Eigen::VectorXd UnseenMove::shift(const Eigen::VectorXd& sums, const Eigen::VectorXd& z) const {
  // s = -G^-1 (C S) + sqrt(s2p) L'^-1 z: mean -G^-1 C S (theta + C's then has C S' = 0, no
  // component along V), covariance s2p G^-1.
  Eigen::VectorXd s = -gram_.solve(coef_ * sums);
  s += prior_sd_ * gram_.matrixU().solve(z);
  return coef_.transpose() * s;
}

void UnseenMove::add_to_groups(StridedSpan<double> theta, const Eigen::VectorXd& delta) const {
  for (size_t g = 0; g < groups_.size(); ++g) {
    const double d = delta[static_cast<Eigen::Index>(g)];
    for (uint64_t j = groups_[g].first; j < groups_[g].first + groups_[g].count; ++j) theta[j] += d;
  }
}

}  // namespace agld::sampler
