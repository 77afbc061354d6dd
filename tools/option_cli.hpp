// A command's flags from its option table (include/agld/options.hpp), and the resume merge:
// the CLI handles no option of sample or optimize by name.
#pragma once

#include <CLI/CLI.hpp>
#include <span>
#include <string>
#include <type_traits>
#include <variant>

#include "agld/options.hpp"
#include "cli_common.hpp"

namespace agld::cli {

// Adds a flag for every field of `fields` given on the command line, writing into *target;
// the help shows each default (target's value now) and, for --method, the papers' names.
template <class O>
void add_option_flags(CLI::App* app, O* target, std::span<const OptionField<O>> fields,
                      const std::string& method_aliases = {}) {
  for (const OptionField<O>& f : fields) {
    if (!f.flag) continue;
    const std::string flag = option_flag(f.key);
    std::string help(f.help);
    if (f.key == "method" && !method_aliases.empty()) help += "; aliases: " + method_aliases;
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
