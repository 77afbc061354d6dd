// --method: a snapshot strategy, an access order and a dynamics, SNAPSHOT-ACCESS[-DYNAMICS]
// (ld when not given), or a paper's name for one (ALGORITHMS.md sections 2 and 3). The list
// sample_methods() is built from the registries.
#include "sampler/method.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

#include "agld/reader.hpp"
#include "agld/sample.hpp"
#include "model/model.hpp"
#include "sampler/dynamics.hpp"
#include "sampler/snapshot.hpp"

namespace agld {
namespace {

const std::pair<std::string_view, std::string_view> kAliases[] = {
    {"lmc", "full-ca"},       {"sgld", "none-ra"},      {"svrg-ld", "ptu-ra"},
    {"saga-ld", "ppu-ra"},    {"svrg-ld+", "ptu+-ra"},  {"svrg-rr+", "ptu+-rr"},
    {"svrg-ca+", "ptu+-ca"},    {"sghmc", "none-ra-hmc"}, {"svrg-hmc", "ptu-ra-hmc"},
    {"saga-hmc", "ppu-ra-hmc"}, {"svrg2nd-hmc", "ptu-ra-hmc2"}, {"saga2nd-hmc", "ppu-ra-hmc2"},
    {"svr-hmc", "ptu-ra-svrhmc"},
};

template <class List, class Name>
std::string known_names(const List& list, Name name) {
  std::string known;
  for (const auto& e : list) known += (known.empty() ? "" : ", ") + std::string(name(e));
  return known;
}

}  // namespace

namespace sampler {

Status split_method(const std::string& method, std::string* snapshot, std::string* access, std::string* dynamics) {
  std::string name = method;
  for (const auto& [alias, means] : kAliases) {
    if (alias == name) name = std::string(means);
  }
  std::vector<std::string> parts;
  for (size_t from = 0;;) {
    const size_t dash = name.find('-', from);
    parts.push_back(name.substr(from, dash == std::string::npos ? std::string::npos : dash - from));
    if (dash == std::string::npos) break;
    from = dash + 1;
  }
  if (parts.size() < 2 || parts.size() > 3) {
    return Status::invalid_argument("unknown --method '" + method +
                                    "' (expected SNAPSHOT-ACCESS[-DYNAMICS], e.g. tmu-ca or ptu-ra-hmc2, or an alias such as sgld)");
  }
  *snapshot = parts[0];
  *access = parts[1];
  *dynamics = parts.size() == 3 ? parts[2] : std::string(default_dynamics().name);
  if (!find_snapshot(*snapshot)) {
    return Status::invalid_argument("unknown snapshot strategy '" + *snapshot + "' in --method " + method + " (known: " +
                                    known_names(registered_snapshots(), [](const SnapshotInfo& s) { return s.name; }) + ")");
  }
  const auto orders = reader_orders();
  if (std::none_of(orders.begin(), orders.end(), [&](const ReaderOrderInfo& o) { return o.name == *access; })) {
    return Status::invalid_argument("unknown access order '" + *access + "' in --method " + method + " (known: " +
                                    known_names(orders, [](const ReaderOrderInfo& o) { return o.name; }) + ")");
  }
  if (!find_dynamics(*dynamics)) {
    return Status::invalid_argument("unknown dynamics '" + *dynamics + "' in --method " + method + " (known: " +
                                    known_names(registered_dynamics(), [](const DynamicsInfo& d) { return d.name; }) + ")");
  }
  return Status::ok();
}

}  // namespace sampler

std::vector<MethodInfo> sample_methods() {
  std::vector<MethodInfo> out;
  for (const auto& d : sampler::registered_dynamics()) {
    for (const auto& s : sampler::registered_snapshots()) {
      for (const auto& o : reader_orders()) {
        std::string name(s.name);
        name += '-';
        name += o.name;
        if (&d != &sampler::default_dynamics()) {
          name += '-';
          name += d.name;
        }
        out.push_back({name, "", std::string(s.summary) + "; " + o.summary + "; " + std::string(d.summary),
                       std::string(d.name), std::string(s.name), o.name});
      }
    }
  }
  for (const auto& [alias, means] : kAliases) {
    std::string snapshot, access, dynamics;
    (void)sampler::split_method(std::string(means), &snapshot, &access, &dynamics);
    out.push_back({std::string(alias), std::string(means), "", dynamics, snapshot, access});
  }
  return out;
}

std::vector<std::string> sample_models() {
  std::vector<std::string> out;
  for (const auto& m : model::registered_models()) out.emplace_back(m.name);
  return out;
}

}  // namespace agld
