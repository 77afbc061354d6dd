#include "sampler/intercept.hpp"

namespace agld::sampler {

const Batch& Intercept::operator()(const Batch& b) {
  if (!on_) return b;
  offsets_.resize(b.size() + 1);
  indices_.clear();
  values_.clear();
  offsets_[0] = 0;
  for (size_t i = 0; i < b.size(); ++i) {
    const auto idx = b.row_indices(i);
    const auto val = b.row_values(i);
    indices_.insert(indices_.end(), idx.begin(), idx.end());
    values_.insert(values_.end(), val.begin(), val.end());
    indices_.push_back(j_);
    values_.push_back(1.0f);
    offsets_[i + 1] = indices_.size();
  }
  views_.clear();
  append_row_views(offsets_, indices_.data(), values_.data(), &views_);
  out_ = Batch{b.row_ids, b.labels, views_};
  return out_;
}

}  // namespace agld::sampler
