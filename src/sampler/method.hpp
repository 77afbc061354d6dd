// --method: SNAPSHOT-ACCESS or a paper name. Internal to the sampler layer.
#pragma once

#include <string>

#include "agld/status.hpp"

namespace agld::sampler {

// Splits a method (an alias resolved first) into its snapshot strategy and access order,
// both checked against their registries.
Status split_method(const std::string& method, std::string* snapshot, std::string* access);

}  // namespace agld::sampler
