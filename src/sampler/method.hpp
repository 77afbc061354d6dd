// --method: SNAPSHOT-ACCESS[-DYNAMICS] or a paper name. Internal to the sampler layer.
#pragma once

#include <string>

#include "agld/status.hpp"

namespace agld::sampler {

// Splits a method (an alias resolved first), SNAPSHOT-ACCESS[-DYNAMICS], into its snapshot
// strategy, access order and dynamics (ld when not given), each checked against its registry.
Status split_method(const std::string& method, std::string* snapshot, std::string* access, std::string* dynamics);

}  // namespace agld::sampler
