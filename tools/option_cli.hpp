// A command's flags from its option table (include/agld/options.hpp), and the resume merge:
// the CLI handles no option of sample or optimize by name.
#pragma once

#include <CLI/CLI.hpp>
#include <algorithm>
#include <map>
#include <span>
#include <string>
#include <type_traits>
#include <variant>
#include <vector>

#include "agld/options.hpp"
#include "agld/sample.hpp"
#include "cli_common.hpp"

namespace agld::cli {

// Adds a flag for every field of `fields` given on the command line, writing into *target;
// the help shows each default (target's value now) and, after a key's own help, its text in
// `help_tails` (what the registries hold: the models, the methods' parts).
template <class O>
void add_option_flags(CLI::App* app, O* target, std::span<const OptionField<O>> fields,
                      const std::map<std::string_view, std::string>& help_tails = {}) {
  for (const OptionField<O>& f : fields) {
    if (!f.flag) continue;
    const std::string flag = option_flag(f.key);
    std::string help(f.help);
    if (auto t = help_tails.find(f.key); t != help_tails.end()) help += ". " + t->second;
    std::visit(
        [&](auto member) {
          using T = std::remove_cvref_t<decltype(target->*member)>;
          if constexpr (std::is_same_v<T, bool>) {
            app->add_flag(flag, target->*member, help);
          } else if constexpr (std::is_same_v<T, uint64_t>) {
            if (f.kind == OptionKind::kSize) {
              app->add_option_function<std::string>(
                     flag, [target, member](const std::string& v) { target->*member = parse_size(v); }, help)
                  ->check(size_validator())
                  ->default_str(size_text(target->*member));
            } else {
              app->add_option(flag, target->*member, help)->capture_default_str();
            }
          } else if constexpr (std::is_same_v<T, std::vector<uint64_t>>) {
            app->add_option(flag, target->*member, help)->delimiter(',');
          } else if constexpr (requires { typename T::value_type; } && !std::is_same_v<T, std::string>) {
            app->add_option(flag, target->*member, help);  // an optional: its default is resolved
          } else {
            app->add_option(flag, target->*member, help)->capture_default_str();
          }
        },
        f.member);
  }
}

// What the registries hold, for the help of the options that name a unit: --model's models,
// --method's snapshot strategies, access orders, dynamics and aliases, --access's orders.
inline std::map<std::string_view, std::string> unit_help_tails() {
  auto add = [](std::vector<std::string>& list, const std::string& name) {
    if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
  };
  auto join = [](const std::vector<std::string>& list, std::string_view sep) {
    std::string out;
    for (const std::string& s : list) out += (out.empty() ? "" : std::string(sep)) + s;
    return out;
  };
  std::vector<std::string> snapshots, orders, dynamics, aliases;
  for (const MethodInfo& m : sample_methods()) {
    if (!m.means.empty()) {
      aliases.push_back(m.name + " = " + m.means);
      continue;
    }
    add(snapshots, m.snapshot);
    add(orders, m.access);
    add(dynamics, m.dynamics);
  }
  return {
      {"model", "One of " + join(sample_models(), ", ")},
      {"method", "Snapshots " + join(snapshots, "|") + "; access " + join(orders, "|") + "; dynamics " +
                     join(dynamics, "|") + "; aliases: " + join(aliases, ", ")},
      {"access", "One of " + join(orders, ", ")},
  };
}

// A resumed run's options: the checkpoint's (*into), with each option given on the command
// line (app) taken from `given` instead. Whether a given one may differ from the checkpoint's
// is for the resume to check (only the resumable ones may).
template <class O>
void take_given_options(const CLI::App& app, const O& given, std::span<const OptionField<O>> fields, O* into) {
  for (const OptionField<O>& f : fields) {
    if (!f.flag || app.count(option_flag(f.key)) == 0) continue;
    std::visit([&](auto member) { into->*member = given.*member; }, f.member);
  }
}

}  // namespace agld::cli
