// --method: a snapshot strategy and an access order, SNAPSHOT-ACCESS, or a paper's name for
// one (ALGORITHMS.md section 2). The list sample_methods() is built from the registries.
#include "sampler/method.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "model/model.hpp"
#include "sampler/snapshot.hpp"

namespace agld {
namespace {

const std::pair<std::string_view, std::string_view> kAliases[] = {
    {"lmc", "full-ca"},       {"sgld", "none-ra"},      {"svrg-ld", "ptu-ra"},
    {"saga-ld", "ppu-ra"},    {"svrg-ld+", "ptu+-ra"},  {"svrg-rr+", "ptu+-rr"},
    {"svrg-ca+", "ptu+-ca"},
};

}  // namespace

namespace sampler {

Status split_method(const std::string& method, std::string* snapshot, std::string* access) {
  std::string name = method;
  for (const auto& [alias, means] : kAliases) {
    if (alias == name) name = std::string(means);
  }
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos) {
    return Status::invalid_argument("unknown --method '" + method + "' (expected SNAPSHOT-ACCESS, e.g. tmu-ca, or an alias such as sgld)");
  }
  *snapshot = name.substr(0, dash);
  *access = name.substr(dash + 1);
  if (!find_snapshot(*snapshot)) {
    std::string known;
    for (const auto& s : registered_snapshots()) known += std::string(known.empty() ? "" : ", ") + std::string(s.name);
    return Status::invalid_argument("unknown snapshot strategy '" + *snapshot + "' in --method " + method + " (known: " + known + ")");
  }
  const auto orders = reader_orders();
  if (std::none_of(orders.begin(), orders.end(), [&](const ReaderOrderInfo& o) { return o.name == *access; })) {
    std::string known;
    for (const auto& o : orders) known += (known.empty() ? "" : ", ") + o.name;
    return Status::invalid_argument("unknown access order '" + *access + "' in --method " + method + " (known: " + known + ")");
  }
  return Status::ok();
}

}  // namespace sampler

std::vector<MethodInfo> sample_methods() {
  std::vector<MethodInfo> out;
  for (const auto& s : sampler::registered_snapshots()) {
    for (const auto& o : reader_orders()) {
      out.push_back({std::string(s.name) + "-" + o.name, "", std::string(s.summary) + "; " + o.summary});
    }
  }
  for (const auto& [alias, means] : kAliases) out.push_back({std::string(alias), std::string(means), ""});
  return out;
}

std::vector<std::string> sample_models() {
  std::vector<std::string> out;
  for (const auto& m : model::registered_models()) out.emplace_back(m.name);
  return out;
}

}  // namespace agld
